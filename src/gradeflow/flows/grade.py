"""The ``grade-submission`` flow.

pin → baseline → snapshot → constraints → test evidence → reviewability → hard stops → tests → quality → perf → combine

Test evidence and reviewability run only when the profile reports their dimension; test evidence runs
before the tests step, which restores the patch's test files to the base. Every step logs its outcome
(JSON, redacted) with ``run_id``, ``task_id`` and ``submission_id`` bound.

Once the baseline is healthy, an environment-looking failure in a step over the candidate's tree
(snapshot, test evidence, tests, quality, perf) is attributed (:mod:`gradeflow.tasks.attribution`):
the candidate's when a fresh sandbox works (that step scores 0, ``candidate-broke-sandbox``), else
the environment's (inconclusive). A gate that failed before a later step broke still decides the
grade: it is ``rejected``, never inconclusive.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar, cast

import structlog
from prefect import flow
from prefect.runtime import flow_run
from prefect.states import Completed, State
from prefect.utilities.annotations import opaque

from gradeflow.errors import InfraError, SpecError
from gradeflow.flows.session import factory_in, prepare_base, profile_for
from gradeflow.graders.verdict import gate_decided_result, inconclusive_result, refused_result
from gradeflow.logs import get_logger, redacting
from gradeflow.models import EnvironmentFingerprint, GradeComponent, GradeResult, Submission, TaskSpec
from gradeflow.models.evidence import TestRunEvidence
from gradeflow.profiles import Profile
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.tasks.attribution import attributed
from gradeflow.tasks.baseline import Baseline
from gradeflow.tasks.combine import combine_components, publish_artifacts
from gradeflow.tasks.constraints import check_constraints
from gradeflow.tasks.environment import pin_base
from gradeflow.tasks.hard_stops import check_compatibility, check_data_loss, check_security
from gradeflow.tasks.infrastructure import check_infrastructure
from gradeflow.tasks.perf import run_perf
from gradeflow.tasks.quality import measure_quality
from gradeflow.tasks.repo import BaseRef
from gradeflow.tasks.review import check_reviewability
from gradeflow.tasks.snapshot import Snapshot, discard, take_snapshot
from gradeflow.tasks.tamper_scan import check_tamper
from gradeflow.tasks.test_evidence import check_test_evidence
from gradeflow.tasks.tests import TestsOutcome, acceptance_listener, run_tests

__all__ = ["grade_submission"]


T = TypeVar("T")


def _whole(value: T) -> T:
    """``value`` as a task argument Prefect passes on without walking into it.

    Prefect visits every task parameter to find futures and states; a task spec with hundreds of test
    ids, a baseline holding a parsed report or a large patch would cost seconds per grade. These values
    never hold futures, so the walk finds nothing (the task still receives the value itself).
    """
    return cast(T, opaque(value))


def _outcome(component: GradeComponent) -> dict[str, Any]:
    """What a log line says about a component: numbers and codes, never messages or details."""
    return {
        "score": component.score if component.scored else None,
        "passed": component.passed,
        "reason_codes": component.reason_codes,
    }


class _Progress:
    """What a grade has gathered so far: step timings, components, and the private workspace to discard."""

    def __init__(self, task_spec: TaskSpec, factory: SandboxFactory) -> None:
        self.task_spec = task_spec
        self.factory = factory
        self.timings: dict[str, float] = {}
        self.snapshot: Snapshot | None = None
        self.environment: EnvironmentFingerprint | None = None
        self.components: list[GradeComponent] = []
        self.log = get_logger("gradeflow.grade")

    @contextmanager
    def step(self, name: str) -> Iterator[dict[str, Any]]:
        """Time a step and log its outcome (what the block puts in the yielded dict, or the error type)."""
        outcome: dict[str, Any] = {}
        started = time.perf_counter()
        try:
            yield outcome
        except BaseException as exc:
            outcome["error"] = type(exc).__name__
            raise
        finally:
            self.timings[name] = round(time.perf_counter() - started, 4)
            self.log.info("step", step=name, seconds=self.timings[name], **outcome)

    def component(self, name: str, call: Callable[[], GradeComponent | None]) -> GradeComponent | None:
        """Run a step that yields one component (or none), log it and keep it."""
        with self.step(name) as outcome:
            component = call()
            outcome.update(_outcome(component) if component is not None else {"skipped": True})
        if component is not None:
            self.components.append(component)
        return component

    def candidate(self, name: str, call: Callable[[], GradeComponent | None]) -> GradeComponent | None:
        """:meth:`component` for a step over the candidate's tree: its environment-looking failure is attributed."""
        return self.component(name, lambda: attributed(self.task_spec, name, self.factory, call, lambda c: c))


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
    profile: str | Profile | None = None,
    base: BaseRef | None = None,
) -> GradeResult | State:
    """Grade one submission; an environment failure ends in a Completed state named ``Inconclusive``.

    Log lines carry ``run_id`` (one a caller bound, e.g. an agent run, else this flow run's id),
    ``flow_run_id``, ``task_id`` and ``submission_id``; the task's ``env`` values are redacted. The base and
    root it takes are held by its sandbox factory: a ``sandbox`` given as a factory holds them until its owner
    closes it (a session's, across its grades), one made here until the grade ends.
    """
    policy = profile_for(task_spec, profile)
    run_id = structlog.contextvars.get_contextvars().get("run_id") or flow_run.id
    with (
        factory_in(task_spec, sandbox) as factory,
        structlog.contextvars.bound_contextvars(
            run_id=run_id,
            flow_run_id=flow_run.id,
            task_id=task_spec.task_id,
            submission_id=submission.submission_id,
            profile=policy.name,
        ),
        redacting(task_spec.candidate_env().values()),
    ):
        result = _graded_or_inconclusive(task_spec, submission, factory, policy, base)
    publish_artifacts(result)
    if result.status == "inconclusive":
        return Completed(name="Inconclusive", message=result.summary(), data=result)
    return result


