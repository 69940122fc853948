"""``gradeflow task strength TASK`` and ``validate --strength MIN``: the task's kill rate over wrong patches.

``task strength`` exits 0 when the reference passes (and the kill rate reaches ``--min`` if given), 1
otherwise, 2 on bad input. The strength is recorded in the ledger under the task spec's digest, so
``gradeflow report`` flags results on a weak task.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gradeflow.config import SANDBOX_KINDS
from gradeflow.errors import SpecError

if TYPE_CHECKING:
    from gradeflow.authoring.strength import StrengthReport
    from gradeflow.models import TaskSpec

__all__ = ["add_strength_command", "measure_and_record", "print_strength", "run_strength"]


def _count(text: str) -> int:
    value = int(text) if text.isdigit() else -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a kill rate between 0 and 1, got {text!r}")
    return value


def add_strength_command(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``task strength``."""
    strength = actions.add_parser("strength", help="grade mutants of the reference fix: do the tests catch them?")
    strength.add_argument("task", help="path to task.yaml")
    strength.add_argument("--reference", help="the reference fix (default: reference.diff beside the task spec)")
    strength.add_argument("--mutants", type=_count, default=20, metavar="N", help="mutants to grade (default 20)")
    strength.add_argument("--min", type=_rate, metavar="RATE", help="exit 1 when the kill rate is below RATE")
    strength.add_argument("--sandbox", choices=SANDBOX_KINDS, help="override environment.sandbox")
    strength.add_argument("--profile", help="a shipped profile name or a profile YAML file")
    strength.add_argument("--ledger", help="where to record the strength (database URL or SQLite file)")
    strength.add_argument("--json", action="store_true")
    strength.add_argument("--ephemeral", action="store_true", help="use a temporary Prefect server for this call only")


def reference_text(task_path: str, reference: str | None) -> str:
    """The reference fix's text: ``reference``, else ``reference.diff`` beside the task spec."""
    path = Path(reference) if reference else Path(task_path).parent / "reference.diff"
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise SpecError(f"task strength: cannot read the reference fix {path}: {exc.strerror or exc}") from None


def measure_and_record(
    task: TaskSpec, reference: str, sandbox: str | None, profile: str | None, mutants: int, ledger: str | None
) -> StrengthReport:
    """Measure the strength and record it in the ledger under the task spec's digest."""
    from gradeflow.authoring.strength import measure_strength
    from gradeflow.evaluation.ledger import Ledger, StrengthRecord
    from gradeflow.flows.session import flow_runs_without_heartbeat

    with flow_runs_without_heartbeat():
        report = measure_strength(task, reference, sandbox, profile, mutants)
    if report.kill_rate is not None and report.reference_passed:
        store = Ledger(ledger)
        try:
            decided = report.killed + len(report.survivors)
            store.add_strength(
                StrengthRecord(
                    task_id=task.task_id,
                    task_spec_hash=report.task_spec_hash,
                    mutants=decided,
                    killed=report.killed,
                    kill_rate=report.kill_rate,
                )
            )
        finally:
            store.close()
    return report


def print_strength(report: StrengthReport) -> None:
    """The kill rate, the counts, and each survivor with its diff against the fix (``--json``: the whole patch)."""
    rate = "–" if report.kill_rate is None else f"{report.kill_rate:.0%}"
    inconclusive = sum(o.killed is None for o in report.outcomes)
    print(
        f"strength of {report.task_id}: kill rate {rate} ({report.killed} of {len(report.outcomes) - inconclusive} "
        f"wrong patches rejected, {len(report.survivors)} survived, {inconclusive} inconclusive)"
    )
    if not report.reference_passed:
        print("  the reference does not pass: the kill rate says nothing about the tests")
    for outcome in report.outcomes:
        state = {True: "killed", False: "SURVIVED", None: "inconclusive"}[outcome.killed]
        where = f" {outcome.path}:{outcome.line}" if outcome.line else ""
        reasons = ", ".join(outcome.reason_codes) or "none"
        print(f"  {state:12} {outcome.submission_id} ({outcome.kind}{where}) reasons: {reasons}")
    for survivor in report.survivors:
        shown = survivor.change or survivor.patch or "(the empty patch)"
        print(f"\nsurvivor {survivor.submission_id} ({survivor.kind}), against the reference fix:\n{shown}")


def run_strength(args: argparse.Namespace) -> int:
    """Run ``task strength``."""
    from gradeflow.cli.server import choose_server
    from gradeflow.spec import load_task

    task = load_task(args.task)
    reference = reference_text(args.task, args.reference)
    choose_server(args.ephemeral)
    report = measure_and_record(task, reference, args.sandbox, args.profile, args.mutants, args.ledger)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print_strength(report)
    weak = args.min is not None and (report.kill_rate is None or report.kill_rate < args.min)
    if weak:
        print(f"gradeflow: {task.task_id} is weaker than --min {args.min:g}", file=sys.stderr)
    return 0 if report.reference_passed and not weak else 1
