"""The ``task-strength`` flow: the reference and each wrong patch graded by ``grade-submission``, one base."""

from __future__ import annotations

import time

from prefect import flow
from pydantic import BaseModel

from gradeflow.flows.session import factory_in, prepare_base
from gradeflow.models import GradeResult, Submission, TaskSpec
from gradeflow.profiles import Profile
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.tasks.environment import pin_base
from gradeflow.tasks.repo import BaseRef

__all__ = ["TimedGrade", "task_strength"]


class TimedGrade(BaseModel):
    """One patch's grade and the seconds its ``grade-submission`` run took."""

    submission_id: str
    result: GradeResult
    seconds: float


@flow(
    name="task-strength",
    flow_run_name="strength-{task_spec.task_id}",
    persist_result=False,
    validate_parameters=False,
)
def task_strength(
    task_spec: TaskSpec,
    patches: list[tuple[str, str]],
    sandbox: str | SandboxFactory | None = None,
    profile: str | Profile | None = None,
    base: BaseRef | None = None,
) -> list[TimedGrade]:
    """Grade every ``(submission_id, patch)`` against one pinned base and baseline, in order; the base and root
    held by one sandbox factory throughout (see :func:`~gradeflow.flows.session.factory_in`)."""
    with factory_in(task_spec, sandbox) as factory:
        return _graded(task_spec, patches, factory, profile, base or pin_base(task_spec))


def _graded(
    task_spec: TaskSpec,
    patches: list[tuple[str, str]],
    factory: SandboxFactory,
    profile: str | Profile | None,
    base: BaseRef,
) -> list[TimedGrade]:
    from gradeflow.flows.grade import grade_submission

    prepare_base(task_spec, factory, base)
    graded = []
    for submission_id, patch in patches:
        started = time.perf_counter()
        outcome = grade_submission(task_spec, Submission.of_patch(submission_id, patch), factory, profile, base)
        result = outcome if isinstance(outcome, GradeResult) else outcome.result()
        assert isinstance(result, GradeResult)
        graded.append(TimedGrade(submission_id=submission_id, result=result, seconds=time.perf_counter() - started))
    return graded
