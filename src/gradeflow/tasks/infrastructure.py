"""Task: which test infrastructure the patch edited (the ``test_infrastructure`` gate)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.graders.base import GradingContext
from gradeflow.graders.infrastructure import InfrastructureGrader
from gradeflow.integrity.sealing import infrastructure_edits
from gradeflow.models import GradeComponent, TaskSpec
from gradeflow.tasks.baseline import Baseline
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["check_infrastructure"]


@task(name="test-infrastructure", cache_policy=NO_CACHE)
def check_infrastructure(task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline) -> GradeComponent:
    assert snapshot.workspace is not None
    edits = infrastructure_edits(task_spec, snapshot.changes, snapshot.workspace, baseline.pristine)
    grader = InfrastructureGrader(edits)
    return grader.grade(GradingContext(task=task_spec, workspace=snapshot.view()))
