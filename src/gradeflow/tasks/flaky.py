"""Task: the test command run N times on one workspace, and the tests whose outcome changes between runs.

Used by ``gradeflow validate --repeat N`` on the pristine base and on the base with the reference patch
applied (hidden tests injected, as for a grade). A test is *flaky* when it does not have the same
outcome in every run of one workspace (absent from a run counts as ``missing``). Tests are named
``classname::name`` as the JUnit report spells them, a form ``tests.quarantine`` accepts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar
from typing import Literal, Protocol

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, Field

from gradeflow.errors import InfraError, SubmissionError
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import Outcome, TestCaseResult, TestRunEvidence
from gradeflow.sandbox.base import Sandbox, SandboxFactory, remove_tree
from gradeflow.tasks._junit import outcomes_for
from gradeflow.tasks._patching import apply_patch
from gradeflow.tasks._retry import INFRA_RETRIES, retry_on_infra
from gradeflow.tasks._testrun import require_report, run_test_command
from gradeflow.tasks.baseline import Baseline, inject_hidden_on_base, task_sandbox, working_copy

__all__ = [
    "FlakyTest",
    "RepeatedRuns",
    "RunListener",
    "flaky_tests",
    "one_run",
    "repeat_runs",
    "repeat_tests",
    "run_listener",
]

Side = Literal["base", "reference"]


class RunListener(Protocol):
    """Told about each repeated run as it starts and ends (``task new``'s progress display)."""

    def started(self, side: str, number: int) -> None: ...

    def finished(self, side: str, number: int, seconds: float, ok: bool) -> None: ...


run_listener: ContextVar[RunListener | None] = ContextVar("gradeflow_run_listener", default=None)
"""Set around a flow whose :func:`repeat_tests` calls a listener should hear about (never a task parameter)."""


class RepeatedRuns(BaseModel):
    """Every test's outcome in each of N runs of the test command on one workspace."""

    side: Side
    runs: int = 0
    cases: dict[str, TestCaseResult] = Field(default_factory=dict)
    """One testcase per ``classname::name`` seen in any run (to match test ids against)."""
    outcomes: dict[str, list[Outcome]] = Field(default_factory=dict)
    """``classname::name`` → its outcome in each run, ``missing`` where a run did not report it."""
    errors: list[str] = Field(default_factory=list)
    """Runs without a usable report, and why."""

    def record(self, cases: list[TestCaseResult]) -> None:
        """Add one run's testcases (a test it did not report is ``missing`` in it)."""
        seen = {f"{c.classname}::{c.name}": c for c in cases}
        for key in seen.keys() - self.outcomes.keys():
            self.outcomes[key] = ["missing"] * self.runs
        for key, history in self.outcomes.items():
            history.append(seen[key].outcome if key in seen else "missing")
        self.cases.update(seen)
        self.runs += 1

    def merged(self, other: RepeatedRuns) -> RepeatedRuns:
        """These runs followed by ``other``'s, of the same side (in other workspaces)."""
        merged = self.model_copy(deep=True)
        for key in other.outcomes.keys() - merged.outcomes.keys():
            merged.outcomes[key] = ["missing"] * merged.runs
        for key, history in merged.outcomes.items():
            history.extend(other.outcomes.get(key, ["missing"] * other.runs))
        merged.cases.update(other.cases)
        merged.runs += other.runs
        merged.errors += other.errors
        return merged


class FlakyTest(BaseModel):
    """A test whose outcome changed between runs of the same workspace."""

    test: str
    """``classname::name``, accepted as is by ``tests.quarantine``."""
    side: Side
    counts: dict[str, int]
    """How many runs gave each outcome."""
    quarantined: bool
    """Whether ``tests.quarantine`` names it: reported by a grade, never scored."""
    scored: bool
    """Whether a grade scores it (named in ``fail_to_pass``/``pass_to_pass`` and not quarantined)."""


def one_run(side: Side, evidence: TestRunEvidence | None) -> RepeatedRuns:
    """``evidence`` (a run made elsewhere, e.g. a grade's) as one run of ``side``; no run at all when there is
    none or it gave no usable report (whoever made it says why)."""
    runs = RepeatedRuns(side=side)
    if evidence is None:
        return runs
    try:
        require_report(evidence, side)
    except InfraError:
        return runs
    runs.record(evidence.cases)
    return runs


def _names(test_ids: list[str], case: TestCaseResult) -> bool:
    return any(outcome != "missing" for outcome in outcomes_for(test_ids, [case]).values())


def flaky_tests(task_spec: TaskSpec, repeated: RepeatedRuns) -> list[FlakyTest]:
    """The tests of ``repeated`` whose outcome changed, with whether the task quarantines or scores them."""
    spec = task_spec.tests
    flaky = []
    for key, history in sorted(repeated.outcomes.items()):
        if len(set(history)) < 2:
            continue
        case = repeated.cases[key]
        quarantined = _names(spec.expanded(spec.quarantine), case)
        named = _names(spec.expanded([*spec.fail_to_pass, *spec.pass_to_pass]), case)
        flaky.append(
            FlakyTest(
                test=key,
                side=repeated.side,
                counts=dict(Counter(history)),
                quarantined=quarantined,
                scored=named and not quarantined,
            )
        )
    return flaky


@task(
    name="repeat-tests",
    cache_policy=NO_CACHE,
    retries=INFRA_RETRIES,
    retry_delay_seconds=1,
    retry_condition_fn=retry_on_infra,
)
def repeat_tests(
    task_spec: TaskSpec, baseline: Baseline, patch: str | None, sandboxes: SandboxFactory, runs: int
) -> RepeatedRuns:
    """Run the test command ``runs`` times on the base (or the base plus ``patch``) in a copy of the task's
    environment."""
    return repeat_runs(task_spec, baseline, patch, sandboxes, runs)


def repeat_runs(
    task_spec: TaskSpec,
    baseline: Baseline,
    patch: str | None,
    sandboxes: SandboxFactory,
    runs: int,
    after_run: Callable[[RepeatedRuns], None] | None = None,
) -> RepeatedRuns:
    """:func:`repeat_tests` without Prefect (``task new`` runs a side beside its flows); ``after_run`` is given a
    copy of the runs so far after each run. Runs are numbered from 1 for :data:`run_listener`."""
    repeated = RepeatedRuns(side="base" if patch is None else "reference")
    workspace = working_copy(baseline.pristine)
    try:
        try:
            apply_patch(workspace, patch or "")
        except SubmissionError as exc:
            return repeated.model_copy(update={"errors": [f"the reference patch cannot be applied: {exc}"]})
        inject_hidden_on_base(task_spec, workspace, "before the repeated runs")
        with task_sandbox(task_spec, workspace, baseline, sandboxes) as sandbox:
            for number in range(1, runs + 1):
                _run_once(task_spec, sandbox, repeated, number)
                if after_run is not None:
                    after_run(repeated.model_copy(deep=True))
    finally:
        remove_tree(workspace.parent, ignore_errors=True)
    return repeated


def _run_once(task_spec: TaskSpec, sandbox: Sandbox, repeated: RepeatedRuns, number: int) -> None:
    listener = run_listener.get()
    if listener is not None:
        listener.started(repeated.side, number)
    evidence = run_test_command(task_spec, sandbox)
    if listener is not None:
        listener.finished(repeated.side, number, evidence.duration, evidence.junit_found)
    try:
        # The first failure explains itself (command, exit code, last output); later ones just say so.
        require_report(evidence, f"run {number}", None if repeated.errors else task_spec)
    except InfraError as exc:
        repeated.errors.append(str(exc))
    else:
        repeated.record(evidence.cases)
