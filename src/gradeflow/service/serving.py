"""``gradeflow serve``'s runner: Prefect's ``Runner``, stopping at once on SIGTERM when its server is gone.

On SIGTERM Prefect's runner pauses the served schedules and cancels its flow runs through the API, with
the client's retries: when the server no longer answers that takes a minute and ends in a traceback. This
runner asks the server first (one request, :data:`PROBE_SECONDS`); when nothing answers it stops its
flow-run processes itself, prints one line and exits :data:`EXIT_SERVER_GONE` (3, an environment failure).
When the server answers, Prefect's own graceful shutdown runs and ``serve`` exits 0.
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import sys
import time
from typing import Any

import httpx
from prefect.deployments.runner import RunnerDeployment
from prefect.runner import Runner
from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL

from gradeflow.errors import InfraError
from gradeflow.text import for_terminal

__all__ = ["EXIT_SERVER_GONE", "PROBE_SECONDS", "ServeRunner", "await_server", "serve_until_stopped"]

EXIT_SERVER_GONE = 3
"""``serve``'s exit code when SIGTERM finds its Prefect server gone."""
PROBE_SECONDS = 2.0
"""How long the SIGTERM handler waits for the server's health check."""


def server_answers(api_url: str, timeout: float = PROBE_SECONDS) -> bool:
    """Whether anything answers HTTP at ``{api_url}/health`` (any status: a 401 is a server that is there)."""
    auth = PREFECT_API_AUTH_STRING.value()
    headers = {"Authorization": f"Basic {base64.b64encode(auth.encode()).decode()}"} if auth else {}
    try:
        httpx.get(f"{api_url.rstrip('/')}/health", headers=headers, timeout=timeout)
    except httpx.HTTPError:
        return False
    return True


def await_server(seconds: float) -> None:
    """Wait up to ``seconds`` for the Prefect server ``PREFECT_API_URL`` names to answer (it may be starting
    beside this command, as in the start-up lines of docs/how-to/service.md); ``InfraError``
    (``prefect-unavailable``, exit 3, one line naming the URL) when it does not. Prefect's client would end in a
    ``ConnectError`` traceback."""
    url = str(PREFECT_API_URL.value() or "")
    if not url:  # no server named: Prefect's own temporary one, started by the first call
        return
    deadline = time.monotonic() + seconds
    while not server_answers(url):
        if time.monotonic() > deadline:
            raise InfraError(
                f"the Prefect server at {url} did not answer within {seconds:g} s", reason_code="prefect-unavailable"
            )
        time.sleep(0.5)


class ServeRunner(Runner):
    """Prefect's runner, except that SIGTERM with the server gone ends the process at once (see the module)."""

    def handle_sigterm(self, *args: Any, **kwargs: Any) -> None:
        url = str(PREFECT_API_URL.value() or "")
        if self.stopping or server_answers(url):
            super().handle_sigterm(*args, **kwargs)
            return
        self._stop_flow_run_processes()
        print(
            f"gradeflow: error: serve stopped on SIGTERM without pausing its schedules or cancelling its runs: "
            f"the Prefect server at {for_terminal(url)} does not answer",
            file=sys.stderr,
            flush=True,
        )
        os._exit(EXIT_SERVER_GONE)  # a normal exit would run Prefect's shutdown, which waits on the server

    def _stop_flow_run_processes(self) -> None:
        """SIGTERM to each flow-run process this runner started (its process group), so none outlives it."""
        manager = self._process_manager  # Prefect's own map of the flow-run processes it started
        for flow_run_id in manager.flow_run_ids():
            handle = manager.get(flow_run_id)
            if handle is not None and handle.is_alive():
                handle.graceful_kill()


def serve_until_stopped(deployments: list[RunnerDeployment], limit: int | None = None) -> None:
    """Serve ``deployments`` from this process until SIGTERM (exit 0, or 3 with the server gone) or Ctrl-C."""
    runner = ServeRunner(pause_on_shutdown=True, limit=limit)
    signal.signal(signal.SIGTERM, runner.handle_sigterm)  # from here, not only once ``start`` sets it
    for deployment in deployments:
        runner.add_deployment(deployment)
    names = ", ".join(d.full_name for d in deployments)
    print(f"gradeflow: serving {names} on {PREFECT_API_URL.value()} (stop with Ctrl-C or SIGTERM)", flush=True)
    asyncio.run(runner.start())