def _graded_or_inconclusive(
    task_spec: TaskSpec, submission: Submission, factory: SandboxFactory, policy: Profile, base: BaseRef | None
) -> GradeResult:
    progress = _Progress(task_spec, factory)
    progress.log.info("grade started", sandbox=factory.kind)
    try:
        result = _grade(task_spec, submission, policy, progress, base)
    except SpecError:
        raise
    except InfraError as exc:
        result = _unfinished(task_spec, submission, policy, progress, exc.reason_code, str(exc))
    except Exception as exc:  # the one boundary where a bug becomes a recorded outcome
        message = f"gradeflow failed internally: {type(exc).__name__}: {exc}"
        result = _unfinished(task_spec, submission, policy, progress, "internal-error", message)
    finally:
        discard(progress.snapshot.workspace if progress.snapshot else None)
    progress.log.info(
        "grade finished",
        status=result.status,
        score=result.score,
        decision=result.decision,
        reason_codes=result.reason_codes,
        dimensions=result.dimensions,
    )
    return result.model_copy(update={"timings": progress.timings})


def _unfinished(
    task_spec: TaskSpec, submission: Submission, policy: Profile, progress: _Progress, code: str, message: str
) -> GradeResult:
    """A grade a step could not finish: decided by a gate that already failed, else inconclusive."""
    snapshot = progress.snapshot
    if snapshot is not None and snapshot.refusal is None:
        decided = gate_decided_result(
            task_spec,
            submission.submission_id,
            progress.components,
            policy,
            patch=snapshot.patch,
            changes=snapshot.changes,
            environment=progress.environment,
            unfinished=f"{code}: {message}",
        )
        if decided is not None:
            return decided
    return inconclusive_result(
        task_spec,
        submission.submission_id,
        code,
        message,
        policy.name,
        patch=snapshot.patch if snapshot else (submission.diff() or ""),
        changes=snapshot.changes if snapshot else (),
        dimensions=dict.fromkeys(policy.dimensions),
    )


