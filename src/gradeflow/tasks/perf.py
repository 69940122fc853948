"""Task: interleaved benchmark runs on a pristine copy and on the candidate, scored by PerfGrader."""

from __future__ import annotations

import json
import math
import shutil

from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.errors import BaselineBroken
from gradeflow.evidence import PerfEvidence
from gradeflow.graders.base import GradingContext
from gradeflow.graders.composite import safe_grade
from gradeflow.graders.perf import PerfGrader
from gradeflow.models import GradeComponent, PerfSpec, TaskSpec
from gradeflow.sandbox.base import CommandResult, Sandbox, SandboxFactory
from gradeflow.tasks._retry import INFRA_RETRIES, retry_on_infra
from gradeflow.tasks._testrun import run_setup
from gradeflow.tasks.baseline import Baseline, working_copy
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["run_perf", "timing_of"]


def timing_of(spec: PerfSpec, result: CommandResult) -> float | str:
    """Seconds taken by one benchmark run, or why there is no usable figure."""
    if not result.ok:
        return f"exit code {result.exit_code}" + (" (timed out)" if result.timed_out else "")
    if spec.timing == "wall":
        return result.duration
    lines = result.stdout.strip().splitlines()
    try:
        seconds = float(json.loads(lines[-1])["seconds"])
    except (IndexError, ValueError, KeyError, TypeError):
        return 'the last stdout line is not {"seconds": x}'
    return seconds if math.isfinite(seconds) and seconds > 0 else f"reported {seconds!r} seconds"


@task(
    name="perf",
    cache_policy=NO_CACHE,
    retries=INFRA_RETRIES,
    retry_delay_seconds=1,
    retry_condition_fn=retry_on_infra,
)
def run_perf(
    task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline, sandboxes: SandboxFactory
) -> GradeComponent | None:
    """The perf component, or ``None`` when the task declares no benchmark."""
    if task_spec.perf is None:
        return None
    assert snapshot.workspace is not None
    if not snapshot.changes:
        evidence = PerfEvidence(unchanged=True)
        return safe_grade(PerfGrader(), GradingContext(task=task_spec, workspace=snapshot.view(), perf=evidence))
    base_copy = working_copy(baseline.pristine)
    try:
        with sandboxes.open(base_copy) as base_box, sandboxes.open(snapshot.workspace) as cand_box:
            evidence = _interleave(task_spec, base_box, cand_box)
    finally:
        shutil.rmtree(base_copy.parent, ignore_errors=True)
    return safe_grade(PerfGrader(), GradingContext(task=task_spec, workspace=snapshot.view(), perf=evidence))


def _interleave(task_spec: TaskSpec, base_box: Sandbox, cand_box: Sandbox) -> PerfEvidence:
    spec = task_spec.perf
    assert spec is not None
    setup = run_setup(task_spec, base_box)
    if setup is not None and not setup.ok:
        raise BaselineBroken(
            f"task {task_spec.task_id}: setup fails on the pristine base for the benchmark",
            reason_code="setup-failed",
        )
    cand_setup = run_setup(task_spec, cand_box)
    if cand_setup is not None and not cand_setup.ok:
        return PerfEvidence(errors=[f"setup failed on the submission (exit {cand_setup.exit_code})"])
    evidence = PerfEvidence()
    for run in range(1, spec.runs + 1):
        base_time = timing_of(spec, base_box.run(spec.command, env=task_spec.candidate_env(), timeout=spec.timeout))
        if isinstance(base_time, str):
            raise BaselineBroken(f"task {task_spec.task_id}: the benchmark fails on the pristine base: {base_time}")
        evidence.baseline.append(round(base_time, 6))
        cand_time = timing_of(spec, cand_box.run(spec.command, env=task_spec.candidate_env(), timeout=spec.timeout))
        if isinstance(cand_time, str):
            evidence.errors.append(f"candidate run {run}: {cand_time}")
            break
        evidence.candidate.append(round(cand_time, 6))
    return evidence
