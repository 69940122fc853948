"""Time per submission of ``evaluate`` at concurrency 1 and 2, and the share spent outside the tests.

Grades a suite (default: ``examples/suite.yaml``, every example × 3 models × 3 runs) into a fresh SQLite
ledger once per concurrency level, on the local sandbox, after one warm-up grade per task so every
level starts with cached baselines. For each level it prints the wall time per submission (what a
user waits), then, from the ledger's per-step timings, the mean latency of one grade and how it
splits: the test step, the perf benchmark step, the other grading steps, and the rest (Prefect's
flow and task runs, the subflow per grade, the ledger write).

    python bench/evaluate_throughput.py [SUITE] [--levels 1 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_HOME", tempfile.mkdtemp(prefix="gradeflow-bench-"))

from gradeflow.evaluation.ledger import GradeRecord, Ledger
from gradeflow.evaluation.suite import Suite, load_suite
from gradeflow.flows.evaluate import evaluate
from gradeflow.logs import quiet_prefect

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
STEPS = ("baseline", "snapshot", "constraints", "tests", "quality", "perf", "combine")


def _run(suite: Suite, folder: Path, name: str, concurrency: int) -> tuple[float, list[GradeRecord]]:
    ledger = Ledger(f"sqlite:///{folder / f'{name}.db'}")
    started = time.perf_counter()
    outcome = evaluate(suite, ledger, concurrency=concurrency, show_progress=False)
    wall = time.perf_counter() - started
    ledger.close()
    if outcome.failed:
        raise SystemExit(f"{len(outcome.failed)} submissions failed: {outcome.failed[:3]}")
    return wall, outcome.records


def _split(records: list[GradeRecord]) -> dict[str, float]:
    def mean(key: str) -> float:
        return statistics.fmean(r.timings.get(key, 0.0) for r in records)

    total, tests, perf = mean("total"), mean("tests"), mean("perf")
    steps = sum(mean(step) for step in STEPS)
    return {
        "total": total,
        "tests": tests,
        "perf": perf,
        "other_steps": steps - tests - perf,
        "orchestration": total - steps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", nargs="?", default=str(EXAMPLES / "suite.yaml"))
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    quiet_prefect()
    suite = load_suite(args.suite)
    folder = Path(tempfile.mkdtemp(prefix="gradeflow-bench-ledgers-"))
    first = {item.task_id: item for item in reversed(suite.items)}
    _run(suite.model_copy(update={"items": list(first.values())}), folder, "warm-up", 1)
    print(f"suite {args.suite}: {len(suite.items)} submissions on {len(suite.tasks)} tasks, {os.cpu_count()} CPUs")
    for level in args.levels:
        wall, records = _run(suite, folder, f"c{level}", level)
        split = _split(records)
        outside = 1 - split["tests"] / split["total"]
        print(
            f"concurrency {level}: {wall / len(records):.2f} s per submission (wall {wall:.1f} s); one grade takes "
            f"{split['total']:.2f} s: tests {split['tests']:.2f}, perf {split['perf']:.2f}, other steps "
            f"{split['other_steps']:.2f}, orchestration {split['orchestration']:.2f}; "
            f"{outside:.0%} of it outside the tests"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
