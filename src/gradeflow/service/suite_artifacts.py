"""The artifacts of a served suite evaluation: a progress bar that moves as grades land in the ledger,
and a link to the HTML report once the evaluation is done.

Progress is read from the ledger (the suite's ``(content_key, run_id)`` keys already recorded), every
few seconds, by a thread that carries the flow run's context; so it counts what is durably recorded,
whichever thread, process or Dask worker recorded it.
"""

from __future__ import annotations

import contextvars
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from uuid import UUID

from prefect.artifacts import create_link_artifact, create_progress_artifact, update_progress_artifact

from gradeflow.evaluation.ledger import Ledger

__all__ = ["publish_report", "suite_progress"]


def _percent(ledger: Ledger, keys: set[tuple[str, str]]) -> float:
    return round(100 * len(keys & ledger.recorded_keys()) / len(keys), 1) if keys else 100.0


@contextmanager
def suite_progress(ledger: Ledger, keys: set[tuple[str, str]], every: float = 3.0) -> Iterator[None]:
    """A ``suite-progress`` progress artifact on the current flow run, updated while the block runs."""
    artifact = create_progress_artifact(_percent(ledger, keys), key="suite-progress", description="graded")
    assert isinstance(artifact, UUID)
    stop = threading.Event()

    def refresh() -> None:
        while not stop.wait(every):
            update_progress_artifact(artifact, _percent(ledger, keys))

    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(refresh,), name="suite-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)
        update_progress_artifact(artifact, _percent(ledger, keys))


def publish_report(ledger: Ledger, keys: set[tuple[str, str]], folder: Path, name: str) -> Path:
    """Write the suite's HTML report under ``folder`` and link it from the flow run; returns its path."""
    from gradeflow.evaluation.report import build_report
    from gradeflow.evaluation.report_html import render_html

    records = [record for record in ledger.records() if record.key in keys]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") + ".html")
    path.write_text(render_html(build_report(records), records), encoding="utf-8")
    create_link_artifact(
        link=path.resolve().as_uri(), link_text=path.name, key="suite-report", description="HTML report"
    )
    return path
