"""How many runs ``task new`` makes a side, and how one side's runs from several workspaces add up."""

from __future__ import annotations

import pytest

from gradeflow.authoring.task_runs import RunPlan
from gradeflow.models.evidence import CaseOutcome, TestCaseResult, TestRunEvidence
from gradeflow.tasks.flaky import RepeatedRuns, one_run


@pytest.mark.parametrize(
    ("repeat", "base_plain", "reference_plain", "base", "reference"),
    [(1, 1, 1, 3, 2), (2, 1, 1, 3, 2), (3, 1, 2, 3, 3), (5, 3, 4, 5, 5)],
)
def test_the_plan_gives_each_side_repeat_runs_the_validation_s_last(
    repeat: int, base_plain: int, reference_plain: int, base: int, reference: int
) -> None:
    plan = RunPlan(repeat)
    assert (plan.base_plain, plan.reference_plain, plan.base, plan.reference) == (
        base_plain,
        reference_plain,
        base,
        reference,
    )
    assert plan.total == base + reference


def _case(name: str, outcome: CaseOutcome) -> TestCaseResult:
    return TestCaseResult(classname="tests.test_x", name=name, outcome=outcome)


def test_runs_of_one_side_from_other_workspaces_follow_in_order_with_missing_tests_marked() -> None:
    first = RepeatedRuns(side="base")
    first.record([_case("a", "passed"), _case("b", "failed")])
    first.record([_case("a", "passed")])
    later = RepeatedRuns(side="base")
    later.record([_case("a", "failed"), _case("c", "passed")])
    merged = first.merged(later)
    assert merged.runs == 3
    assert merged.outcomes == {
        "tests.test_x::a": ["passed", "passed", "failed"],
        "tests.test_x::b": ["failed", "missing", "missing"],
        "tests.test_x::c": ["missing", "missing", "passed"],
    }
    assert first.runs == 2 and "tests.test_x::c" not in first.outcomes  # merging leaves both as they were
    assert merged.merged(RepeatedRuns(side="base")).outcomes == merged.outcomes  # a run with no usable report adds none


def test_a_run_made_elsewhere_counts_only_with_a_usable_report() -> None:
    reported = TestRunEvidence(exit_code=1, junit_found=True, cases=[_case("a", "failed")])
    assert one_run("base", reported).outcomes == {"tests.test_x::a": ["failed"]}
    assert one_run("reference", None).runs == 0
    assert one_run("base", TestRunEvidence(exit_code=4, output_tail="usage error")).runs == 0  # no report
    assert one_run("base", reported.model_copy(update={"junit_error": "tampered"})).runs == 0
