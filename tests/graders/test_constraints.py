"""ConstraintGrader: one check per declared rule, score = 1 - violations/checks."""

import pytest

from builders import make_task
from gradeflow.graders import ConstraintGrader, GradingContext, InMemoryWorkspace
from gradeflow.models import ChangedFile, TaskSpec


def _grade(
    constraints: dict[str, object],
    changes: list[ChangedFile],
    files: dict[str, str] | None = None,
    added: dict[str, list[str]] | None = None,
    tests: dict[str, object] | None = None,
):
    spec = make_task(constraints=constraints)
    if tests:
        spec["tests"].update(tests)
    workspace = InMemoryWorkspace(files=files or {}, changes=changes, added=added or {})
    return ConstraintGrader().grade(GradingContext(task=TaskSpec.model_validate(spec), workspace=workspace))


SRC = ChangedFile(path="src/calc.py", lines_added=3, lines_removed=1)
TEST = ChangedFile(path="tests/test_calc.py", lines_added=1, lines_removed=1)


@pytest.mark.parametrize(
    ("constraints", "changes", "score", "codes"),
    [
        ({}, [SRC], 1.0, []),
        ({"protected": ["tests/**"]}, [SRC, TEST], 0.0, ["protected-file-modified"]),
        ({"allowed_files": ["src/**"]}, [SRC], 1.0, []),
        ({"allowed_files": ["src/**"]}, [SRC, TEST], 0.5, ["scope-expansion"]),
        ({"max_files_changed": 1}, [SRC, TEST], 0.5, ["too-many-files"]),
        ({"max_files_changed": 2}, [SRC, TEST], 1.0, []),
        ({"max_lines_changed": 5}, [SRC, TEST], 0.5, ["too-many-lines"]),
        ({"max_lines_changed": 6}, [SRC, TEST], 1.0, []),
        (
            {
                "protected": ["tests/**"],
                "allowed_files": ["src/**"],
                "max_files_changed": 1,
                "max_lines_changed": 1,
            },
            [SRC, TEST],
            0.0,
            ["protected-file-modified", "scope-expansion", "too-many-files", "too-many-lines"],
        ),
    ],
)
def test_rule_table(constraints: dict[str, object], changes: list[ChangedFile], score: float, codes: list[str]) -> None:
    component = _grade(constraints, changes)
    assert component.score == pytest.approx(score)
    assert component.passed is (score == 1.0)
    assert component.reason_codes == codes
    assert component.role == "gate"


def test_files_named_by_test_ids_are_always_protected() -> None:
    component = _grade({}, [TEST], tests={"fail_to_pass": ["tests/test_calc.py::test_div[a::b]"]})
    assert component.reason_codes == ["protected-file-modified"]
    assert "tests/test_calc.py is protected" in component.messages[0]


def test_a_rename_out_of_a_protected_file_counts() -> None:
    moved = ChangedFile(path="src/moved.py", old_path="tests/test_calc.py", status="renamed")
    assert _grade({"protected": ["tests/**"]}, [moved]).reason_codes == ["protected-file-modified"]


def test_forbidden_patterns_are_checked_on_added_lines_only() -> None:
    added = {"src/calc.py": ["x = 1", "breakpoint()"]}
    component = _grade({"forbidden_patterns": [r"breakpoint\(", "import pdb"]}, [SRC], added=added)
    assert component.score == pytest.approx(2 / 3)  # protected + one check per pattern; one violated
    assert component.reason_codes == ["forbidden-pattern"]
    clean = _grade({"forbidden_patterns": [r"breakpoint\("]}, [SRC], files={"src/calc.py": "breakpoint()"})
    assert clean.passed  # present in the file but not added by the patch


@pytest.mark.parametrize(
    ("files", "passed"),
    [
        ({"src/calc.py": "raise ZeroDivisionError('x')"}, True),
        ({"src/calc.py": "return None"}, False),
        ({}, False),
    ],
)
def test_required_patterns_must_match_in_their_file(files: dict[str, str], passed: bool) -> None:
    component = _grade(
        {"required_patterns": [{"path": "src/calc.py", "pattern": "ZeroDivisionError"}]}, [SRC], files=files
    )
    assert component.passed is passed
    assert component.reason_codes == ([] if passed else ["required-pattern-missing"])


def test_details_list_each_check() -> None:
    component = _grade({"allowed_files": ["src/**"], "max_files_changed": 3}, [SRC, TEST])
    assert set(component.details["checks"]) == {"protected", "allowed_files", "max_files_changed"}
    assert component.details["checks"]["allowed_files"]["violations"] == [
        "tests/test_calc.py is outside the allowed files"
    ]
