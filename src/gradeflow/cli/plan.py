"""``gradeflow plan``: how many tasks a paired study needs to find a difference. Exits 0, or 2 on bad input."""

from __future__ import annotations

import argparse
from collections import defaultdict

from gradeflow.errors import SpecError

__all__ = ["PLAN_COMMANDS", "add_plan_command", "run_plan_command"]

PLAN_COMMANDS = ("plan",)


def add_plan_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``plan``."""
    plan = sub.add_parser("plan", help="tasks needed to tell two configurations apart (80%% power, alpha 0.05)")
    plan.add_argument("--rate", type=float, help="the expected pass rate, e.g. 0.4 (unused with --from-ledger)")
    plan.add_argument("--effect", type=float, required=True, help="the difference to find, e.g. 0.05")
    plan.add_argument("--runs-per-task", type=int, default=1, metavar="K", help="runs of each task per configuration")
    plan.add_argument(
        "--from-ledger",
        nargs="?",
        const="",
        metavar="URL",
        help="use this ledger's between- and within-task variance (no URL: the default ledger)",
    )
    plan.add_argument("--by", default="model_id,prompt_revision", help="fields defining a configuration")
    plan.add_argument("--power", type=float, default=0.8, help="default 0.8")
    plan.add_argument("--alpha", type=float, default=0.05, help="two-sided, default 0.05")
    plan.add_argument("--json", action="store_true")


def run_plan_command(args: argparse.Namespace) -> int:
    """Print the plan."""
    from gradeflow.evaluation.plan import plan_from_rate, plan_from_scores

    if args.from_ledger is not None:
        found = plan_from_scores(_ledger_scores(args), args.effect, args.runs_per_task, args.alpha, args.power)
    elif args.rate is not None:
        found = plan_from_rate(args.rate, args.effect, args.runs_per_task, args.alpha, args.power)
    else:
        raise SpecError("plan: give --rate or --from-ledger")
    if args.json:
        print(found.model_dump_json(indent=2))
        return 0
    print(
        f"{found.tasks} tasks to find a difference of {found.effect:g} with {found.power:.0%} power "
        f"(two-sided alpha {found.alpha:g}), {found.runs_per_task} run(s) per task and configuration"
    )
    print(f"  from {found.source}: task variance {found.task_variance:.4f}, run variance {found.run_variance:.4f}")
    if found.tasks_if_runs_independent is not None and found.tasks_if_runs_independent != found.tasks:
        print(
            f"  {found.tasks_if_runs_independent} tasks if a task's runs were as independent as different tasks; "
            "--from-ledger measures which it is"
        )
    return 0


def _ledger_scores(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    from gradeflow.evaluation.comparison import scores_by_task
    from gradeflow.evaluation.ledger import Ledger
    from gradeflow.evaluation.report import check_by, group_records

    ledger = Ledger(args.from_ledger or None)
    try:
        records = ledger.records()
    finally:
        ledger.close()
    by = check_by([name.strip() for name in args.by.split(",") if name.strip()])
    scores: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for key, members in group_records(records, by):
        scores["/".join(key.values())] = scores_by_task(members)
    return dict(scores)
