"""The local Prefect server one-shot commands reuse: started once in the background, found again later.

Without ``PREFECT_API_URL``, every ``gradeflow grade`` used to start (and stop) a temporary server:
5–15 s each on a small machine. Instead :func:`ensure_server` starts ``prefect server start`` once, on
loopback and a free port, with its own ``PREFECT_HOME`` under gradeflow's home, and records its URL
and pid in ``server.json`` beside a lock file; later calls find it and reuse it. A recorded server that
is dead or does not answer is replaced. Starting happens under an exclusive lock on ``server.lock``,
so two calls racing to start it end with one server. The server runs in its own session, so it
outlives the command that started it until :func:`stop_server` (``gradeflow server stop``).
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from pydantic import BaseModel

from gradeflow.config import cache_dir
from gradeflow.errors import InfraError

__all__ = ["SERVER_SETTINGS", "LocalServer", "ensure_server", "server_home", "server_status", "stop_server"]

SERVER_SETTINGS = {
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "200",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
}
"""Prefect settings the local server starts with unless the caller's environment gives its own. A grade's ten task
runs reach the server as about thirty state events; Prefect's task run recorder writes each in a transaction of its
own by default. Batched, they reach the database within a second in a few writes: the server's CPU per grade of the
calc example falls from about 0.4 s to 0.2 s, and a warm grade's wall time by about a quarter on two cores
(``bench/server_cpu.py``). A task run then shows in the API and the UI up to a second after its state changed."""

START_TIMEOUT = 120.0
"""Seconds a new server may take to answer /api/health (a loaded 2-core machine needs tens)."""


class LocalServer(BaseModel):
    """A running local server as recorded in ``server.json``."""

    url: str
    """The API URL (``http://127.0.0.1:PORT/api``)."""
    pid: int
    started: bool = False
    """Whether this call started it (then the CLI prints where its UI is)."""

    @property
    def ui_url(self) -> str:
        return self.url.removesuffix("/api")


def server_home() -> Path:
    """The server's folder under gradeflow's home: its record, lock, log and ``PREFECT_HOME``."""
    home = cache_dir() / "server"
    home.mkdir(parents=True, exist_ok=True)
    return home


@contextmanager
def _locked(home: Path) -> Iterator[None]:
    with (home / "server.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _recorded(home: Path) -> LocalServer | None:
    try:
        return LocalServer.model_validate_json((home / "server.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _healthy(url: str, timeout: float = 3.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def server_status() -> LocalServer | None:
    """The recorded server when it runs and answers, else ``None``."""
    server = _recorded(server_home())
    if server is not None and _alive(server.pid) and _healthy(server.url):
        return server
    return None


def explicit_api_url() -> str | None:
    """The Prefect server this process was pointed at (``PREFECT_API_URL``, from the environment or a profile)."""
    from prefect.settings import PREFECT_API_URL

    return os.environ.get("PREFECT_API_URL") or PREFECT_API_URL.value()


def use_local_server() -> LocalServer | None:
    """Unless ``PREFECT_API_URL`` names a server, point this process at gradeflow's local one (started once
    in the background, reused by every later call); the server used, ``None`` for an explicit URL."""
    if explicit_api_url():
        return None
    server = ensure_server()
    os.environ["PREFECT_API_URL"] = server.url
    return server


def ensure_server() -> LocalServer:
    """The running local server, started now if there is none (``InfraError`` when it does not come up)."""
    home = server_home()
    with _locked(home):
        found = server_status()
        if found is not None:
            return found
        old = _recorded(home)
        if old is not None and _alive(old.pid):
            _terminate(old.pid)
        server = _start(home)
        (home / "server.json").write_text(server.model_dump_json(exclude={"started"}), encoding="utf-8")
        return server


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(home: Path) -> LocalServer:
    port = _free_port()
    env = {
        **SERVER_SETTINGS,
        **os.environ,
        "PREFECT_HOME": str(home / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }
    env.pop("PREFECT_API_URL", None)
    # The UI's pages call the API the UI was told of (by default 127.0.0.1:4200): this server's own.
    env["PREFECT_UI_API_URL"] = f"http://127.0.0.1:{port}/api"
    # Prefect's CLI, its SQLite transactions begun IMMEDIATE (see gradeflow.engine._prefect_server).
    command = [sys.executable, "-m", "gradeflow.engine._prefect_server", "server", "start"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with (home / "server.log").open("ab") as log:
        process = subprocess.Popen(
            command, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise InfraError(f"the local Prefect server exited with {process.returncode}; see {home / 'server.log'}")
        if _healthy(url, timeout=1.0):
            return LocalServer(url=url, pid=process.pid, started=True)
        time.sleep(0.25)
    _terminate(process.pid)
    raise InfraError(f"the local Prefect server did not answer within {START_TIMEOUT:g} s; see {home / 'server.log'}")


def _terminate(pid: int, wait: float = 15.0) -> None:
    """SIGTERM the server's process group, SIGKILL it if it is still there after ``wait`` seconds."""
    for sig, pause in ((signal.SIGTERM, wait), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + pause
        while time.monotonic() < deadline:
            with suppress(ChildProcessError):  # reap it when this process started it
                os.waitpid(pid, os.WNOHANG)
            if not _alive(pid):
                return
            time.sleep(0.1)


def stop_server() -> LocalServer | None:
    """Stop the recorded server (its whole process group); the server that was stopped, or ``None``."""
    home = server_home()
    with _locked(home):
        server = _recorded(home)
        if server is None:
            return None
        if _alive(server.pid):
            _terminate(server.pid)
        (home / "server.json").unlink(missing_ok=True)
        return server
