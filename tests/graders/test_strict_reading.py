"""The strict reading beside a grade under ``tests.hidden_edits: reset``: gradeflow's own verdict, combined as the
grade was, with set-aside edits failing their gates and the tests scored as they ran with kept test edits reset."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_task
from gradeflow.graders.verdict import graded_result
from gradeflow.models import ChangedFile, GradeComponent, TaskSpec
from gradeflow.profiles import load_profile

TASK = TaskSpec.model_validate(
    make_task(tests={"command": "pytest --junitxml={junit}", "fail_to_pass": ["t.py::f"], "hidden_edits": "reset"})
)
CHANGED = [ChangedFile(path="src/calc.py", lines_added=1), ChangedFile(path="tests/helpers.py", lines_added=1)]
KEPT = {"kept_test_edits": ["tests/helpers.py"], "strict_reason_codes": ["test-edit-kept"]}


def _tests(passed: bool, **details: Any) -> GradeComponent:
    codes = [] if passed else ["fail-to-pass-failing"]
    return GradeComponent(
        name="tests", role="objective", score=float(passed), passed=passed, reason_codes=codes, details=details
    )


def _constraints(**details: Any) -> GradeComponent:
    return GradeComponent(name="constraints", role="gate", score=1.0, passed=True, details=details)


def _strict_tests(passed: bool) -> dict[str, Any]:
    return {"score": float(passed), "passed": passed, "reason_codes": [] if passed else ["fail-to-pass-failing"]}


CASES: dict[str, tuple[list[GradeComponent], tuple[bool, str, list[str]] | None]] = {
    "nothing set aside or kept": ([_tests(True), _constraints()], None),
    "an edit to the hidden tests' file fails its gate": (
        [_tests(True), _constraints(strict_reason_codes=["protected-file-modified"])],
        (False, "rejected", ["protected-file-modified"]),
    ),
    "a kept helper edit the fix needs": (
        [_tests(True, **KEPT, strict_tests=_strict_tests(False)), _constraints()],
        (False, "retry", ["fail-to-pass-failing", "test-edit-kept"]),
    ),
    "a kept helper edit that broke the run": (
        [_tests(False, **KEPT, strict_tests=_strict_tests(True)), _constraints()],
        (True, "merge-candidate", ["test-edit-kept"]),
    ),
    "both": (
        [
            _tests(True, **KEPT, strict_tests=_strict_tests(True)),
            _constraints(strict_reason_codes=["protected-file-modified"]),
        ],
        (False, "rejected", ["protected-file-modified", "test-edit-kept"]),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_strict_reading_recombines_the_components_as_gradeflows_reading_has_them(case: str) -> None:
    components, expected = CASES[case]
    result = graded_result(TASK, "s", components, load_profile("default"), patch="x", changes=CHANGED)
    strict = result.strict_reading
    if expected is None:
        assert strict is None
        return
    assert strict is not None
    assert (strict.passed, strict.decision, strict.reason_codes) == expected
