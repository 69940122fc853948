"""``gradeflow server start|stop|status`` and which Prefect server a one-shot command talks to.

A one-shot ``grade``, ``validate`` or ``evaluate`` uses, in order: an explicit ``PREFECT_API_URL``
(environment or Prefect profile); Prefect's temporary server with ``--ephemeral`` (started and stopped
by the command, as before); otherwise gradeflow's local server, started once in the background and
reused by every later call (:mod:`gradeflow.engine.local_server`).
"""

from __future__ import annotations

import argparse
import signal
import sys

from gradeflow.errors import SpecError

__all__ = ["SERVER_COMMANDS", "add_server_commands", "choose_server", "run_server_command"]

SERVER_COMMANDS = ("server",)


def add_server_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``server start|stop|status``."""
    server = sub.add_parser("server", help="the local Prefect server one-shot commands reuse")
    server.add_argument("action", choices=["start", "stop", "status"])


def run_server_command(args: argparse.Namespace) -> int:
    """Start, stop or describe the local server; ``status`` exits 1 when none runs."""
    from gradeflow.engine.local_server import ensure_server, server_status, stop_server

    if args.action == "start":
        server = ensure_server()
        print(f"{'started' if server.started else 'running'}: {server.url} (UI {server.ui_url}, pid {server.pid})")
        return 0
    if args.action == "stop":
        stopped = stop_server()
        print(f"stopped: {stopped.url} (pid {stopped.pid})" if stopped else "no local server was running")
        return 0
    running = server_status()
    print(f"running: {running.url} (UI {running.ui_url}, pid {running.pid})" if running else "not running")
    return 0 if running else 1


def choose_server(ephemeral: bool, dask_address: str | None = None) -> None:
    """Point this process at the Prefect server a one-shot command should use (see the module docstring)."""
    from gradeflow.engine.local_server import explicit_api_url, use_local_server

    if dask_address and not explicit_api_url():
        raise SpecError(
            "--dask-address: the Dask workers need a Prefect server they can reach; set PREFECT_API_URL to it"
        )
    if ephemeral or explicit_api_url():
        # Whatever the command starts only for itself must stop with it, on SIGTERM as on Ctrl-C.
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        return
    server = use_local_server()
    if server is not None and server.started:
        print(
            f"gradeflow: started a local Prefect server; watch your grades at {server.ui_url} "
            "(`gradeflow server stop` ends it)",
            file=sys.stderr,
        )


def _exit_on_sigterm(signum: int, frame: object) -> None:
    del signum, frame
    raise SystemExit(143)
