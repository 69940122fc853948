"""How much the Prefect engine adds to one warm grade.

Grades examples/calc's reference patch N times through the ``grade-submission`` flow (baseline
cached after the first run) and N times through the same task functions called in-process
(``task.fn``, baseline computed once), then prints the mean seconds of each and the difference.

    python bench/overhead.py [N]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_HOME", tempfile.mkdtemp(prefix="gradeflow-bench-"))

from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

from gradeflow.api import make_submission
from gradeflow.flows.grade import grade_submission
from gradeflow.logs import quiet_prefect
from gradeflow.models import GradeResult, Submission, TaskSpec
from gradeflow.profiles import load_profile
from gradeflow.sandbox.local import LocalSandboxFactory
from gradeflow.spec import load_task
from gradeflow.tasks import baseline, combine, constraints, environment, perf, quality, snapshot, tests

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "calc"


def _plain(task: TaskSpec, submission: Submission, base: baseline.Baseline) -> GradeResult:
    factory = LocalSandboxFactory()
    env = environment.describe_environment.fn(task, factory)
    snap = snapshot.take_snapshot.fn(task, submission, base)
    try:
        comps = [constraints.check_constraints.fn(task, snap)]
        outcome = tests.run_tests.fn(task, snap, base, factory)
        comps += [
            c
            for c in (
                outcome.component,
                quality.measure_quality.fn(task, snap),
                perf.run_perf.fn(task, snap, base, factory),
            )
            if c
        ]
        return combine.combine_components.fn(
            task, submission.submission_id, snap, comps, outcome, load_profile("default"), env
        )
    finally:
        snapshot.discard(snap.workspace)


def _time(label: str, n: int, grade_once: object) -> list[float]:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        result = grade_once()  # type: ignore[operator]
        samples.append(time.perf_counter() - started)
        assert result.passed, result.summary()
    print(f"{label:>10}: mean {statistics.mean(samples):.3f} s  min {min(samples):.3f} s  (n={n})")
    return samples


def main(n: int) -> None:
    quiet_prefect()
    task = load_task(EXAMPLE / "task.yaml")
    submission = make_submission(patch=EXAMPLE / "reference.diff", submission_id="bench")
    factory = LocalSandboxFactory()
    env = environment.describe_environment.fn(task, factory)
    base = baseline.prepare_baseline.fn(task, environment.pin_base.fn(task), env, factory)
    plain = _time("in-process", n, lambda: _plain(task, submission, base))
    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        grade_submission(task, submission)  # warm-up: starts the server and caches the baseline
        flow = _time("flow", n, lambda: grade_submission(task, submission))
    extra = statistics.mean(flow) - statistics.mean(plain)
    print(f"overhead: {extra:.3f} s per warm submission (ratio {statistics.mean(flow) / statistics.mean(plain):.2f}x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
