"""Task: the constraints gate, recorded before the test step restores protected files."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.graders.base import GradingContext
from gradeflow.graders.composite import safe_grade
from gradeflow.graders.constraints import ConstraintGrader
from gradeflow.models import GradeComponent, TaskSpec
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["check_constraints"]


@task(name="constraints", cache_policy=NO_CACHE)
def check_constraints(task_spec: TaskSpec, snapshot: Snapshot) -> GradeComponent:
    return safe_grade(ConstraintGrader(), GradingContext(task=task_spec, workspace=snapshot.view()))
