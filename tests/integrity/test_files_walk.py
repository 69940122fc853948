"""The repository walk every grade makes several times: the same files, kinds and order as ``os.walk`` gives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from builders import make_task
from gradeflow.integrity.files import every_file, list_files, matching_entries
from gradeflow.integrity.handed import suite_sources
from gradeflow.integrity.sealing import folders_to_seal
from gradeflow.models import TaskSpec
from gradeflow.models.globs import any_matcher, matches_any

GLOBS = ["**/test_*.py", "tests/**", "*.cfg", "./setup.py", "docs/?.md", "**/conftest.py"]


def _os_walk_order(root: Path) -> list[tuple[str, bool]]:
    """The reading the walk replaced: ``os.walk`` with path objects, links to folders left out;
    ``(relative path, whether a link)`` of every file in its order."""
    order = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not (Path(folder) / d).is_symlink())
        for name in sorted(files):
            full = Path(folder) / name
            order.append((full.relative_to(root).as_posix(), full.is_symlink()))
    return order


def _by_os_walk(root: Path, globs: list[str]) -> tuple[list[str], list[str]]:
    found = [(rel, link) for rel, link in _os_walk_order(root) if matches_any(rel, globs)]
    return [rel for rel, link in found if not link], [rel for rel, link in found if link]


def _awkward_tree(root: Path) -> Path:
    for rel in (
        "setup.py",
        "setup.cfg",
        "a.py",
        "tests/test_a.py",
        "tests/conftest.py",
        "tests/data/x.json",
        "tests/z/test_z.py",
        "src/pkg/test_inner.py",
        "src/pkg/.git/HEAD",
        "docs/a.md",
        "docs/ab.md",
        "B/test_upper.py",
        "name with space/test_s.py",
        "odd\nname/test_n.py",
        "unreadable/test_hidden.py",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    (root / ".git").mkdir()
    (root / ".git" / "test_git.py").write_text("")
    (root / ".git-keep").write_text("")  # a file named like .git's folder is a file like any
    (root / "tests" / "test_link.py").symlink_to("test_a.py")
    (root / "tests" / "test_broken.py").symlink_to("nowhere.py")
    (root / "tests" / "folder_link").symlink_to("z")
    (root / "loop").symlink_to("loop")
    os.mkfifo(root / "tests" / "test_fifo.py")
    (root / "unreadable").chmod(0)
    return root


@pytest.mark.parametrize("globs", [GLOBS, ["**"], [], ["tests/test_*.py"]])
def test_the_walk_finds_what_os_walk_finds_in_the_same_order(tmp_path: Path, globs: list[str]) -> None:
    root = _awkward_tree(tmp_path / "repo")
    try:
        assert matching_entries(root, globs) == _by_os_walk(root, globs)
        assert list_files(root, globs) == _by_os_walk(root, globs)[0]
    finally:
        (root / "unreadable").chmod(0o755)


def test_every_file_is_every_regular_file_and_no_link(tmp_path: Path) -> None:
    root = _awkward_tree(tmp_path / "repo")
    try:
        found = every_file(root)
        assert "tests/test_link.py" not in found and "tests/test_broken.py" not in found
        assert "odd\nname/test_n.py" in found and ".git-keep" in found
        assert not any(p.startswith(".git/") or "/.git/" in p or p.startswith("tests/folder_link") for p in found)
        assert found == [rel for rel, link in _os_walk_order(root) if not link]
    finally:
        (root / "unreadable").chmod(0o755)


@pytest.mark.parametrize(
    "path", ["a.py", "tests/x.py", "src/tests/conftest.py", "setup.py", "docs/a.md", "docs/ab.md", "x\ny.cfg", ""]
)
def test_one_expression_answers_as_the_patterns_one_by_one(path: str) -> None:
    assert any_matcher(tuple(GLOBS))(path) == matches_any(path, GLOBS)
    assert any_matcher(())(path) is False


def test_the_suite_sources_of_one_walk_are_those_of_two(tmp_path: Path) -> None:
    """``suite_sources`` walks the tree once for the folders to seal and the files; the same texts as asking
    ``folders_to_seal`` and ``list_files`` to walk it each."""
    root = tmp_path / "repo"
    for rel, text in {
        "src/calc.py": "x = 1\n",
        "tests/test_calc.py": "def test_a(): pass\n",
        "tests/helpers.py": "H = 1\n",
        "src/pkg/tests/__init__.py": "def check(): pass\n",
        "checks/test_other.py": "def test_b(): pass\n",
        "conftest.py": "",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    spec = make_task()
    spec["tests"] = {**spec["tests"], "fail_to_pass": ["tests/test_calc.py::test_a"], "test_files": ["checks/*.py"]}
    task = TaskSpec.model_validate(spec)
    sealed = folders_to_seal(task, root)
    assert sealed == ["src/pkg/tests", "tests"]
    found = suite_sources(task, root)
    assert sorted(found) == [
        "checks/test_other.py",
        "conftest.py",
        "src/pkg/tests/__init__.py",
        "tests/helpers.py",
        "tests/test_calc.py",
    ]
    assert found["tests/helpers.py"] == "H = 1\n"
