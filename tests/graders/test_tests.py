"""TestGrader's scoring table, one row per rule of the grading semantics."""

import pytest

from builders import make_task
from gradeflow.graders import GradingContext, InMemoryWorkspace, TestGrader
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import Outcome, TestCaseResult, TestRunEvidence, VariedRunEvidence

F1, F2, F3, F4 = (f"tests/test_x.py::test_f{i}" for i in range(1, 5))
P1, P2 = "tests/test_x.py::test_p1", "tests/test_x.py::TestP::test_p2[a-1]"
VARIED = "outcome-varies-with-environment"


def _run(outcomes: dict[str, Outcome], **fields: object) -> TestRunEvidence:
    cases = [TestCaseResult(name=t, outcome=o) for t, o in outcomes.items() if o != "missing"]
    cases = cases or [TestCaseResult(name="other", outcome="passed")]
    return TestRunEvidence.model_validate(
        {"exit_code": 0, "junit_found": True, "cases": cases, "outcomes": outcomes, **fields}
    )


def _grade(tests: dict[str, object], run: TestRunEvidence, base: dict[str, Outcome] | None = None):
    task = TaskSpec.model_validate(make_task(tests={"command": "pytest --junitxml={junit}", **tests}))
    baseline = _run(base) if base is not None else None
    context = GradingContext(task=task, workspace=InMemoryWorkspace(), tests=run, baseline_tests=baseline)
    return TestGrader().grade(context)


@pytest.mark.parametrize(
    ("spec", "outcomes", "score", "passed", "codes"),
    [
        # k of n fail_to_pass with partial credit on
        (
            {"fail_to_pass": [F1, F2, F3, F4]},
            {F1: "passed", F2: "passed", F3: "passed", F4: "failed"},
            0.75,
            False,
            ["fail-to-pass-failing"],
        ),
        ({"fail_to_pass": [F1, F2]}, {F1: "passed", F2: "passed"}, 1.0, True, []),
        # partial credit off: any failing fail_to_pass scores 0
        (
            {"fail_to_pass": [F1, F2], "partial_credit": False},
            {F1: "passed", F2: "failed"},
            0.0,
            False,
            ["fail-to-pass-failing"],
        ),
        # a broken pass_to_pass with require_all_pass_to_pass on scores 0
        (
            {"fail_to_pass": [F1], "pass_to_pass": [P1, P2], "require_all_pass_to_pass": True},
            {F1: "passed", P1: "passed", P2: "failed"},
            0.0,
            False,
            ["pass-to-pass-broken"],
        ),
        # ... and with it off, the score shrinks by the broken share
        (
            {"fail_to_pass": [F1, F2], "pass_to_pass": [P1, P2]},
            {F1: "passed", F2: "failed", P1: "passed", P2: "error"},
            0.25,
            False,
            ["fail-to-pass-failing", "pass-to-pass-broken"],
        ),
        # no fail_to_pass declared: 1 when every pass_to_pass passes
        ({"pass_to_pass": [P1, P2]}, {P1: "passed", P2: "passed"}, 1.0, True, []),
        ({"pass_to_pass": [P1, P2]}, {P1: "passed", P2: "failed"}, 0.5, False, ["pass-to-pass-broken"]),
        # a test absent from the report counts as failed
        ({"fail_to_pass": [F1, F2]}, {F1: "passed", F2: "missing"}, 0.5, False, ["fail-to-pass-failing"]),
        # a skipped fail_to_pass counts as failed
        ({"fail_to_pass": [F1]}, {F1: "skipped"}, 0.0, False, ["fail-to-pass-failing"]),
        # an xfailed fail_to_pass is not fixed by default, and counts as passed with xfail: pass (SWE-bench)
        ({"fail_to_pass": [F1, F2]}, {F1: "passed", F2: "xfailed"}, 0.5, False, ["fail-to-pass-failing"]),
        ({"fail_to_pass": [F1, F2], "xfail": "pass"}, {F1: "passed", F2: "xfailed"}, 1.0, True, []),
        ({"fail_to_pass": [F1], "xfail": "pass"}, {F1: "skipped"}, 0.0, False, ["fail-to-pass-failing"]),
        # quarantined tests are reported, never scored
        ({"fail_to_pass": [F1, F2], "quarantine": [F2]}, {F1: "passed", F2: "failed"}, 1.0, True, []),
    ],
)
def test_scoring_table(
    spec: dict[str, object], outcomes: dict[str, Outcome], score: float, passed: bool, codes: list[str]
) -> None:
    component = _grade(spec, _run(outcomes))
    assert component.score == pytest.approx(score)
    assert component.passed is passed
    assert component.reason_codes == codes


