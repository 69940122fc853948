"""How much the docker sandbox adds to one warm grade, compared with the local sandbox.

Grades examples/calc's reference patch N times under each sandbox through the ``grade-submission``
flow, after one warm-up grade per sandbox (which starts the Prefect server and caches that sandbox's
baseline, and probes the image once), then prints the mean and minimum seconds per grade, the mean
seconds of the tests step (the only step that opens a container on this example) and the difference.

    python bench/docker_overhead.py [N]          (default N=5; target: docker adds <= 1.5 s per grade)
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
from gradeflow.spec import load_task

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "calc"
TARGET = 1.5


def _grade(task: TaskSpec, submission: Submission, sandbox: str) -> GradeResult:
    result = grade_submission(task, submission, sandbox=sandbox)
    assert isinstance(result, GradeResult) and result.passed, getattr(result, "summary", lambda: result)()
    return result


def _measure(task: TaskSpec, submission: Submission, sandbox: str, n: int) -> tuple[list[float], list[float]]:
    """Seconds per grade and seconds of the tests step, over ``n`` warm grades."""
    _grade(task, submission, sandbox)
    totals, steps = [], []
    for _ in range(n):
        started = time.perf_counter()
        result = _grade(task, submission, sandbox)
        totals.append(time.perf_counter() - started)
        steps.append(result.timings.get("tests", 0.0))
    print(
        f"{sandbox:>7}: mean {statistics.mean(totals):.3f} s  min {min(totals):.3f} s  "
        f"tests step {statistics.mean(steps):.3f} s  (n={n})"
    )
    return totals, steps


def main(n: int) -> int:
    quiet_prefect()
    task = load_task(EXAMPLE / "task.yaml")
    submission = make_submission(patch=EXAMPLE / "reference.diff", submission_id="bench")
    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        local, local_steps = _measure(task, submission, "local", n)
        docker, docker_steps = _measure(task, submission, "docker", n)
    added = statistics.mean(docker) - statistics.mean(local)
    step = statistics.mean(docker_steps) - statistics.mean(local_steps)
    print(
        f"docker adds {added:+.3f} s per grade (tests step {step:+.3f} s); "
        f"target <= {TARGET} s: {'met' if added <= TARGET else 'MISSED'}"
    )
    return 0 if added <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
