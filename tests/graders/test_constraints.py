"""ConstraintGrader: one check per declared rule, score = 1 - violations/checks; patterns scored from evidence."""

import pytest

from builders import make_task
from gradeflow.graders import ConstraintGrader, GradingContext, InMemoryWorkspace
from gradeflow.models import ChangedFile, GradeComponent, TaskSpec
from gradeflow.models.evidence import PatternEvidence, PatternHit, PatternMatches


def _grade(
    constraints: dict[str, object],
    changes: list[ChangedFile],
    files: dict[str, str] | None = None,
    tests: dict[str, object] | None = None,
    patterns: PatternEvidence | None = None,
) -> GradeComponent:
    spec = make_task(constraints=constraints)
    if tests:
        spec["tests"].update(tests)
    workspace = InMemoryWorkspace(files=files or {}, changes=changes)
    return ConstraintGrader(patterns).grade(GradingContext(task=TaskSpec.model_validate(spec), workspace=workspace))


def _forbidden(pattern: str, *hits: tuple[str, int], error: str | None = None) -> PatternMatches:
    found = [PatternHit(path=path, line=line) for path, line in hits]
    return PatternMatches(kind="forbidden", pattern=pattern, engine="re2", hits=found, error=error)


def _required(path: str, pattern: str, line: int | None, error: str | None = None) -> PatternMatches:
    hits = [] if line is None else [PatternHit(path=path, line=line)]
    return PatternMatches(kind="required", pattern=pattern, path=path, engine="re", hits=hits, error=error)


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


FORBID: dict[str, object] = {"forbidden_patterns": [r"breakpoint\(", "import pdb"]}
REQUIRE: dict[str, object] = {"required_patterns": [{"path": "src/calc.py", "pattern": "ZeroDivisionError"}]}


@pytest.mark.parametrize(
    ("constraints", "matches", "score", "codes"),
    [
        (FORBID, [_forbidden(r"breakpoint\("), _forbidden("import pdb")], 1.0, []),
        (
            FORBID,
            [_forbidden(r"breakpoint\(", ("src/calc.py", 2)), _forbidden("import pdb")],
            2 / 3,
            ["forbidden-pattern"],
        ),
        (
            FORBID,
            [_forbidden(r"breakpoint\(", error="took longer than 5 s"), _forbidden("import pdb")],
            2 / 3,
            ["pattern-timeout"],
        ),
        (FORBID, [_forbidden("import pdb")], 2 / 3, ["pattern-evidence-missing"]),  # never a silent pass
        (REQUIRE, [_required("src/calc.py", "ZeroDivisionError", 3)], 1.0, []),
        (REQUIRE, [_required("src/calc.py", "ZeroDivisionError", None)], 0.5, ["required-pattern-missing"]),
        (
            REQUIRE,
            [_required("src/calc.py", "ZeroDivisionError", None, "took longer than 5 s")],
            0.5,
            ["pattern-timeout"],
        ),
        (REQUIRE, [_required("src/other.py", "ZeroDivisionError", 1)], 0.5, ["pattern-evidence-missing"]),
    ],
)
def test_pattern_table(
    constraints: dict[str, object], matches: list[PatternMatches], score: float, codes: list[str]
) -> None:
    component = _grade(constraints, [SRC], patterns=PatternEvidence(matches=matches, timeout=5.0))
    assert component.score == pytest.approx(score)
    assert component.passed is (score == 1.0)
    assert component.reason_codes == codes


def test_declared_patterns_without_evidence_fail() -> None:
    assert _grade(FORBID, [SRC]).reason_codes == ["pattern-evidence-missing"]
    assert _grade({}, [SRC]).passed  # no pattern declared, nothing to match


def test_pattern_messages_name_the_file_lines_and_pattern() -> None:
    hits = [("src/é.py", 1), ("src/é.py", 4), ("src/tab\tname.py", 2)]
    timed_out = _forbidden("import pdb", error="took longer than 5 s")
    evidence = PatternEvidence(matches=[_forbidden(r"breakpoint\(", *hits), timed_out], timeout=5.0)
    component = _grade(FORBID, [SRC], patterns=evidence)
    assert component.messages == [
        "forbidden_pattern 'breakpoint\\\\(': src/é.py: added lines 1, 4 match 'breakpoint\\\\('",
        "forbidden_pattern 'breakpoint\\\\(': \"src/tab\\tname.py\": added line 2 matches 'breakpoint\\\\('",
        "forbidden_pattern 'import pdb': matching 'import pdb' (re2) took longer than 5 s",
    ]
    assert component.details["patterns"][1] == {
        "kind": "forbidden",
        "pattern": "import pdb",
        "path": None,
        "engine": "re2",
        "hits": 0,
        "error": "took longer than 5 s",
    }


def test_details_list_each_check() -> None:
    component = _grade({"allowed_files": ["src/**"], "max_files_changed": 3}, [SRC, TEST])
    assert set(component.details["checks"]) == {"protected", "allowed_files", "max_files_changed"}
    assert component.details["checks"]["allowed_files"]["violations"] == [
        "tests/test_calc.py is outside the allowed files"
    ]
