"""A grade's Prefect artifacts, posted at the end of its flow run or, for a caller that waits on the grade (a
``RepoEnv`` reward), off its critical path.

A grade's flow run publishes two artifacts (its components' table and a markdown summary). Posted in the flow,
they cost two requests to the API (25-35 ms each on a local server under load) before the grade returns. Inside
:func:`deferred_artifacts` they are handed to one background thread of the process instead, which posts them
in the order given, each under the settings the flow run had (its API), through a client of the thread's own;
the grade returns without waiting. :func:`flush_artifacts` waits until every one handed over is posted:
``RepoEnv.close`` calls it, and so does the interpreter at exit, so none is lost to a process that ends
normally. A post that fails is logged as a warning (the grade stands, recorded in the flow run's state), as one
made in the flow would fail the run instead.
"""

from __future__ import annotations

import atexit
import contextvars
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import structlog
from prefect.client.schemas.actions import ArtifactCreate
from prefect.context import SettingsContext, get_settings_context

from gradeflow.tasks.clients import sync_client

__all__ = ["deferred_artifacts", "flush_artifacts", "post_artifacts"]

_deferring: contextvars.ContextVar[bool] = contextvars.ContextVar("gradeflow_deferred_artifacts", default=False)
_lock = threading.Lock()
_queue: queue.Queue[tuple[SettingsContext, list[ArtifactCreate]]] = queue.Queue()
_thread: threading.Thread | None = None
log = structlog.get_logger("gradeflow.artifacts")


@contextmanager
def deferred_artifacts() -> Iterator[None]:
    """Grades run inside post their artifacts from the background thread (see the module's docstring)."""
    token = _deferring.set(True)
    try:
        yield
    finally:
        _deferring.reset(token)


def post_artifacts(artifacts: list[ArtifactCreate]) -> None:
    """Post ``artifacts`` now, through one client, or hand them to the background thread when deferred."""
    if not _deferring.get():
        _post(artifacts)
        return
    global _thread
    with _lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_publish, daemon=True, name="gradeflow-artifacts")
            _thread.start()
    # The settings, not the flow run's whole context: that holds the run's client, closed when the run ends.
    _queue.put((get_settings_context(), artifacts))


def flush_artifacts(timeout: float = 60.0) -> bool:
    """Wait until every artifact handed to the background thread is posted (or failed); false on timeout."""
    deadline = time.monotonic() + timeout
    with _queue.all_tasks_done:
        while _queue.unfinished_tasks:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _queue.all_tasks_done.wait(left)
    return True


def _post(artifacts: list[ArtifactCreate]) -> None:
    with sync_client() as client:
        for artifact in artifacts:
            client.create_artifact(artifact=artifact)


def _publish() -> None:
    while True:
        settings, artifacts = _queue.get()
        try:
            with SettingsContext(profile=settings.profile, settings=settings.settings):
                _post(artifacts)
        except Exception as exc:  # a lost artifact must not end the thread: the grade itself is recorded
            log.warning("artifacts not posted", keys=[a.key for a in artifacts], error=type(exc).__name__)
        finally:
            _queue.task_done()


atexit.register(flush_artifacts)
