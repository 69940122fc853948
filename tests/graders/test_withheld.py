"""What a tests component publishes about a run with hidden tests: passed/failed per declared id, no more."""

from __future__ import annotations

from typing import Any

import pytest

from gradeflow.graders.withheld import withhold_hidden_details, withhold_hidden_timings
from gradeflow.models import GradeComponent, GradeResult, TaskSpec

RAW = {
    "fail_to_pass": {"t::f1": "passed", "t::f2": "error", "t::f3": "missing"},
    "pass_to_pass": {"t::p1": "passed", "t::p2": "skipped", "t::p3": "failed"},
    "quarantined": {"t::q": "skipped"},
    "broken": ["t::p3"],
    "counts": {"passed": 1041, "skipped": 77},
    "exit_code": 42,
    "duration": 13.37,
    "harness": {"anything": "new"},
    "compared_values": {
        "t::f1": ["tests/test_hidden.py:7 compares a value whose __eq__ the repository defines (Leak)"],
        "t::p1": ["tests/test_hidden.py:9 compares a value whose __eq__ the repository defines (Leak)"],
    },
    "equal_to_anything": {
        "t::p1": ["tests/test_hidden.py:9 compares a value equal to anything (_ANY)"],
        "t::undeclared_hidden": ["tests/test_hidden.py:12 compares a value equal to anything (_ANY)"],
    },
    "varied_run": {"outcomes": {"t::f1": "failed"}, "problem": "<secret from the varied run>"},
    "outcome_varies": ["t::f1"],
}


def _spec(**tests: Any) -> TaskSpec:
    return TaskSpec.model_validate(
        {"task_id": "t", "type": "bugfix", "repo": ".", "tests": {"command": "pytest {junit}", **tests}}
    )


def _component() -> GradeComponent:
    return GradeComponent(
        name="tests",
        score=0.2,
        passed=False,
        details=RAW,
        messages=["fail_to_pass t::f2 is error", "the JUnit report is unusable: <secret from the hidden test>"],
        reason_codes=["fail-to-pass-failing", "pass-to-pass-broken"],
    )


def test_with_hidden_tests_only_the_declared_verdicts_are_published() -> None:
    published = withhold_hidden_details(_spec(hidden="/h"), _component())
    assert published.details == {
        "fail_to_pass": {"t::f1": "passed", "t::f2": "failed", "t::f3": "failed"},
        # a pass_to_pass skipped on both sides is kept: it passes here as it does in the score
        "pass_to_pass": {"t::p1": "passed", "t::p2": "passed", "t::p3": "failed"},
        "quarantined": {"t::q": "failed"},
        "broken": ["t::p3"],
        "compared_values": ["t::f1", "t::p1"],
        "equal_to_anything": ["t::p1"],
        "outcome_varies": ["t::f1"],
        "counts": {"passed": 3, "failed": 3},
        "withheld": published.details["withheld"],
    }
    assert published.messages == [
        "fail_to_pass t::f2 failed",
        "fail_to_pass t::f3 failed",
        "pass_to_pass t::p3 failed",
        "fail_to_pass t::f1 passed on a value equal by a rule of the repository: review",
        "pass_to_pass t::p1 passed on a value equal by a rule of the repository: review",
        "pass_to_pass t::p1 compared a value equal to anything",
        "a test outside the declared lists compared a value equal to anything",
        "fail_to_pass t::f1 did not pass when run again with pytest's marks off: review",
    ]
    assert (published.score, published.passed, published.reason_codes) == (0.2, False, _component().reason_codes)
    assert "secret" not in published.model_dump_json() and "13.37" not in published.model_dump_json()
    assert "Leak" not in published.model_dump_json() and "test_hidden.py" not in published.model_dump_json()
    assert "undeclared_hidden" not in published.model_dump_json()


@pytest.mark.parametrize("tests", [{}, {"hidden": "/h", "publish_hidden_details": True}])
def test_without_hidden_tests_or_when_the_task_opts_in_everything_is_published(tests: dict[str, Any]) -> None:
    assert withhold_hidden_details(_spec(**tests), _component()) == _component()


def test_the_tests_step_duration_is_withheld_too() -> None:
    result = GradeResult(
        task_id="t", submission_id="s", status="graded", score=1.0, passed=True, decision="merge-candidate",
        timings={"baseline": 1.0, "tests": 13.37, "combine": 0.1},
    )  # fmt: skip
    assert withhold_hidden_timings(_spec(hidden="/h"), result).timings == {"baseline": 1.0, "combine": 0.1}
    assert withhold_hidden_timings(_spec(), result).timings == result.timings


@pytest.mark.parametrize(("rule", "verdict"), [("fail", "failed"), ("pass", "passed")])
def test_an_xfailed_test_is_published_as_the_task_rule_scores_it(rule: str, verdict: str) -> None:
    details = {"fail_to_pass": {"t::f1": "xfailed"}, "pass_to_pass": {}, "quarantined": {"t::q": "xfailed"}}
    component = GradeComponent(name="tests", score=1.0, passed=rule == "pass", details=details)
    published = withhold_hidden_details(_spec(hidden="/h", xfail=rule), component)
    assert published.details["fail_to_pass"] == {"t::f1": verdict}
    assert published.details["quarantined"] == {"t::q": verdict}


def test_a_pass_to_pass_test_set_aside_is_published_as_it_ran_and_not_counted() -> None:
    details = {
        "fail_to_pass": {"t::f1": "passed"},
        "pass_to_pass": {"t::p1": "passed", "t::p2": "failed", "t::p3": "passed"},
        "quarantined": {},
        "broken": [],
        "failing_on_base": {"t::p2": "error", "t::p3": "missing"},
    }
    component = GradeComponent(name="tests", score=1.0, passed=True, details=details)
    published = withhold_hidden_details(_spec(hidden="/h", pass_to_pass_failing_on_base="set-aside"), component)
    assert published.details["pass_to_pass"] == {"t::p1": "passed", "t::p2": "failed", "t::p3": "passed"}
    assert published.details["failing_on_base"] == {"t::p2": "error", "t::p3": "missing"}
    assert published.details["counts"] == {"passed": 2, "failed": 0}
    assert published.messages == [
        "pass_to_pass t::p2 is error on the pristine base too: not scored",
        "pass_to_pass t::p3 is missing on the pristine base too: not scored",
    ]
