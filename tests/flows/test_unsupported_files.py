"""Trees the grader cannot copy, and trees that used to crash the restore step, graded in the local sandbox.

None of them may hang, crash or end inconclusive: what cannot be copied is ``unsupported-file-type``
naming the path, and what can be restored is restored and graded on its merits.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fakes import BUG, FIX, diff
from gradeflow import grade, load_task
from gradeflow.models import GradeResult

pytestmark = pytest.mark.usefixtures("prefect")

TEST_FILE = "def test_div(): ...\ndef test_add(): ...\n"
ROOT = os.geteuid() == 0


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temp folder of this test's own, checked empty of gradeflow's folders afterwards."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    assert not [p.name for p in folder.iterdir() if p.name.startswith("gradeflow-")]


@pytest.fixture
def checkout(tmp_path: Path, repo_task: Callable[..., Path]) -> Iterator[Path]:
    """The fixed repository as an agent's checkout; its modes are put back so the test can clean up."""
    repo_task()
    folder = tmp_path / "checkout"
    shutil.copytree(tmp_path / "repo", folder)
    (folder / "src" / "calc.py").write_text(FIX)
    yield folder
    for current, dirs, _ in os.walk(folder):
        for name in dirs:
            if not (Path(current) / name).is_symlink():
                (Path(current) / name).chmod(0o755)


def _grade_checkout(tmp_path: Path, checkout: Path) -> GradeResult:
    return grade(load_task(tmp_path / "task.yaml"), workspace=checkout, sandbox="local")


def _refused(result: GradeResult, *paths: str) -> str:
    assert (result.status, result.score, result.decision) == ("graded", 0.0, "rejected")
    assert result.reason_codes == ["unsupported-file-type"]
    (message,) = result.component("patch").messages
    assert all(p in message for p in paths), message
    return message


def test_a_fifo_in_a_checkout_is_refused_not_waited_on(tmp_path: Path, checkout: Path, private_tmp: Path) -> None:
    os.mkfifo(checkout / "src" / "pipe")
    message = _refused(_grade_checkout(tmp_path, checkout), "src/pipe")
    assert "FIFO" in message


def test_a_socket_in_a_checkout_is_refused(tmp_path: Path, checkout: Path, private_tmp: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(checkout / "src" / "s.sock"))
        assert "socket" in _refused(_grade_checkout(tmp_path, checkout), "src/s.sock")
    finally:
        server.close()


def test_a_fifo_git_ignores_is_left_out_and_the_rest_graded(tmp_path: Path, checkout: Path, private_tmp: Path) -> None:
    os.mkfifo(checkout / "debug.log")  # *.log is in the repository's .gitignore
    result = _grade_checkout(tmp_path, checkout)
    assert (result.status, result.passed, result.files_changed) == ("graded", True, ["src/calc.py"])


def test_a_symlink_loop_in_a_checkout_is_refused(tmp_path: Path, checkout: Path, private_tmp: Path) -> None:
    (checkout / "src" / "a").symlink_to("b")
    (checkout / "src" / "b").symlink_to("a")
    assert "symlink loop" in _refused(_grade_checkout(tmp_path, checkout), "src/a", "src/b")


def test_a_symlink_loop_in_a_patch_is_refused(
    tmp_path: Path, repo_task: Callable[..., Path], private_tmp: Path
) -> None:
    link = "diff --git a/src/{0} b/src/{0}\nnew file mode 120000\n--- /dev/null\n+++ b/src/{0}\n@@ -0,0 +1 @@\n+{1}\n"
    patch = diff(BUG, FIX) + link.format("a", "b") + "\\ No newline at end of file\n"
    patch += link.format("b", "a") + "\\ No newline at end of file\n"
    result = grade(load_task(repo_task()), patch=patch, sandbox="local")
    assert "symlink loop" in _refused(result, "src/a")


def test_folders_nested_too_deep_are_refused(tmp_path: Path, repo_task: Callable[..., Path], private_tmp: Path) -> None:
    path = "deep/" * 250 + "x.txt"
    patch = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n"
    result = grade(load_task(repo_task()), patch=patch, sandbox="local")
    assert "nested deeper than 200 folders" in _refused(result, "deep/deep/")


def test_unreadable_files_and_folders_never_make_the_grade_inconclusive(
    tmp_path: Path, checkout: Path, private_tmp: Path
) -> None:
    (checkout / "src" / "secret.txt").write_text("x\n")
    (checkout / "src" / "secret.txt").chmod(0o000)
    (checkout / "locked").mkdir()
    (checkout / "locked" / "inside.txt").write_text("y\n")
    (checkout / "locked").chmod(0o000)
    result = _grade_checkout(tmp_path, checkout)
    if ROOT:  # root reads every file: the tree is copied, made writable, and graded on its merits
        assert (result.status, result.passed) == ("graded", True)
        assert set(result.files_changed) == {"src/calc.py", "src/secret.txt", "locked/inside.txt"}
    else:
        _refused(result, "src/secret.txt", "locked")


def test_read_only_folders_in_a_checkout_are_graded(tmp_path: Path, checkout: Path, private_tmp: Path) -> None:
    (checkout / "src" / "helper.py").write_text("X = 1\n")
    (checkout / "src" / "helper.py").chmod(0o444)
    (checkout / "tests").chmod(0o555)
    (checkout / "src").chmod(0o555)
    result = _grade_checkout(tmp_path, checkout)
    assert (result.status, result.passed) == ("graded", True)
    assert set(result.files_changed) == {"src/calc.py", "src/helper.py"}


def test_a_test_folder_replaced_by_a_file_is_restored_and_graded(
    repo_task: Callable[..., Path], private_tmp: Path
) -> None:
    gone = "".join(f"-{line}\n" for line in TEST_FILE.splitlines())
    patch = diff(BUG, FIX) + (
        "diff --git a/tests/test_calc.py b/tests/test_calc.py\ndeleted file mode 100644\n"
        f"--- a/tests/test_calc.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n{gone}"
        "diff --git a/tests b/tests\nnew file mode 100644\n--- /dev/null\n+++ b/tests\n@@ -0,0 +1 @@\n+not a folder\n"
    )
    result = grade(load_task(repo_task()), patch=patch, sandbox="local")
    assert result.status == "graded" and "tests" in result.files_changed
    assert result.component("tests").details["fail_to_pass"] == {"tests/test_calc.py::test_div": "passed"}


def test_a_test_file_replaced_by_a_folder_is_restored_and_graded(
    repo_task: Callable[..., Path], private_tmp: Path
) -> None:
    gone = "".join(f"-{line}\n" for line in TEST_FILE.splitlines())
    inner = "tests/test_calc.py/inner.py"
    patch = diff(BUG, FIX) + (
        "diff --git a/tests/test_calc.py b/tests/test_calc.py\ndeleted file mode 100644\n"
        f"--- a/tests/test_calc.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n{gone}"
        f"diff --git a/{inner} b/{inner}\nnew file mode 100644\n--- /dev/null\n+++ b/{inner}\n@@ -0,0 +1 @@\n+X = 1\n"
    )
    result = grade(load_task(repo_task()), patch=patch, sandbox="local")
    assert result.status == "graded" and inner in result.files_changed
    assert result.component("tests").details["fail_to_pass"] == {"tests/test_calc.py::test_div": "passed"}
