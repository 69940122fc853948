"""data_loss_findings and DataLossGrader: deleted tests, out-of-scope deletions, removed or cut data."""

from __future__ import annotations

import pytest

from builders import make_task
from gradeflow.graders.base import GradingContext, InMemoryWorkspace
from gradeflow.graders.data_loss import DataLossGrader, FileSize, data_loss_findings
from gradeflow.models import ChangedFile, TaskSpec

T = {"tests/test_a.py::test_one", "tests/test_a.py::test_two"}
SCOPE = ["src/**"]


def _size(lines: int, size: int) -> FileSize:
    return FileSize(lines=lines, size=size)


@pytest.mark.parametrize(
    ("changes", "candidate_tests", "sizes", "expected"),
    [
        ([ChangedFile(path="src/a.py")], T, {}, []),
        (
            [ChangedFile(path="tests/test_a.py")],
            {"tests/test_a.py::test_one"},
            {},
            [("test-removed", "tests/test_a.py")],
        ),
        (
            [ChangedFile(path="tests/test_a.py", status="removed")],
            set(),
            {},
            [("test-removed", "tests/test_a.py")] * 2 + [("file-removed", "tests/test_a.py")],
        ),
        (  # moved, not deleted: git's rename keeps the tests under the new path
            [ChangedFile(path="tests/test_b.py", old_path="tests/test_a.py", status="renamed")],
            {"tests/test_b.py::test_one", "tests/test_b.py::test_two"},
            {},
            [],
        ),
        ([ChangedFile(path="src/old.py", status="removed")], T, {}, []),  # inside the task's scope
        ([ChangedFile(path="docs/guide.md", status="removed")], T, {}, [("file-removed", "docs/guide.md")]),
        ([ChangedFile(path="data/users.csv", status="removed")], T, {}, [("data-removed", "data/users.csv")]),
        (
            [ChangedFile(path="data/users.csv")],
            T,
            {"data/users.csv": (_size(10, 200), _size(5, 100))},
            [("data-truncated", "data/users.csv")],
        ),
        ([ChangedFile(path="data/users.csv")], T, {"data/users.csv": (_size(10, 200), _size(9, 190))}, []),
        ([ChangedFile(path="src/a.py")], T, {"src/a.py": (_size(10, 200), _size(1, 10))}, []),  # not a data file
        (
            [ChangedFile(path="app/migrations/0001.py", status="removed")],
            T,
            {},
            [("data-removed", "app/migrations/0001.py")],
        ),
    ],
)
def test_findings(
    changes: list[ChangedFile],
    candidate_tests: set[str],
    sizes: dict[str, tuple[FileSize, FileSize]],
    expected: list[tuple[str, str]],
) -> None:
    found = data_loss_findings(changes, T, candidate_tests, sizes, SCOPE)
    assert [(f.kind, f.path) for f in found] == expected


def test_task_data_globs_replace_the_default() -> None:
    gone = [ChangedFile(path="fixtures/seed.yaml", status="removed"), ChangedFile(path="src/x.json", status="removed")]
    found = data_loss_findings(gone, set(), set(), {}, SCOPE, data=["fixtures/**"])
    assert [(f.kind, f.path) for f in found] == [("data-removed", "fixtures/seed.yaml")]


@pytest.mark.parametrize(
    ("findings", "passed", "scored", "codes"),
    [([], True, True, []), (None, False, False, ["detector-unavailable"])],
)
def test_grader_states(findings: list | None, passed: bool, scored: bool, codes: list[str]) -> None:
    c = DataLossGrader(findings, "no base").grade(
        GradingContext(task=TaskSpec.model_validate(make_task()), workspace=InMemoryWorkspace())
    )
    assert (c.passed, c.scored, c.reason_codes, c.role) == (passed, scored, codes, "gate")


def test_grader_fails_with_data_loss() -> None:
    found = data_loss_findings([ChangedFile(path="tests/test_a.py")], T, {"tests/test_a.py::test_one"}, {}, SCOPE)
    c = DataLossGrader(found).grade(
        GradingContext(task=TaskSpec.model_validate(make_task()), workspace=InMemoryWorkspace())
    )
    assert (c.passed, c.score, c.reason_codes) == (False, 0.0, ["data-loss"])
    assert c.messages == ["tests/test_a.py: test-removed: test_two"]
