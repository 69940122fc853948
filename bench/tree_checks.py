"""What the grading process pays per grade to walk and check a repository's tree, beside the raw work.

On a generated repository of FILES files (a package of small modules, a tests folder), in one run, medians of
REPEAT: the walks every run makes (``list_files``; the harness's ``suite_sources``, which walks once for the
folders to seal and the files) against a plain ``os.walk`` with path objects (how they walked before); the
check of the cached base at every grade (``inode_digest``: inode and times) against reading and hashing every
file; and, as the yardstick of the machine's file system at that moment, ``cp -a`` of the same tree (what a
run's working copy costs).

    python bench/tree_checks.py [FILES] [REPEAT]
"""

from __future__ import annotations

import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gradeflow.integrity.files import list_files
from gradeflow.integrity.handed import suite_sources
from gradeflow.models import TaskSpec
from gradeflow.models.globs import matches_any
from gradeflow.tasks._state import inode_digest

GLOBS = ["**/test_*.py", "**/conftest.py", "tests/**"]


def _tree(root: Path, files: int) -> None:
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_mod.py").write_text("def test_a():\n    assert True\n")
    for number in range(files - 1):
        folder = root / "pkg" / f"sub_{number // 100:02}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod_{number:04}.py").write_text(f"VALUE = {number}\n")


def _os_walk(root: Path) -> list[str]:
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not (Path(folder) / d).is_symlink())
        for name in sorted(names):
            rel = (Path(folder) / name).relative_to(root).as_posix()
            if matches_any(rel, GLOBS):
                found.append(rel)
    return found


def _every_byte(root: Path) -> str:
    digest = hashlib.sha256()
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = Path(folder) / name
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _median(work: Callable[[], object], repeat: int) -> float:
    spent = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent)


def _copy(root: Path) -> None:
    target = Path(tempfile.mkdtemp()) / "copy"
    subprocess.run(["cp", "-a", str(root), str(target)], check=True)
    shutil.rmtree(target.parent)


def main(files: int, repeat: int) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="gradeflow-bench-tree-"))
    os.environ.setdefault("GRADEFLOW_HOME", str(scratch / "home"))  # the digest key's home
    try:
        root = scratch / "repo"
        _tree(root, files)
        task = TaskSpec.model_validate(
            {
                "task_id": "tree-checks",
                "type": "bugfix",
                "repo": str(root),
                "base_revision": "0" * 40,
                "tests": {"command": "pytest --junitxml={junit}", "fail_to_pass": ["tests/test_mod.py::test_a"]},
            }
        )
        rows = [
            ("walk: list_files", _median(lambda: list_files(root, GLOBS), repeat)),
            ("walk: os.walk + pathlib", _median(lambda: _os_walk(root), repeat)),
            ("suite_sources (one walk)", _median(lambda: suite_sources(task, root), repeat)),
            ("check: inode_digest", _median(lambda: inode_digest(root, skip_git=True), repeat)),
            ("check: every byte hashed", _median(lambda: _every_byte(root), repeat)),
            ("yardstick: cp -a", _median(lambda: _copy(root), repeat)),
        ]
        copy = rows[-1][1]
        print(f"{files} files, medians of {repeat}:")
        for name, seconds in rows:
            print(f"  {name:28} {seconds:8.4f} s   {seconds / copy:6.2f}x cp -a")
        print(
            f"  walks: os.walk / list_files {rows[1][1] / rows[0][1]:5.1f}x;  checks: bytes / inodes "
            f"{rows[4][1] / rows[3][1]:5.1f}x"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