@pytest.mark.parametrize(("on_base", "kept"), [("skipped", True), ("passed", False), (None, False)])
def test_skipped_pass_to_pass_is_kept_only_when_skipped_on_base(on_base: Outcome | None, kept: bool) -> None:
    base = {P1: on_base} if on_base else {}
    component = _grade({"pass_to_pass": [P1]}, _run({P1: "skipped"}), base=base)
    assert component.passed is kept
    assert component.details["broken"] == ([] if kept else [P1])


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"timed_out": True, "exit_code": None}, "test-timeout"),
        ({"oom_killed": True}, "oom-killed"),
        ({"junit_found": False, "cases": []}, "no-junit-output"),
        ({"junit_error": "not XML"}, "no-junit-output"),
        ({"junit_tampered": True, "junit_error": "written before the run"}, "junit-tampered"),
        ({"cases": []}, "no-tests-ran"),
    ],
)
def test_unusable_runs_score_zero_with_a_message(fields: dict[str, object], code: str) -> None:
    run = _run({F1: "passed"}).model_copy(update=fields)
    component = _grade({"fail_to_pass": [F1]}, run)
    assert (component.score, component.passed, component.reason_codes) == (0.0, False, [code])
    assert component.messages


@pytest.mark.parametrize(("spec", "role"), [({"fail_to_pass": [F1]}, "objective"), ({"pass_to_pass": [P1]}, "gate")])
def test_role_depends_on_fail_to_pass(spec: dict[str, object], role: str) -> None:
    outcomes: dict[str, Outcome] = {F1: "passed", P1: "passed"}
    assert _grade(spec, _run(outcomes)).role == role


def test_details_list_every_named_test_outcome() -> None:
    component = _grade(
        {"fail_to_pass": [F1], "pass_to_pass": [P1], "quarantine": [F3]},
        _run({F1: "passed", P1: "failed", F3: "error"}),
    )
    assert component.details["fail_to_pass"] == {F1: "passed"}
    assert component.details["pass_to_pass"] == {P1: "failed"}
    assert component.details["quarantined"] == {F3: "error"}


@pytest.mark.parametrize(
    ("rule", "on_candidate", "on_base", "kept"),
    [
        ("broken", "skipped", "passed", False),
        ("broken", "skipped", "skipped", True),
        ("broken", "passed", "passed", True),
        ("kept", "skipped", "passed", True),  # SWE-bench: a skipped pass-to-pass test is not a failure
        ("kept", "skipped", None, True),
        ("kept", "failed", "passed", False),
        ("kept", "error", "passed", False),
        ("kept", "missing", "passed", False),
    ],
)
def test_skipped_pass_to_pass_follows_the_task_rule(
    rule: str, on_candidate: Outcome, on_base: Outcome | None, kept: bool
) -> None:
    base = {P1: on_base} if on_base else {}
    component = _grade({"pass_to_pass": [P1], "skipped_pass_to_pass": rule}, _run({P1: on_candidate}), base=base)
    assert component.passed is kept
    assert component.details["broken"] == ([] if kept else [P1])


@pytest.mark.parametrize(
    ("tests", "on_candidate", "on_base", "kept"),
    [
        ({}, "xfailed", "passed", False),  # gradeflow: an expected failure is no pass
        ({}, "xfailed", None, False),
        ({}, "xfailed", "xfailed", True),  # it did on the base what it does now
        ({}, "xfailed", "skipped", False),
        ({}, "skipped", "xfailed", False),
        ({"skipped_pass_to_pass": "kept"}, "xfailed", "passed", False),  # the two rules are separate
        ({"xfail": "pass"}, "xfailed", "passed", True),  # SWE-bench: XFAIL is a pass
        ({"xfail": "pass"}, "xfailed", None, True),
        ({"xfail": "pass"}, "skipped", "passed", False),
        ({"xfail": "pass", "skipped_pass_to_pass": "kept"}, "skipped", "passed", True),
        ({"xfail": "pass"}, "failed", "xfailed", False),
    ],
)
def test_xfailed_pass_to_pass_follows_the_task_rule(
    tests: dict[str, object], on_candidate: Outcome, on_base: Outcome | None, kept: bool
) -> None:
    base = {P1: on_base} if on_base else {}
    component = _grade({"pass_to_pass": [P1], **tests}, _run({P1: on_candidate}), base=base)
    assert component.passed is kept
    assert component.details["broken"] == ([] if kept else [P1])


