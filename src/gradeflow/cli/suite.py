"""The ``evaluate`` and ``report`` subcommands (registered by :mod:`gradeflow.cli`).

``evaluate`` exits 0 when every submission is in the ledger (graded or inconclusive), 1 when some
could not be graded (run again to retry them), 2 on bad input, and 3 when the run graded nothing (every
submission's record is inconclusive) or when the share of inconclusive records passes
``--max-inconclusive``; one line on stderr then says how many and the reason codes behind them.
``report`` exits 0, or 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from gradeflow.cli.server import choose_server
from gradeflow.config import SANDBOX_KINDS
from gradeflow.errors import SpecError
from gradeflow.text import for_terminal

if TYPE_CHECKING:
    from gradeflow.evaluation.ledger import GradeRecord, ReviewRecord
    from gradeflow.evaluation.report import GroupStats
    from gradeflow.evaluation.suite import Suite
    from gradeflow.flows.evaluate import Evaluation

__all__ = ["SUITE_COMMANDS", "add_suite_commands", "inconclusive_verdict", "run_suite_command"]

SUITE_COMMANDS = ("evaluate", "report")


def add_suite_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``evaluate`` and ``report`` on the ``gradeflow`` subcommand parser."""
    evaluate = sub.add_parser("evaluate", help="grade a suite (or SWE-bench predictions) into the ledger")
    evaluate.add_argument("suite", nargs="?", help="path to suite.yaml")
    evaluate.add_argument("--predictions", help="SWE-bench predictions, JSON lines (instead of a suite)")
    evaluate.add_argument("--tasks", help="glob of the task specs the predictions refer to")
    evaluate.add_argument(
        "--ledger", help="database URL or SQLite file (default: $GRADEFLOW_DATABASE_URL, .gradeflow/ledger.db)"
    )
    evaluate.add_argument("--concurrency", type=int, default=1, help="submissions graded at once (default 1)")
    evaluate.add_argument(
        "--dask-address", help="grade on the workers of this Dask scheduler (tcp://host:8786) instead of threads"
    )
    evaluate.add_argument("--profile", help="a shipped profile name or a profile YAML file")
    evaluate.add_argument("--sandbox", choices=SANDBOX_KINDS, help="override environment.sandbox (default isolated)")
    evaluate.add_argument("--swebench-report", help="also write a SWE-bench-style summary JSON here")
    evaluate.add_argument(
        "--max-inconclusive",
        type=_share_arg,
        metavar="SHARE",
        help="exit 3 when more than this share (0..1) of the submissions is inconclusive "
        "(default: only when every one is)",
    )
    evaluate.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    evaluate.add_argument("--json", action="store_true", help="print the run's counts as JSON")
    evaluate.add_argument("--ephemeral", action="store_true", help="use a temporary Prefect server for this call only")
    report = sub.add_parser("report", help="statistics of the ledger per configuration and task")
    report.add_argument("--ledger", help="database URL or SQLite file")
    report.add_argument(
        "--by",
        default="model_id,prompt_revision",
        help="comma-separated record fields (or labels.NAME) defining a configuration",
    )
    report.add_argument(
        "--compare",
        nargs=2,
        metavar=("A", "B"),
        help="two configurations to compare, as their values joined by '/' (default: the best against each other)",
    )
    report.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    report.add_argument("--json", action="store_true", help="print the report as JSON")
    report.add_argument("--html", help="write a self-contained HTML page with plots here")
    report.add_argument(
        "--reviews",
        action="store_true",
        help="compare the automatic verdicts with the reviewers' answers: agreement, Cohen's kappa, disagreements",
    )


def run_suite_command(args: argparse.Namespace) -> int:
    """Run ``evaluate`` or ``report``; a ``GradeflowError`` propagates to the CLI's handler."""
    return _evaluate(args) if args.command == "evaluate" else _report(args)


def _load(args: argparse.Namespace) -> Suite:
    from gradeflow.evaluation.suite import load_predictions, load_suite

    if (args.suite is None) == (args.predictions is None):
        raise SpecError("evaluate: give a suite file or --predictions (exactly one)")
    if args.predictions is not None:
        if not args.tasks:
            raise SpecError("--predictions: --tasks GLOB is required (the task specs to pair with)")
        return load_predictions(args.predictions, args.tasks)
    return load_suite(args.suite)


