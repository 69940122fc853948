"""The ``grade-submission`` flow: pin → baseline → snapshot → constraints → tests → quality → perf → combine."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prefect import flow
from prefect.states import Completed, State

from gradeflow.errors import InfraError, SpecError
from gradeflow.models import GradeResult, Submission, TaskSpec
from gradeflow.policy import Profile, load_profile
from gradeflow.results import inconclusive_result, refused_result
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.sandbox.factory import sandbox_factory
from gradeflow.tasks.baseline import prepare_baseline
from gradeflow.tasks.combine import combine_components, publish_artifacts
from gradeflow.tasks.constraints import check_constraints
from gradeflow.tasks.environment import describe_environment, pin_base
from gradeflow.tasks.perf import run_perf
from gradeflow.tasks.quality import measure_quality
from gradeflow.tasks.snapshot import Snapshot, discard, take_snapshot
from gradeflow.tasks.tests import run_tests

__all__ = ["grade_submission"]


class _Progress:
    """What a grade has gathered so far: step timings and the private workspace to discard."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self.snapshot: Snapshot | None = None

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = round(time.perf_counter() - started, 4)


@flow(
    name="grade-submission",
    flow_run_name="grade-{task_spec.task_id}-{submission.submission_id}",
    persist_result=False,
    validate_parameters=False,
)
def grade_submission(
    task_spec: TaskSpec,
    submission: Submission,
    sandbox: str | SandboxFactory | None = None,
    profile: str | None = None,
) -> GradeResult | State:
    """Grade one submission; an environment failure ends in a Completed state named ``Inconclusive``."""
    policy = load_profile(profile or task_spec.grading.profile)
    factory = sandbox if isinstance(sandbox, SandboxFactory) else sandbox_factory(task_spec.environment, sandbox)
    progress = _Progress()
    try:
        result = _grade(task_spec, submission, factory, policy, progress)
    except SpecError:
        raise
    except InfraError as exc:
        result = _inconclusive(task_spec, submission, policy, progress, exc.reason_code, str(exc))
    except Exception as exc:  # the one boundary where a bug becomes a recorded outcome
        message = f"gradeflow failed internally: {type(exc).__name__}: {exc}"
        result = _inconclusive(task_spec, submission, policy, progress, "internal-error", message)
    finally:
        discard(progress.snapshot.workspace if progress.snapshot else None)
    result = result.model_copy(update={"timings": progress.timings})
    publish_artifacts(result)
    if result.status == "inconclusive":
        return Completed(name="Inconclusive", message=result.summary(), data=result)
    return result


def _inconclusive(
    task_spec: TaskSpec, submission: Submission, policy: Profile, progress: _Progress, code: str, message: str
) -> GradeResult:
    snapshot = progress.snapshot
    return inconclusive_result(
        task_spec,
        submission.submission_id,
        code,
        message,
        policy.name,
        patch=snapshot.patch if snapshot else (submission.patch or ""),
        changes=snapshot.changes if snapshot else (),
    )


def _grade(
    task_spec: TaskSpec, submission: Submission, factory: SandboxFactory, policy: Profile, progress: _Progress
) -> GradeResult:
    with progress.step("baseline"):
        environment = describe_environment(task_spec, factory)
        baseline = prepare_baseline(task_spec, pin_base(task_spec), environment, factory)
    with progress.step("snapshot"):
        snapshot = progress.snapshot = take_snapshot(task_spec, submission, baseline)
    if snapshot.refusal:
        return refused_result(
            task_spec,
            submission.submission_id,
            snapshot.refusal,
            snapshot.message,
            policy,
            patch=snapshot.patch,
            environment=environment,
        )
    with progress.step("constraints"):
        constraints = check_constraints(task_spec, snapshot)
    with progress.step("tests"):
        tests = run_tests(task_spec, snapshot, baseline, factory)
    with progress.step("quality"):
        quality = measure_quality(task_spec, snapshot)
    with progress.step("perf"):
        perf = run_perf(task_spec, snapshot, baseline, factory)
    with progress.step("combine"):
        components = [c for c in (constraints, tests.component, quality, perf) if c is not None]
        result = combine_components(
            task_spec, submission.submission_id, snapshot, components, tests, policy, environment
        )
    return result