def _grade(
    task_spec: TaskSpec, submission: Submission, policy: Profile, progress: _Progress, base: BaseRef | None
) -> GradeResult:
    factory = progress.factory
    with progress.step("baseline"):
        environment, baseline = prepare_base(task_spec, factory, base or pin_base(task_spec))
        progress.environment = environment
    with progress.step("snapshot") as outcome:
        snapshot = progress.snapshot = attributed(
            task_spec,
            "snapshot",
            factory,
            lambda: take_snapshot(_whole(task_spec), submission, _whole(baseline)),
            lambda broken: Snapshot(
                workspace=None,
                patch=submission.diff() or "",
                refusal=broken.reason_codes[0],
                message=broken.messages[0],
            ),
        )
        outcome.update(files_changed=len(snapshot.changes), refusal=snapshot.refusal)
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
    constraints = progress.component("constraints", lambda: check_constraints(_whole(task_spec), _whole(snapshot)))
    infrastructure = progress.component(
        "test_infrastructure", lambda: check_infrastructure(_whole(task_spec), _whole(snapshot), _whole(baseline))
    )
    tamper = progress.component("tamper", lambda: check_tamper(_whole(task_spec), _whole(snapshot), _whole(baseline)))
    extra = _rubric_evidence(task_spec, snapshot, baseline, factory, policy, progress)
    with progress.step("tests") as outcome:
        tests = attributed(
            task_spec,
            "tests",
            factory,
            lambda: run_tests(_whole(task_spec), _whole(snapshot), _whole(baseline), factory),
            lambda broken: TestsOutcome(component=broken, evidence=TestRunEvidence(), restored=[]),
        )
        outcome.update(_outcome(tests.component))
    progress.components.append(tests.component)
    if (listener := acceptance_listener.get()) is not None:
        listener(submission.submission_id, tests.evidence)
    quality = progress.candidate("quality", lambda: measure_quality(_whole(task_spec), _whole(snapshot)))
    perf = progress.candidate("perf", lambda: run_perf(_whole(task_spec), _whole(snapshot), _whole(baseline), factory))
    with progress.step("combine") as outcome:
        found = (constraints, infrastructure, tamper, tests.component, quality, perf, *extra)
        result = combine_components(
            _whole(task_spec),
            submission.submission_id,
            _whole(snapshot),
            _whole([c for c in found if c is not None]),
            _whole(tests),
            policy,
            environment,
        )
        outcome.update(score=result.score, decision=result.decision)
    return result


def _rubric_evidence(
    task_spec: TaskSpec,
    snapshot: Snapshot,
    baseline: Baseline,
    factory: SandboxFactory,
    policy: Profile,
    progress: _Progress,
) -> list[GradeComponent | None]:
    """The patch's own tests and reviewability, for the dimensions the profile reports (before the tests step)."""
    found: list[GradeComponent | None] = []
    if policy.reports("test_evidence"):
        found.append(
            progress.candidate(
                "test_evidence",
                lambda: check_test_evidence(_whole(task_spec), _whole(snapshot), _whole(baseline), factory),
            )
        )
    if policy.reports("reviewability"):
        found.append(
            progress.component(
                "reviewability",
                lambda: check_reviewability(_whole(task_spec), _whole(snapshot), _whole(baseline), policy.review),
            )
        )
    # The hard-stop detectors run where the profile gates on their code (rubric, strict), not in default.
    for code, name, check in _DETECTORS:
        if code in policy.hard_gates:
            found.append(
                progress.component(name, partial(check, _whole(task_spec), _whole(snapshot), _whole(baseline)))
            )
    return found


_DETECTORS = (
    ("security-violation", "security", check_security),
    ("compatibility-break", "compatibility", check_compatibility),
    ("data-loss", "data-loss", check_data_loss),
)