def _evaluate(args: argparse.Namespace) -> int:
    from gradeflow.evaluation.ledger import Ledger
    from gradeflow.evaluation.swebench import write_swebench_summary
    from gradeflow.flows.evaluate import evaluate
    from gradeflow.logs import quiet_prefect

    quiet_prefect()  # again: importing the flows configured Prefect's loggers, which would drown the progress bar

    if args.concurrency < 1:
        raise SpecError(f"--concurrency: must be at least 1, got {args.concurrency}")
    suite = _load(args)
    choose_server(args.ephemeral, args.dask_address)
    ledger = Ledger(args.ledger)
    try:
        outcome = evaluate(
            suite,
            ledger,
            concurrency=args.concurrency,
            profile=args.profile,
            sandbox=args.sandbox,
            show_progress=not args.no_progress,
            dask_address=args.dask_address,
        )
    finally:
        ledger.close()
    if args.swebench_report:
        write_swebench_summary(args.swebench_report, suite, outcome.records)
    _print_counts(outcome, len(suite.items), ledger.display_url, as_json=args.json)
    if outcome.failed:
        return 1
    too_many = inconclusive_verdict(outcome.records, len(suite.items), args.max_inconclusive)
    if too_many:
        print(f"evaluate: {too_many}", file=sys.stderr)
        return 3
    return 0


def _share_arg(value: str) -> float:
    try:
        share = float(value)
    except ValueError:
        share = -1.0
    if not 0.0 <= share <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a share from 0 to 1, got {value!r}")
    return share


def inconclusive_verdict(records: list[GradeRecord], submissions: int, max_share: float | None) -> str | None:
    """Why a run's inconclusive records make it fail, or ``None``.

    It fails when it has submissions and every one's record is inconclusive (nothing was graded), or when
    the inconclusive share passes ``max_share``; the message counts them and their reason codes."""
    inconclusive = [r for r in records if r.status == "inconclusive"]
    if not submissions or not inconclusive:
        return None
    share = len(inconclusive) / submissions
    if len(inconclusive) < submissions and (max_share is None or share <= max_share):
        return None
    reasons = Counter(code for r in inconclusive for code in (r.reason_codes or ["no-reason-code"]))
    shown = ", ".join(f"{code} ×{count}" for code, count in reasons.most_common(5))
    more = f" and {len(reasons) - 5} more" if len(reasons) > 5 else ""
    if len(inconclusive) == submissions:
        head = f"nothing was graded: all {submissions} submissions are inconclusive"
    else:
        head = f"{len(inconclusive)} of {submissions} submissions are inconclusive"
        head += f" ({share:.0%}, over --max-inconclusive {max_share:g})"
    return f"{head} ({shown}{more}); the environment failed, not the patches (each record says why)"


def _print_counts(outcome: Evaluation, submissions: int, ledger: str, *, as_json: bool) -> None:
    inconclusive = sum(r.status == "inconclusive" for r in outcome.records)
    if as_json:
        counts = {
            "submissions": submissions,
            "graded": outcome.graded,
            "skipped": outcome.skipped,
            "inconclusive": inconclusive,
            "failed": len(outcome.failed),
            "ledger": ledger,
        }
        print(json.dumps(counts, indent=2))
        return
    print(
        f"{submissions} submissions: {outcome.graded} graded now, {outcome.skipped} already recorded, "
        f"{inconclusive} inconclusive, {len(outcome.failed)} failed; ledger {ledger}"
    )
    for line in outcome.failed:
        print(f"  failed: {for_terminal(line)}", file=sys.stderr)


