"""Task: the acceptance run on a fresh, sealed tree (hidden tests injected, harness loaded), scored."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from gradeflow.errors import SubmissionError
from gradeflow.graders.base import GradingContext
from gradeflow.graders.tests import TestGrader
from gradeflow.graders.withheld import withhold_hidden_details, withholds_hidden_details
from gradeflow.models import GradeComponent, TaskSpec
from gradeflow.models.evidence import TestRunEvidence
from gradeflow.sandbox.base import SandboxFactory, remove_tree
from gradeflow.tasks._retry import INFRA_RETRIES, retry_on_infra
from gradeflow.tasks._sealing import SealedTree, seal_for_run
from gradeflow.tasks._testrun import run_test_command, start_harness
from gradeflow.tasks.baseline import Baseline, inject_hidden, task_sandbox, working_copy
from gradeflow.tasks.snapshot import Snapshot
from gradeflow.tasks.varied import varied_ahead, varied_run

__all__ = ["AcceptanceListener", "TestsOutcome", "acceptance_listener", "run_tests"]

AcceptanceListener = Callable[[str, TestRunEvidence], None]
"""Told a grade's submission id and its acceptance run's evidence once the tests step is done, and a
validation's baseline run (as ``baseline``) once it has its baseline."""

acceptance_listener: ContextVar[AcceptanceListener | None] = ContextVar("gradeflow_acceptance_listener", default=None)
"""Set around a flow whose suite runs a caller counts among its own (``task new`` takes its validation's
baseline and grades as the last repeated runs of each side); it only hears, it changes no grade."""


class TestsOutcome(BaseModel):
    """The tests component and the raw evidence behind it."""

    __test__ = False

    component: GradeComponent
    evidence: TestRunEvidence
    restored: list[str]
    """Paths reset to the base before the run (``component.details["sealed"]`` says why)."""


@task(
    name="tests",
    cache_policy=NO_CACHE,
    retries=INFRA_RETRIES,
    retry_delay_seconds=1,
    retry_condition_fn=retry_on_infra,
)
def run_tests(task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline, sandboxes: SandboxFactory) -> TestsOutcome:
    """The acceptance run, on a fresh copy of base + patch sealed to the base's test harness; when its required
    tests passed, their varied re-run (:mod:`gradeflow.tasks.varied`) on another fresh copy. Under
    ``tests.hidden_edits: reset``, when the candidate's edits to test folders were kept in the run (as SWE-bench
    keeps them), the tests run once more with them reset too (gradeflow's reading) for the grade's
    ``strict_reading``."""
    assert snapshot.workspace is not None
    started = time.perf_counter()
    ahead = varied_ahead(task_spec, snapshot, baseline, sandboxes)
    try:
        run = _acceptance_run(task_spec, snapshot, baseline, sandboxes)
        evidence, sealed = run.evidence, run.sealed.sealed
        acceptance = time.perf_counter() - started
        varied = varied_run(task_spec, snapshot, baseline, sandboxes, evidence, ahead)
    finally:
        if ahead is not None:
            ahead.wait()
    if varied is not None:
        evidence = evidence.model_copy(update={"varied": varied})
    spent: dict[str, float | bool] = {
        "copy_seal_sandbox_and_read": round(max(acceptance - evidence.duration, 0.0), 3),
        "test_command": round(evidence.duration, 3),
        # What the varied run added to the step: its whole time after the main run, or, begun beside it, the
        # wait for its end once the main run was over.
        "varied_run": round(time.perf_counter() - started - acceptance, 3),
        "varied_run_beside_main": ahead is not None,
    }
    context = GradingContext(task=task_spec, workspace=snapshot.view(), tests=evidence, baseline_tests=baseline.tests)
    component = withhold_hidden_details(task_spec, TestGrader().grade(context))
    component.details["sealed"] = sealed
    if run.sealed.kept:
        before = time.perf_counter()
        strict = _acceptance_run(task_spec, snapshot, baseline, sandboxes, strict=True).evidence
        spent["strict_run"] = round(time.perf_counter() - before, 3)
        _report_kept(component, run.sealed.kept, TestGrader().grade(replace(context, tests=strict)))
    if not withholds_hidden_details(task_spec):
        # Where the step's time went: the tree's copy and sealing, the sandbox (environment mount, harness)
        # and reading the report; the acceptance run's command; the varied run, whole; the strict reading's run.
        component.details["time"] = spent
    component.details["canaries"] = (
        "checked" if baseline.tests.harness and baseline.tests.harness.canaries else "unsupported"
    )
    if baseline.tests.harness_not_joined:
        component.messages.append(baseline.tests.harness_not_joined)
    if evidence.cpu_throttled:
        component.details["cpu_throttled"] = True
        component.messages.append(
            f"the test command wanted more CPU than environment.cpus ({task_spec.environment.cpus:g}) and was held "
            "back: a slow or timed-out run may owe it to that"
        )
    if evidence.report != "junit":
        component.details["report"] = {"format": evidence.report, "confirmed_by": evidence.confirmed_by}
        component.messages.append(_log_note(evidence))
    if sealed:
        component.messages.append(f"reset to the base before the run: {', '.join(sorted(sealed))}")
    return TestsOutcome(component=component, evidence=evidence, restored=sorted(sealed))


