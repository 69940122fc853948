"""data_loss_between on a real git repository: the same fix with and without losing tests or data."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gradeflow.tasks.data_loss import data_loss_between, defined_tests

TESTS = (
    "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
    "class TestMore:\n    def test_zero(self):\n        assert add(0, 0) == 0\n"
)
CSV = "".join(f"{i},user{i}\n" for i in range(10))


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "data").mkdir()
    (repo / "src/calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "tests/test_calc.py").write_text(TESTS)
    (repo / "data/users.csv").write_text(CSV)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    return repo


def _fix(repo: Path) -> None:
    (repo / "src/calc.py").write_text("def add(a, b):\n    return a + b\n")


def _drop_test(repo: Path) -> None:
    (repo / "tests/test_calc.py").write_text(TESTS.split("\n\nclass")[0] + "\n")


def _truncate(repo: Path) -> None:
    (repo / "data/users.csv").write_text(CSV.splitlines(keepends=True)[0])


def _move_tests(repo: Path) -> None:
    _git(repo, "mv", "tests/test_calc.py", "tests/test_arith.py")


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        ([_fix], []),
        ([_fix, _drop_test], [("test-removed", "tests/test_calc.py", "test_zero")]),
        ([_fix, _truncate], [("data-truncated", "data/users.csv", "10->1 lines, 80->8 bytes")]),
        ([_fix, _move_tests], []),  # moved, not deleted
    ],
)
def test_data_loss_between(
    tmp_path: Path, edits: list[Callable[[Path], None]], expected: list[tuple[str, str, str]]
) -> None:
    repo = _repo(tmp_path)
    for edit in edits:
        edit(repo)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "candidate")
    found = data_loss_between(repo, "HEAD~1", "HEAD", scope=["src/**"])
    assert [(f.kind, f.path, f.detail) for f in found] == expected


def test_defined_tests_reads_classes_and_ignores_unparseable() -> None:
    assert defined_tests("t.py", TESTS) == {"t.py::test_add", "t.py::test_zero"}
    assert defined_tests("t.py", "def test_(:\n") == set()
