"""The ``validate-task`` flow: is a task spec sound before agents are graded against it?

Problems: a ``fail_to_pass`` test that passes on the base, a ``pass_to_pass`` test that does not, an
empty submission scoring above 0, a reference patch that does not pass, and (with ``repeat`` > 1) a
scored test whose outcome changes between repeated runs of the same workspace and is not quarantined.
"""

from __future__ import annotations

import threading
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture
from pydantic import BaseModel, Field

from gradeflow.flows.session import factory_in, prepare_base
from gradeflow.models import GradeResult, Submission, TaskSpec
from gradeflow.models.testids import is_doctest_id
from gradeflow.profiles import Profile
from gradeflow.sandbox.base import Sandbox, SandboxDescription, SandboxFactory
from gradeflow.tasks.environment import pin_base
from gradeflow.tasks.flaky import FlakyTest, flaky_tests, repeat_tests
from gradeflow.tasks.repo import BaseRef
from gradeflow.tasks.tests import acceptance_listener

__all__ = [
    "BASELINE_ID",
    "EMPTY_ID",
    "REFERENCE_ID",
    "ValidationReport",
    "base_problems",
    "doctest_warnings",
    "perf_warnings",
    "validate_task",
]

BASELINE_ID = "baseline"
"""What :data:`~gradeflow.tasks.tests.acceptance_listener` is told the baseline's run as."""
EMPTY_ID = "empty"
"""The submission id of the empty submission a validation grades."""
REFERENCE_ID = "reference"
"""The submission id of the reference patch a validation grades."""


class ValidationReport(BaseModel):
    """Every problem found, not only the first."""

    task_id: str
    problems: list[str] = Field(default_factory=list)
    base_outcomes: dict[str, str] = Field(default_factory=dict)
    empty: GradeResult | None = None
    reference: GradeResult | None = None
    repeat: int = 1
    """How many times the tests ran on the base (and on the reference) to find flaky tests."""
    flaky: list[FlakyTest] = Field(default_factory=list)
    """Tests whose outcome changed between those runs, quarantined or not."""
    warnings: list[str] = Field(default_factory=list)
    """What is sound but weak (e.g. a fail_to_pass doctest the candidate can edit); never makes it invalid."""

    @property
    def valid(self) -> bool:
        return not self.problems


def base_problems(task: TaskSpec, outcomes: dict[str, str]) -> list[str]:
    """fail_to_pass tests that do not fail on the base, pass_to_pass tests that do not pass."""
    problems = [
        f"fail_to_pass {t} does not fail on the base (it is {outcomes.get(t, 'missing')})"
        for t in task.tests.fail_to_pass
        if t not in task.tests.quarantine and outcomes.get(t, "missing") == "passed"
    ]
    problems += [
        f"pass_to_pass {t} does not pass on the base (it is {outcomes.get(t, 'missing')})"
        for t in task.tests.pass_to_pass
        if t not in task.tests.quarantine and outcomes.get(t, "missing") not in ("passed", "skipped", "xfailed")
    ]
    return problems


def doctest_warnings(task: TaskSpec) -> list[str]:
    """A warning per fail_to_pass doctest: its expected output lives in the file the candidate edits."""
    return [
        f"fail_to_pass {t} is a doctest: its expected output lives in the source the candidate edits, "
        "so nothing can seal it; prefer a test in a test file"
        for t in task.tests.fail_to_pass
        if is_doctest_id(t)
    ]


def perf_warnings(task: TaskSpec) -> list[str]:
    """A warning when the benchmark's input is fixed: neither ``perf.command`` nor ``perf.check`` has a
    ``{seed}``, so a patch that recognises the one input (memoises its answer) is timed as a speed-up."""
    perf = task.perf
    if perf is None or "{seed}" in perf.command or "{seed}" in (perf.check or ""):
        return []
    return [
        "perf.command has no {seed}: the benchmark's input is fixed, so a patch that memoises its answer scores "
        "as a speed-up; pass a seed (python bench.py {seed}) and derive the input from it"
    ]


def _empty_problems(result: GradeResult) -> list[str]:
    if result.status == "inconclusive":
        return [f"the empty submission is inconclusive: {'; '.join(result.messages)}"]
    if not result.score:
        return []
    lenient = [c.name for c in result.components if c.role == "objective" and c.score > 0]
    return [f"the empty submission scores {result.score:.3f}, not 0: let through by {', '.join(lenient)}"]


def _reference_problems(result: GradeResult) -> list[str]:
    if result.passed:
        return []
    why = "; ".join(m for c in result.components for m in c.messages if not c.passed) or "; ".join(result.messages)
    return [f"the reference patch does not pass ({result.summary()}): {why}"]