def test_xfailed_tests_are_reported_and_counted_as_such() -> None:
    run = _run({F1: "xfailed", P1: "passed"})
    component = _grade({"fail_to_pass": [F1], "pass_to_pass": [P1]}, run)
    assert component.details["fail_to_pass"] == {F1: "xfailed"}
    assert component.details["counts"] == {"xfailed": 1, "passed": 1}
    assert component.messages == [f"fail_to_pass {F1} is xfailed"]


def test_a_test_that_passed_and_not_in_the_varied_run_is_for_review_with_its_score_kept() -> None:
    varied = VariedRunEvidence(tests=[F1, F2], outcomes={F1: "passed", F2: "failed"})
    component = _grade({"fail_to_pass": [F1, F2]}, _run({F1: "passed", F2: "passed"}, varied=varied))
    assert (component.score, component.passed, component.reason_codes) == (1.0, False, [VARIED])
    assert [m for m in component.messages if F2 in m and "failed when run again" in m]
    assert not [m for m in component.messages if F1 in m]


def test_a_varied_run_that_agrees_or_did_not_run_changes_nothing() -> None:
    agrees = VariedRunEvidence(tests=[F1], outcomes={F1: "passed"})
    for varied in (agrees, None):
        component = _grade({"fail_to_pass": [F1]}, _run({F1: "passed"}, varied=varied))
        assert (component.score, component.passed, component.reason_codes) == (1.0, True, [])


def test_a_varied_run_without_a_usable_report_leaves_every_repeated_test_unconfirmed() -> None:
    varied = VariedRunEvidence(tests=[P1], problem="the varied run timed out")
    component = _grade({"pass_to_pass": [P1]}, _run({P1: "passed"}, varied=varied))
    assert (component.passed, component.reason_codes) == (False, [VARIED])
    assert any("timed out" in m for m in component.messages)


@pytest.mark.parametrize("on_base", ["failed", "error", "missing"])
def test_a_pass_to_pass_test_failing_on_the_base_is_set_aside_only_when_the_task_says(on_base: Outcome) -> None:
    # SWE-bench's lists come from its own environment: psf__requests-3362's connect-timeout tests need a route
    # (offline they fail at once), pylint-dev__pylint-7080's parallel ones a shared-memory folder. Failing on the
    # pristine base here, they show nothing of the candidate: under set-aside a fix is judged on the rest.
    spec = {"fail_to_pass": [F1], "pass_to_pass": [P1, P2], "pass_to_pass_failing_on_base": "set-aside"}
    base = {F1: "failed", P1: "passed", **({P2: on_base} if on_base != "missing" else {})}
    fixed = _grade(spec, _run({F1: "passed", P1: "passed", P2: "failed"}), base)
    assert (fixed.passed, fixed.score, fixed.reason_codes, fixed.details["broken"]) == (True, 1.0, [], [])
    assert fixed.details["failing_on_base"] == {P2: on_base}
    assert fixed.details["pass_to_pass"] == {P1: "passed", P2: "failed"}  # still reported as it ran
    assert f"pass_to_pass {P2} is {on_base} on the pristine base too: not scored" in fixed.messages
    # One that passes on the base still breaks ...
    broke = _grade(spec, _run({F1: "passed", P1: "failed", P2: "failed"}), base)
    assert (broke.passed, broke.reason_codes, broke.details["broken"]) == (False, ["pass-to-pass-broken"], [P1])
    # ... with no base run nothing is set aside, and by default (authored tasks) such a test breaks as any other.
    alone = _grade(spec, _run({P2: "failed"}))
    assert (alone.passed, "failing_on_base" in alone.details) == (False, False)
    strict = _grade(
        {**spec, "pass_to_pass_failing_on_base": "broken"}, _run({F1: "passed", P1: "passed", P2: "failed"}), base
    )
    assert (strict.passed, strict.details["broken"], "failing_on_base" in strict.details) == (False, [P2], False)


@pytest.mark.parametrize("on_base", ["skipped", "xfailed"])
def test_a_skip_or_an_xfail_on_the_base_is_not_set_aside(on_base: Outcome) -> None:
    spec = {"pass_to_pass": [P1], "pass_to_pass_failing_on_base": "set-aside"}
    component = _grade(spec, _run({P1: "failed"}), {P1: on_base})
    assert (component.passed, component.details["broken"], "failing_on_base" in component.details) == (
        False,
        [P1],
        False,
    )
