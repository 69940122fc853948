"""Compared values: a test passed on a value equal by the repository's own rule where the trusted run's was not."""

from __future__ import annotations

import pytest

from builders import make_task
from gradeflow.graders import GradingContext, InMemoryWorkspace, PatchTestsEvidence, TestEvidenceGrader, TestGrader
from gradeflow.graders.compared_values import equal_to_anything, redefined_equality
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import HarnessSummary, TestCaseResult, TestRunEvidence

T = "tests/test_mean.py::test_mean_of_nothing"
EQ = "./tests/test_mean.py:7:{}:__eq__"
NONE, INT = "e NoneType", "e int"
ALWAYS = "r Nothing (Nothing.__eq__)"
ANY = "a _ANY (equal to anything)"
POINT = "r Point (Point.__eq__)"


def _summary(*operands: str, test: str = T, place: str = EQ) -> HarnessSummary:
    return HarnessSummary(compared={test: {place.format(i): found for i, found in enumerate(operands)}})


@pytest.mark.parametrize(
    ("trusted", "candidate", "suspect"),
    [
        # the trusted run compared builtins; the candidate's value is equal by its own class's rule
        (_summary(NONE, INT), _summary(ALWAYS, INT), True),
        # ... on either side of the comparison (``0 == value`` reflects to the value's __eq__)
        (_summary(INT, NONE), _summary(INT, ALWAYS), True),
        # an honest fix: builtins on both sides
        (_summary(NONE, INT), _summary(INT, INT), False),
        # the same kind: the test compares a dataclass of the repository on the base too (its expected value)
        (_summary(NONE, POINT), _summary(POINT, POINT), False),
        (_summary(POINT, POINT), _summary(POINT, POINT), False),
        # no witness: the base never reached that comparison (it raised before), or has no such test
        (HarnessSummary(), _summary(ALWAYS, INT), False),
        (_summary(NONE, INT, test="tests/test_mean.py::other"), _summary(ALWAYS, INT), False),
        # another comparison (another line, another operator) is no witness either
        (_summary(NONE, INT, place="./tests/test_mean.py:9:{}:__eq__"), _summary(ALWAYS, INT), False),
        (_summary(NONE, INT, place="./tests/test_mean.py:7:{}:__ne__/__eq__"), _summary(ALWAYS, INT), False),
        # a bare assert whose value is true by the repository's __bool__ where the base's was a bool
        (
            _summary("e bool", place="./tests/test_mean.py:7:{}:__bool__/__len__"),
            _summary("r Yes (Yes.__bool__)", place="./tests/test_mean.py:7:{}:__bool__/__len__"),
            True,
        ),
        # no harness on one side: nothing to compare
        (None, _summary(ALWAYS, INT), False),
        (_summary(NONE, INT), None, False),
    ],
)
def test_the_comparison_table(trusted: HarnessSummary | None, candidate: HarnessSummary | None, suspect: bool) -> None:
    found = redefined_equality(candidate, trusted, [T])
    assert bool(found) is suspect
    if suspect:
        (line,) = found[T]
        assert line.startswith("./tests/test_mean.py:7 compares a value whose ")
        assert "the repository defines" in line and "where the trusted run compared" in line


def test_only_the_tests_asked_about_are_checked() -> None:
    assert redefined_equality(_summary(ALWAYS, INT), _summary(NONE, INT), ["tests/test_mean.py::other"]) == {}


def _run(outcome: str, harness: HarnessSummary, classname: str = "tests.test_mean") -> TestRunEvidence:
    name = T.rpartition("::")[2]
    cases = [TestCaseResult(classname=classname, name=name, outcome=outcome)]  # type: ignore[arg-type]
    return TestRunEvidence.model_validate(
        {"exit_code": 0, "junit_found": True, "cases": cases, "outcomes": {T: outcome}, "harness": harness}
    )


@pytest.mark.parametrize(("value", "passed", "codes"), [(ALWAYS, False, ["equality-from-repository"]), (INT, True, [])])
def test_a_fixed_test_passed_on_an_always_equal_value_goes_to_review(
    value: str, passed: bool, codes: list[str]
) -> None:
    task = TaskSpec.model_validate(make_task(tests={"command": "pytest --junitxml={junit}", "fail_to_pass": [T]}))
    context = GradingContext(
        task=task,
        workspace=InMemoryWorkspace(),
        tests=_run("passed", _summary(value, INT)),
        baseline_tests=_run("failed", _summary(NONE, INT)),
    )
    component = TestGrader().grade(context)
    assert (component.score, component.passed, component.reason_codes) == (1.0, passed, codes)
    assert list(component.details["compared_values"]) == ([T] if codes else [])