@task(name="validation-grade", cache_policy=NO_CACHE, task_run_name="grade-{submission.submission_id}")
def validation_grade(
    task_spec: TaskSpec,
    submission: Submission,
    factory: SandboxFactory,
    profile: str | Profile | None,
    base: BaseRef,
) -> GradeResult:
    """One submission graded through the ``grade-submission`` subflow (an inconclusive grade included)."""
    from gradeflow.flows.grade import grade_submission

    return _as_result(grade_submission(task_spec, submission, factory, profile, base))


@flow(
    name="validate-task",
    flow_run_name="validate-{task_spec.task_id}",
    persist_result=False,
    validate_parameters=False,
)
def validate_task(
    task_spec: TaskSpec,
    reference: str | None = None,
    sandbox: str | SandboxFactory | None = None,
    profile: str | Profile | None = None,
    repeat: int = 1,
    base: BaseRef | None = None,
) -> ValidationReport:
    """Check the base, an empty submission, the reference patch and (``repeat`` > 1) flaky tests; the base and
    root are held by one sandbox factory for the whole validation (see :func:`~gradeflow.flows.session.factory_in`)."""
    with factory_in(task_spec, sandbox) as factory:
        return _validated(task_spec, reference, factory, profile, repeat, base or pin_base(task_spec))


def _validated(
    task_spec: TaskSpec,
    reference: str | None,
    factory: SandboxFactory,
    profile: str | Profile | None,
    repeat: int,
    base: BaseRef,
) -> ValidationReport:
    _, baseline = prepare_base(task_spec, factory, base)
    if (listener := acceptance_listener.get()) is not None:
        listener(BASELINE_ID, baseline.tests)
    report = ValidationReport(
        task_id=task_spec.task_id,
        base_outcomes=dict(baseline.tests.outcomes),
        problems=base_problems(task_spec, dict(baseline.tests.outcomes)),
        warnings=[*doctest_warnings(task_spec), *perf_warnings(task_spec)],
    )
    grades = _grade_at_once(task_spec, reference, factory, profile, base)
    report.empty = grades[-1].result()
    report.problems += _empty_problems(report.empty)
    if reference is not None:
        report.reference = grades[0].result()
        report.problems += _reference_problems(report.reference)
    if repeat > 1:
        report.repeat = repeat
        sides = [None] if reference is None else [None, reference]
        runs = [repeat_tests(task_spec, baseline, patch, factory, repeat) for patch in sides]
        report.flaky = [f for r in runs for f in flaky_tests(task_spec, r)]
        report.problems += [f"{r.side} run {e}" for r in runs for e in r.errors] + _flaky_problems(report.flaky)
    return report


class _Opening(SandboxFactory):
    """``factory``, telling when its first sandbox opens: the grade using it is past the steps before its test
    run (the grade's Prefect task runs written one after another to the server)."""

    def __init__(self, factory: SandboxFactory) -> None:
        self.factory = factory
        self.opened = threading.Event()
        self.__dict__["kind"] = factory.kind  # the grade's log names the sandbox it runs in

    def open(self, host_workspace: Path) -> Sandbox:
        self.opened.set()
        return self.factory.open(host_workspace)

    def hold(self, folder: Path) -> bool:
        return self.factory.hold(folder)

    def describe(self) -> SandboxDescription:
        return self.factory.describe()

    def check_limits(self, where: str) -> None:
        self.factory.check_limits(where)

    def probe(self) -> None:
        self.factory.probe()


def _grade_at_once(
    task_spec: TaskSpec,
    reference: str | None,
    factory: SandboxFactory,
    profile: str | Profile | None,
    base: BaseRef,
) -> list[PrefectFuture[GradeResult]]:
    """The reference's grade (when given) and the empty submission's, each in its own sandbox, at once; the
    empty one starts when the reference's test run does. Two grades writing their task runs together
    collide in a SQLite-backed Prefect server (``SQLITE_BUSY``, answered 503), and its client retries the
    loser 2 s later, then 4 s: longer than the empty grade's steps take."""
    empty = Submission(submission_id=EMPTY_ID, patch="")
    if reference is None:
        return [validation_grade.submit(task_spec, empty, factory, profile, base)]
    opening = _Opening(factory)
    first = validation_grade.submit(task_spec, Submission.of_patch(REFERENCE_ID, reference), opening, profile, base)
    first.add_done_callback(lambda _: opening.opened.set())  # a grade that never reaches its test run
    opening.opened.wait()
    return [first, validation_grade.submit(task_spec, empty, factory, profile, base)]


def _flaky_problems(flaky: list[FlakyTest]) -> list[str]:
    counts = [(f, ", ".join(f"{k} {n}x" for k, n in sorted(f.counts.items()))) for f in flaky if f.scored]
    return [f"{f.test} is flaky on the {f.side} ({seen}): add it to tests.quarantine" for f, seen in counts]


def _as_result(value: object) -> GradeResult:
    if isinstance(value, GradeResult):
        return value
    result = value.result()  # type: ignore[attr-defined]
    assert isinstance(result, GradeResult)
    return result
