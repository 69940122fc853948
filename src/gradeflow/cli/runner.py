"""``gradeflow runner status|stop``, and the command line of the runner process (:data:`SERVE`, which runs
:func:`gradeflow.cli.warm.serve_runner`).

The warm runner (:mod:`gradeflow.engine.runner`) takes the commands that run the engine (``grade``,
``validate``, ``evaluate``, ``run``, ``task``) so that a later call pays for its work, not for importing
Prefect and gradeflow again; the first such call starts it. ``status`` lists the runners of this gradeflow
home and exits 1 when none runs; ``stop`` stops them (the calls they are running finish first).
"""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["LOCAL_SERVER", "RUNNER_ACTIONS", "SERVE", "add_runner_command", "run_runner_command"]

RUNNER_ACTIONS = ("status", "stop")
SERVE = [
    sys.executable,
    "-c",
    "import sys; from gradeflow.cli.warm import serve_runner; sys.exit(serve_runner(sys.argv[1], int(sys.argv[2])))",
]
"""The runner's command line, followed by its key and the descriptor it says it listens on."""
LOCAL_SERVER = [
    sys.executable,
    "-c",
    "from gradeflow.engine.local_server import ensure_server, explicit_api_url\nexplicit_api_url() or ensure_server()",
]
"""The local Prefect server's start, unless Prefect's settings name a server (as ``choose_server`` decides)."""


def add_runner_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``runner status|stop``."""
    runner = sub.add_parser("runner", help="the warm process later grades run in (started by the first)")
    runner.add_argument("action", choices=RUNNER_ACTIONS)


def run_runner_command(args: argparse.Namespace) -> int:
    """List or stop this home's runners; ``status`` exits 1 when none runs."""
    from gradeflow.engine.runner_client import live_runners, runner_folder, stop_runners

    folder = runner_folder()
    runners = live_runners(folder)
    if args.action == "stop":
        stop_runners(runners)
        for runner in runners:
            print(f"stopped: runner {runner.pid} (code {runner.key}); calls it was running finish first")
        if not runners:
            print("no runner was running")
        return 0
    for runner in runners:
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(runner.started))
        print(f"running: runner {runner.pid} (code {runner.key}) since {since}; log {folder / 'runner.log'}")
    if not runners:
        print("not running")
    return 0 if runners else 1