def test_a_regression_test_passing_on_an_always_equal_value_proves_nothing() -> None:
    evidence = PatchTestsEvidence(
        files=["tests/test_mean.py"],
        selected=["tests/test_mean.py"],
        base=_run("failed", _summary(NONE, INT)),
        candidate=_run("passed", _summary(ALWAYS, INT)),
    )
    task = TaskSpec.model_validate(make_task(type="bugfix"))
    component = TestEvidenceGrader().grade(
        GradingContext(task=task, workspace=InMemoryWorkspace(), patch_tests=evidence)
    )
    assert (component.score, component.passed, component.reason_codes) == (0.25, False, ["equality-from-repository"])
    assert component.details["proving"] == []
    assert list(component.details["compared_values"]) == ["tests.test_mean::test_mean_of_nothing"]


P = "tests/test_calc.py::test_add"


@pytest.mark.parametrize(
    ("trusted", "candidate", "found"),
    [
        # the base compared ints; the candidate's sum equals anything
        (_summary(INT, INT), _summary(ANY, INT), True),
        (_summary(NONE, INT), _summary(INT, ANY), True),
        # the test itself compares with unittest.mock.ANY on the base too
        (_summary(INT, ANY), _summary(INT, ANY), False),
        # a repository class's rule is for review (redefined_equality), not this finding
        (_summary(INT, INT), _summary(ALWAYS, INT), False),
        # no witness: the base never reached the comparison
        (HarnessSummary(), _summary(ANY, INT), False),
        (_summary(INT, INT, place="./tests/test_mean.py:9:{}:__eq__"), _summary(ANY, INT), False),
        (None, _summary(ANY, INT), False),
    ],
)
def test_a_value_equal_to_anything_where_the_base_compared_none(
    trusted: HarnessSummary | None, candidate: HarnessSummary | None, found: bool
) -> None:
    lines = equal_to_anything(candidate, trusted)
    assert bool(lines) is found
    if found:
        (line,) = lines[T]
        assert line.startswith("./tests/test_mean.py:7 compares a value equal to anything")


def _classname(test: str) -> str:
    return test.partition("::")[0].removesuffix(".py").replace("/", ".")


def _p2p_context(value: str) -> GradingContext:
    task = TaskSpec.model_validate(
        make_task(tests={"command": "pytest --junitxml={junit}", "fail_to_pass": [T], "pass_to_pass": [P]})
    )
    both = {T: "passed", P: "passed"}

    def run(outcomes: dict[str, str], compared: dict[str, dict[str, str]]) -> TestRunEvidence:
        cases = [
            TestCaseResult(classname=_classname(t), name=t.rpartition("::")[2], outcome=o)  # type: ignore[arg-type]
            for t, o in outcomes.items()
        ]
        harness = HarnessSummary(compared=compared)
        return TestRunEvidence.model_validate(
            {"exit_code": 0, "junit_found": True, "cases": cases, "outcomes": outcomes, "harness": harness}
        )

    add = "./tests/test_calc.py:5:{}:__eq__"
    return GradingContext(
        task=task,
        workspace=InMemoryWorkspace(),
        tests=run(both, {P: {add.format(0): value, add.format(1): INT}}),
        baseline_tests=run({T: "failed", P: "passed"}, {P: {add.format(0): INT, add.format(1): INT}}),
    )


@pytest.mark.parametrize(
    ("value", "passed", "codes"),
    [
        (INT, True, []),
        (ALWAYS, False, ["equality-from-repository"]),
        (ANY, False, ["equality-from-repository", "equal-to-anything"]),
    ],
)
def test_a_kept_pass_to_pass_test_passed_on_a_lying_value_is_a_finding(
    value: str, passed: bool, codes: list[str]
) -> None:
    component = TestGrader().grade(_p2p_context(value))
    assert (component.score, component.passed, component.reason_codes) == (1.0, passed, codes)
    assert list(component.details["compared_values"]) == ([P] if codes else [])
    assert list(component.details["equal_to_anything"]) == ([P] if "equal-to-anything" in codes else [])
    assert all(m.startswith(("pass_to_pass " + P, P)) for m in component.messages)