class _Run(NamedTuple):
    evidence: TestRunEvidence
    sealed: SealedTree


def _acceptance_run(
    task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline, sandboxes: SandboxFactory, *, strict: bool = False
) -> _Run:
    """A run on a fresh copy of base + patch, sealed (``strict``: as under ``tests.hidden_edits: fail``)."""
    assert snapshot.workspace is not None
    tree = working_copy(snapshot.workspace)
    try:
        sealed = seal_for_run(task_spec, snapshot.changes, tree, baseline.pristine, strict=strict)
        return _Run(candidate_test_run(task_spec, tree, sandboxes, baseline), sealed)
    finally:
        remove_tree(tree.parent, ignore_errors=True)


def _report_kept(component: GradeComponent, kept: list[str], sealed_whole: GradeComponent) -> None:
    """Note in ``component`` the test edits kept in the run (SWE-bench's procedure) and what the tests gave
    with them reset (``sealed_whole``, gradeflow's reading): the evidence of the grade's ``strict_reading``."""
    component.details["kept_test_edits"] = kept
    component.details["strict_reason_codes"] = ["test-edit-kept"]
    component.details["strict_tests"] = {
        "score": sealed_whole.score,
        "passed": sealed_whole.passed,
        "reason_codes": sealed_whole.reason_codes,
    }
    outcome = "passed" if sealed_whole.passed else f"failed ({', '.join(sealed_whole.reason_codes) or 'score'})"
    component.details["strict_messages"] = [
        *(f"{p}: a test edit the hidden tests do not replace, reset under gradeflow's reading" for p in kept),
        f"tests with those edits reset: {sealed_whole.score:.2f}, {outcome}",
    ]
    component.messages.append(
        f"kept in the run, as SWE-bench keeps them: {', '.join(kept)} (gradeflow's reading resets them; "
        "the grade's strict_reading gives its verdict)"
    )


def _log_note(evidence: TestRunEvidence) -> str:
    """What a grade whose outcomes come from a log can and cannot vouch for."""
    read = f"outcomes read from the command's output ({evidence.report})"
    if evidence.confirmed_by == "harness":
        return f"{read}, each confirmed by gradeflow's pytest harness"
    skipped = (
        "the pytest harness's checks (canaries, varied run, audit of the test calls) need pytest and did not apply"
    )
    if evidence.confirmed_by == "recorder":
        return f"{read}, each confirmed by gradeflow's unittest recorder; {skipped}"
    return f"{read}, with nothing gradeflow records itself to confirm them (a forged line would pass); {skipped}"


def candidate_test_run(
    task_spec: TaskSpec, tree: Path, sandboxes: SandboxFactory, baseline: Baseline
) -> TestRunEvidence:
    """Hidden tests injected into ``tree`` (a disposable copy; with a harness, they reach the run through
    it, not the disk), then the harnessed tests in a sandbox holding a copy of the task's environment
    (setup never runs on the candidate)."""
    try:
        hidden = inject_hidden(task_spec, tree, tree.parent / "hidden-backup")
    except (OSError, SubmissionError) as exc:
        return TestRunEvidence(junit_error=f"hidden tests cannot be injected: {exc}")
    harness = start_harness(task_spec, tree, None, baseline.tests, hidden=hidden)
    with task_sandbox(task_spec, tree, baseline, sandboxes) as sandbox:
        return run_test_command(task_spec, sandbox, harness=harness, base=baseline.tests)