def _report(args: argparse.Namespace) -> int:
    from gradeflow.evaluation.ledger import Ledger
    from gradeflow.evaluation.report import build_report
    from gradeflow.evaluation.report_html import render_html

    ledger = Ledger(args.ledger)
    try:
        records = ledger.records()
        reviews = ledger.reviews() if args.reviews or args.html else []
        strengths = {digest: found.kill_rate for digest, found in ledger.strengths().items()}
    finally:
        ledger.close()
    by = [name.strip() for name in args.by.split(",") if name.strip()]
    if args.reviews and not args.html:
        return _review_report(args, records, reviews, by)
    pair = tuple(args.compare) if args.compare else None
    report = build_report(records, by, pair=pair, seed=args.seed, strengths=strengths)
    if args.html:
        _write(Path(args.html), render_html(report, records, reviews))
    if args.reviews:
        return _review_report(args, records, reviews, by)
    if args.json:
        print(report.model_dump_json(indent=2))
        return 0
    print(f"{len(records)} records in {ledger.display_url}, by {', '.join(by)}")
    for stats in report.groups:
        label = for_terminal(" / ".join(stats.key.values()))
        mean = "–" if stats.mean_score is None else f"{stats.mean_score:.3f}"
        rate = "–" if stats.pass_rate is None else f"{stats.pass_rate:.2f}"
        ci = _interval(stats.pass_rate_ci)
        reasons = ", ".join(f"{code} ({n})" for code, n in stats.top_reasons[:3]) or "none"
        print(
            f"  {label}: n={stats.n} graded={stats.graded} inconclusive={stats.inconclusive} "
            f"({_share(stats.inconclusive_rate)}) mean={mean} pass={rate}{ci} "
            f"strict pass={_share(stats.strict_pass_rate)}{_interval(stats.strict_pass_rate_ci)} reasons: {reasons}"
        )
        print(f"    {_units(stats)}")
    for comparison in report.comparisons:
        print(for_terminal(comparison.verdict))
    return 0


def _units(stats: GroupStats) -> str:
    """The units behind a group's figures, its clustered SE, detectable difference, pass^k and weak tasks."""
    se = "–" if stats.mean_score_se is None else f"{stats.mean_score_se:.3f}"
    mde = "–" if stats.mde is None else f"{stats.mde:.3f}"
    hat = ", ".join(f"^{k} {v:.2f}" for k, v in stats.pass_hat_k.items()) or "–"
    weak = f"; weak tasks: {for_terminal(', '.join(stats.weak_tasks))}" if stats.weak_tasks else ""
    return (
        f"{stats.tasks} tasks, {stats.graded} runs, {stats.clusters} {stats.cluster_by} clusters; "
        f"mean SE={se} (clustered); pass interval {stats.pass_rate_interval or '–'}; "
        f"detectable difference at 80% power={mde}; pass^k {hat}{weak}"
    )


def _review_report(
    args: argparse.Namespace, records: list[GradeRecord], reviews: list[ReviewRecord], by: list[str]
) -> int:
    from gradeflow.evaluation.reviews import review_report

    found = review_report(records, reviews, by)
    if args.json:
        print(found.model_dump_json(indent=2))
        return 0
    print(f"{len(found.reviewed)} reviewed grades of {len(records)}, by {', '.join(by)}")
    for stats in [*found.groups, found.overall]:
        label = for_terminal(" / ".join(stats.key.values())) or "overall"
        print(
            f"  {label}: reviewed={stats.reviewed} agreement={_share(stats.agreement)} kappa={_share(stats.kappa)} "
            f"timed out={stats.timed_out}"
        )
    if found.disagreements:
        print("disagreements (automatic verdict -> reviewer's):")
    for grade in found.disagreements:
        score = "–" if grade.score is None else f"{grade.score:.3f}"
        verdict = "approve" if grade.passed else "reject"
        line = (
            f"  {grade.task_id} {grade.run_id} [{' / '.join(grade.key.values())}]: score {score} "
            f"{grade.automatic_decision} ({verdict}) -> {grade.final_decision} by {grade.reviewer}; "
            f"reasons: {', '.join(grade.reason_codes) or 'none'}"
        )
        print(for_terminal(line))
    return 0


def _share(rate: float | None) -> str:
    """A rate for the text report; ``strict pass`` counts inconclusive grades as failures."""
    return "–" if rate is None else f"{rate:.2f}"


def _interval(bounds: list[float] | None) -> str:
    return f" [{bounds[0]:.2f}, {bounds[1]:.2f}]" if bounds else ""


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"--html: cannot write {path}: {exc.strerror or exc}") from None
