"""Shared fixtures: one Prefect test server per session and a private GRADEFLOW_HOME."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# Where a varied run starts is chosen by the machine's load (auto); the suite fixes it so that tests counting
# a grade's runs count the same on a quiet and a busy machine. Tests of both ways set it themselves.
os.environ.setdefault("GRADEFLOW_VARIED_RUN", "after")
# The suite's CLI calls run in-process, each home without a warm runner left behind; tests/engine/test_runner.py
# turns the runner on for its own calls and stops the runners it starts.
os.environ["GRADEFLOW_RUNNER"] = "off"
# A developer's own cap on the environment store would evict the machine's shared roots while tests grade.
os.environ.pop("GRADEFLOW_ENV_CAP", None)
# Root filesystems (a debootstrap each) are kept on the machine across sessions, as CI keeps them.
if os.geteuid() == 0:
    os.environ.setdefault("GRADEFLOW_ROOTS", "/var/cache/gradeflow/roots")


@pytest.fixture(scope="session", autouse=True)
def gradeflow_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Baselines cached by the tests, and the local Prefect server CLI calls start, stay in a temporary folder."""
    home = tmp_path_factory.mktemp("gradeflow-home")
    previous = os.environ.get("GRADEFLOW_HOME")
    os.environ["GRADEFLOW_HOME"] = str(home)
    yield home
    # One-shot CLI calls in the tests (in-process or not) share this home's local Prefect server.
    from gradeflow.engine.local_server import stop_server

    stop_server()
    if previous is None:
        os.environ.pop("GRADEFLOW_HOME", None)
    else:
        os.environ["GRADEFLOW_HOME"] = previous


@contextmanager
def _immediate_test_server() -> Iterator[None]:
    """``prefect_test_harness`` serving the app of :func:`gradeflow.engine._prefect_server.create_app`, as the local
    server gradeflow starts does: its SQLite transactions begun IMMEDIATE. As shipped, flow runs created while
    another write commits (the suite's concurrent grades) are refused with a 503 the client retries after about 2 s.
    """
    import subprocess
    import sys

    import prefect.testing.utilities as harness
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import get_current_settings

    class ImmediateServer(SubprocessASGIServer):
        def _run_uvicorn_command(self) -> subprocess.Popen[bytes]:
            # Prefect's own command line for its test server, with the factory replaced.
            argv = [sys.executable, "-m", "uvicorn", "--factory", "gradeflow.engine._prefect_server:create_app"]
            argv += ["--host", "127.0.0.1", "--port", str(self.port), "--log-level", "error", "--lifespan", "on"]
            shown = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
            settings = get_current_settings().to_environment_variables(exclude_unset=True)
            return subprocess.Popen(argv, env={**os.environ, **shown, **settings})

    original = harness.SubprocessASGIServer
    harness.SubprocessASGIServer = ImmediateServer  # type: ignore[misc]
    try:
        yield
    finally:
        harness.SubprocessASGIServer = original  # type: ignore[misc]


@pytest.fixture(scope="session")
def prefect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One Prefect test server for the whole session (it costs several seconds to start)."""
    from prefect.settings import (
        PREFECT_CLIENT_MAX_RETRIES,
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
        PREFECT_HOME,
        PREFECT_SERVER_DATABASE_CONNECTION_TIMEOUT,
        PREFECT_SERVER_DATABASE_TIMEOUT,
        PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED,
        PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED,
        temporary_settings,
    )
    from prefect.testing.utilities import prefect_test_harness

    # Tests that grade concurrently (the hostile corpus) queue on the server's SQLite file; a locked
    # database is a 503 the client retries, so give it more tries and the server longer waits.
    settings = {
        PREFECT_HOME: tmp_path_factory.mktemp("prefect-home"),
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None,
        PREFECT_CLIENT_MAX_RETRIES: 10,
        PREFECT_SERVER_DATABASE_TIMEOUT: 30.0,
        PREFECT_SERVER_DATABASE_CONNECTION_TIMEOUT: 30.0,
        # Nothing in the session's tests reads the server's event log or uses an automation (the service tests
        # that do start servers of their own): persisting each task run's events and matching them against
        # triggers was about a fifth of the server's CPU per grade, on the same two cores as the grades.
        PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED: False,
        PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED: False,
        # The task run recorder writes each task run state event in a transaction of its own by default (about 30
        # a grade); batched, a grade's task runs reach the database within a second, in a few writes: the server's
        # CPU per grade of the calc example fell from about 0.31 s to 0.14 s (of about 1.0 s for the whole grade).
        "server.services.task_run_recorder.batch_size": 200,
        "server.services.task_run_recorder.flush_interval": 1,
    }
    with (
        temporary_settings(settings),
        _immediate_test_server(),
        prefect_test_harness(server_startup_timeout=60),
    ):
        yield
