"""Task: reviewability evidence (diff size, scope, the touched functions before and after), then its grade."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.graders.base import GradingContext
from gradeflow.graders.reviewability import ReviewabilityGrader
from gradeflow.models import GradeComponent, TaskSpec
from gradeflow.models.evidence import FunctionChange
from gradeflow.models.globs import matches_any
from gradeflow.profiles import ReviewPolicy
from gradeflow.tasks._functions import touched_lines
from gradeflow.tasks._sources import file_functions
from gradeflow.tasks.baseline import Baseline
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["check_reviewability", "touched_source_functions"]


def touched_source_functions(task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline) -> list[FunctionChange]:
    """Touched functions of the changed non-test Python files (files that do not parse are left out)."""
    view, lines = snapshot.view(), touched_lines(snapshot.patch)
    found: list[FunctionChange] = []
    for change in snapshot.changes:
        skip = change.status == "removed" or change.binary or not change.path.endswith(".py")
        if skip or matches_any(change.path, task_spec.tests.test_files):
            continue
        functions = file_functions(change, view, baseline.pristine, lines.get(change.path))
        if functions is not None:
            found += functions.touched
    return found


@task(name="reviewability", cache_policy=NO_CACHE)
def check_reviewability(
    task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline, policy: ReviewPolicy
) -> GradeComponent:
    """The reviewability component, scored by the profile's ``review`` policy."""
    context = GradingContext(
        task=task_spec,
        workspace=snapshot.view(),
        changed_functions=touched_source_functions(task_spec, snapshot, baseline),
    )
    return ReviewabilityGrader(policy).grade(context)
