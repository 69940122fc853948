"""How much the Prefect engine adds to one warm grade.

Grades examples/calc's reference patch N times through the ``grade-submission`` flow (baseline
cached by a warm-up run) and N times through the same task functions called in-process (``task.fn``,
baseline computed once), in interleaved pairs, both in the task's own sandbox (isolated, the default),
then prints the mean seconds of each and the difference. The flow runs on gradeflow's local Prefect
server (the one the CLI and ``grade()`` use), started under a temporary ``GRADEFLOW_HOME`` and stopped
at the end, unless ``PREFECT_API_URL`` names one. The in-process side runs the steps that decide this
grade (constraints, tests, quality, perf, combine); the flow adds Prefect's runs and the integrity steps.
gradeflow's own log lines are kept to errors so the figures stand alone (the warm-up's flow rebuilds,
with a warning, the cached baseline the in-process side's base run rewrote).

    python bench/overhead.py [N]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_HOME", tempfile.mkdtemp(prefix="gradeflow-bench-"))
os.environ.setdefault("GRADEFLOW_LOG_LEVEL", "ERROR")

from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

from gradeflow.api import make_submission
from gradeflow.engine.local_server import stop_server, use_local_server
from gradeflow.flows.grade import grade_submission
from gradeflow.flows.session import factory_for
from gradeflow.logs import quiet_prefect
from gradeflow.models import GradeResult, Submission, TaskSpec
from gradeflow.profiles import load_profile
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.spec import load_task
from gradeflow.tasks import baseline, combine, constraints, environment, perf, quality, snapshot, tests

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "calc"


def _plain(task: TaskSpec, submission: Submission, base: baseline.Baseline, factory: SandboxFactory) -> GradeResult:
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


def _timed(grade_once: Callable[[], GradeResult]) -> float:
    started = time.perf_counter()
    result = grade_once()
    assert result.passed, result.summary()
    return time.perf_counter() - started


def _show(label: str, samples: list[float]) -> None:
    print(f"{label:>10}: mean {statistics.mean(samples):.3f} s  min {min(samples):.3f} s  (n={len(samples)})")


def main(n: int) -> None:
    quiet_prefect()
    server = use_local_server()  # the local server the CLI and the Python API use
    print(f"Prefect server: {server.url if server else os.environ['PREFECT_API_URL']}")
    task = load_task(EXAMPLE / "task.yaml")
    submission = make_submission(patch=EXAMPLE / "reference.diff", submission_id="bench")
    factory = factory_for(task, None)
    env = environment.describe_environment.fn(task, factory)
    base = baseline.prepare_baseline.fn(task, environment.pin_base.fn(task), env, factory)
    plain, flow = [], []
    try:
        with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            grade_submission(task, submission, sandbox=factory)  # warm-up: caches the baseline
            for _ in range(n):  # interleaved, so a busy machine weighs on both sides alike
                plain.append(_timed(lambda: _plain(task, submission, base, factory)))
                flow.append(_timed(lambda: grade_submission(task, submission, sandbox=factory)))  # type: ignore[arg-type,return-value]
    finally:
        if server is not None and server.started:
            stop_server()
    _show("in-process", plain)
    _show("flow", flow)
    extra = statistics.mean(flow) - statistics.mean(plain)
    print(f"overhead: {extra:.3f} s per warm submission (ratio {statistics.mean(flow) / statistics.mean(plain):.2f}x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
