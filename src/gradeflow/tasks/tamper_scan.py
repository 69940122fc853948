"""Task: the tamper scan of the patch (:mod:`gradeflow.integrity.tamper_scan`), then its gate."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.graders.base import GradingContext
from gradeflow.graders.tamper import TamperGrader
from gradeflow.integrity.tamper_scan import SCAN_BUDGET_SECONDS, scan_patch
from gradeflow.models import GradeComponent, TaskSpec
from gradeflow.models.evidence import TamperEvidence
from gradeflow.tasks._functions import touched_lines
from gradeflow.tasks.baseline import Baseline
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["check_tamper", "scan_snapshot"]


@task(name="tamper", cache_policy=NO_CACHE)
def check_tamper(task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline) -> GradeComponent:
    """The tamper gate: the patch's findings against the pristine base."""
    evidence = scan_snapshot(task_spec, snapshot, baseline.pristine)
    return TamperGrader(evidence).grade(GradingContext(task=task_spec, workspace=snapshot.view()))


def scan_snapshot(
    task_spec: TaskSpec, snapshot: Snapshot, pristine: Path, budget: float = SCAN_BUDGET_SECONDS
) -> TamperEvidence:
    """The findings the snapshot's patch adds to its changed non-test files."""
    if snapshot.workspace is None:
        raise ValueError("a refused submission has no workspace to scan")
    added_at = {path: lines.added for path, lines in touched_lines(snapshot.patch).items()}
    return scan_patch(task_spec, snapshot.workspace, snapshot.changes, added_at, pristine, budget)
