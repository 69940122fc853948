"""``gradeflow run TASK... --agent CMD``: trials of an agent in each task's sandbox, graded and recorded.

Exits 0 when every trial is in the ledger and passed, 1 when some did not pass or crashed (run again
to retry the crashed ones), 2 on bad input, 3 when some trial is inconclusive and none failed.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from gradeflow.config import SANDBOX_KINDS

if TYPE_CHECKING:
    from gradeflow.agents import TrialRun

__all__ = ["add_run_command", "run_run"]


def add_run_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``run``."""
    run = sub.add_parser("run", help="run an agent on tasks in their sandbox, grade and record every trial")
    run.add_argument("tasks", nargs="+", metavar="TASK", help="paths to task.yaml")
    run.add_argument("--agent", required=True, help="a shell command run from the workspace, or oracle / nop")
    run.add_argument("--repeat", type=int, default=1, metavar="N", help="trials per task (default 1)")
    run.add_argument("--model", default="unknown", metavar="ID", help="the model_id recorded")
    run.add_argument("--prompt-revision", default="unknown", metavar="R", help="the prompt_revision recorded")
    run.add_argument("--timeout", type=float, default=1800.0, metavar="S", help="the agent's wall time (default 1800)")
    run.add_argument("--concurrency", type=int, default=1, metavar="C", help="trials at once (default 1)")
    run.add_argument("--dask-address", help="run trials on the workers of this Dask scheduler instead of threads")
    run.add_argument(
        "--ledger", help="database URL or SQLite file (default: $GRADEFLOW_DATABASE_URL, .gradeflow/ledger.db)"
    )
    run.add_argument("--sandbox", choices=SANDBOX_KINDS, help="override environment.sandbox (default isolated)")
    run.add_argument("--profile", help="a shipped profile name or a profile YAML file")
    run.add_argument("--agent-dir", metavar="DIR", help="the agent's installation, shown read-only (DIR/bin on PATH)")
    run.add_argument(
        "--agent-network", action="store_true", default=None, help="give the agent the network (the tests never get it)"
    )
    run.add_argument(
        "--agent-env", action="append", default=[], metavar="NAME", help="pass this variable to the agent (redacted)"
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    run.add_argument("--json", action="store_true", help="print the trials' records as JSON")
    run.add_argument("--ephemeral", action="store_true", help="use a temporary Prefect server for this call only")


def run_run(args: argparse.Namespace) -> int:
    """Plan, check and run the trials; ``SpecError`` (exit 2) for bad input."""
    from gradeflow.agents import TrialConfig, oracle_references, plan_trials, preflight, run_trials
    from gradeflow.cli.server import choose_server
    from gradeflow.errors import SpecError
    from gradeflow.evaluation.ledger import Ledger
    from gradeflow.spec import load_task

    if args.repeat < 1 or args.concurrency < 1:
        raise SpecError("--repeat and --concurrency: at least 1")
    if args.timeout <= 0:
        raise SpecError("--timeout: more than 0 seconds")
    config = TrialConfig(
        agent=args.agent,
        model_id=args.model,
        prompt_revision=args.prompt_revision,
        timeout=args.timeout,
        sandbox=args.sandbox,
        agent_dir=args.agent_dir,
        network=args.agent_network,
        passed_env=tuple(args.agent_env),
    )
    tasks = [load_task(path) for path in args.tasks]
    plan = plan_trials(tasks, config, args.repeat, args.profile, oracle_references(tasks, args.tasks, args.agent))
    preflight(plan)
    ledger = Ledger(args.ledger)
    choose_server(args.ephemeral, args.dask_address)
    done = run_trials(
        plan, ledger, concurrency=args.concurrency, show_progress=not args.no_progress, dask_address=args.dask_address
    )
    _print(done, args.json)
    return _exit_code(done)


def _print(done: TrialRun, as_json: bool) -> None:
    if as_json:
        print(
            json.dumps(
                {
                    "records": [r.model_dump(mode="json") for r in done.records],
                    "trials": [t.model_dump(mode="json") for t in done.trials],
                    "ran": done.ran,
                    "skipped": done.skipped,
                    "failed": done.failed,
                    "unavailable": done.unavailable,
                },
                indent=2,
            )
        )
        return
    agents = {(t.content_key, t.run_id): t for t in done.trials}
    for record in done.records:
        trial = agents.get(record.key)
        exit_code = "?" if trial is None else ("timeout" if trial.timed_out else trial.exit_code)
        score = "n/a" if record.score is None else f"{record.score:.3f}"
        codes = ", ".join(record.reason_codes) or "-"
        print(
            f"{record.task_id} {record.run_id}: {record.status} {score} passed={record.passed}"
            f" agent exit {exit_code} [{codes}]"
        )
    print(f"ran {done.ran}, skipped {done.skipped} already recorded, failed {len(done.failed)}", file=sys.stderr)
    for line in done.failed:
        print(f"  failed: {line}", file=sys.stderr)
    for line in done.unavailable:
        print(f"  inconclusive: {line}", file=sys.stderr)


def _exit_code(done: TrialRun) -> int:
    if done.failed or any(r.status == "graded" and not r.passed for r in done.records):
        return 1
    return 3 if any(r.status == "inconclusive" for r in done.records) else 0
