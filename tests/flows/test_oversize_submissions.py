"""Submissions over the size limits (a sparse file in a checkout, a binary patch of deflated zeros) are
refused with ``submission-too-large`` before the grader copies, applies or hashes anything.

The files are sparse (``os.truncate``) or deflated, so they cost nothing here; copied, they would not.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes import FIX
from gradeflow import grade, load_task
from gradeflow.errors import SubmissionTooLarge
from gradeflow.models import GradeResult
from gradeflow.tasks import _sizes, snapshot
from gradeflow.tasks.repo import skipped_by_copy

pytestmark = pytest.mark.usefixtures("prefect")

LIMIT = 8 * 1024**2
"""``environment.disk`` of the task: one file's limit."""
OVER = 32 * LIMIT
"""The oversize file's apparent size: far over the limit, small enough should a broken check copy it."""


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every private copy of the base the snapshot makes (none may be made for a refused submission)."""
    made: list[Path] = []
    real = snapshot.working_copy

    def spy(*args: Any) -> Path:
        made.append(real(*args))
        return made[-1]

    monkeypatch.setattr(snapshot, "working_copy", spy)
    return made


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temp folder of this test's own; what the grade leaves there is checked small afterwards."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    assert _bytes_on_disk(folder) < LIMIT


def _bytes_on_disk(folder: Path) -> int:
    return sum(p.lstat().st_blocks * 512 for p in folder.rglob("*"))


def _task(repo_task: Callable[..., Path]) -> Path:
    return repo_task(environment={"disk": "8m"})


def _refused(result: GradeResult, *words: str) -> str:
    assert (result.status, result.score, result.decision, result.passed) == ("graded", 0.0, "rejected", False)
    assert result.reason_codes == ["submission-too-large"]
    (message,) = result.component("patch").messages
    assert all(w in message for w in words), message
    return message


def test_a_sparse_file_in_a_checkout_is_refused_before_any_copy(
    tmp_path: Path, repo_task: Callable[..., Path], copies: list[Path], private_tmp: Path
) -> None:
    task = _task(repo_task)
    checkout = tmp_path / "checkout"
    shutil.copytree(tmp_path / "repo", checkout)
    (checkout / "src" / "calc.py").write_text(FIX)
    blob = checkout / "src" / "blob.dat"
    blob.touch()
    os.truncate(blob, OVER)
    assert blob.stat().st_blocks * 512 < LIMIT  # sparse: nothing on disk, measured whole all the same
    result = grade(load_task(task), workspace=checkout, sandbox="local")
    _refused(result, "src/blob.dat", str(OVER), str(LIMIT))
    assert copies == []


def test_a_git_ignored_sparse_file_is_refused_too(
    tmp_path: Path, repo_task: Callable[..., Path], copies: list[Path], private_tmp: Path
) -> None:
    """The copy takes ignored files before git reads the ignore rules, so they count."""
    task = _task(repo_task)
    checkout = tmp_path / "checkout"
    shutil.copytree(tmp_path / "repo", checkout)
    (checkout / "debug.log").touch()  # *.log is ignored
    os.truncate(checkout / "debug.log", OVER)
    _refused(grade(load_task(task), workspace=checkout, sandbox="local"), "debug.log")
    assert copies == []


def _literal_patch(path: str, size: int) -> str:
    """A git binary patch creating ``path`` as ``size`` zero bytes: a few KiB of text."""
    squeezer, data, blob = zlib.compressobj(9), bytearray(), hashlib.sha1(f"blob {size}\0".encode())
    chunk = bytes(1 << 20)
    for _ in range(size // len(chunk)):
        data += squeezer.compress(chunk)
        blob.update(chunk)
    data += squeezer.flush()
    lines = []
    for at in range(0, len(data), 52):
        piece = bytes(data[at : at + 52])
        code = chr(ord("A") + len(piece) - 1) if len(piece) <= 26 else chr(ord("a") + len(piece) - 27)
        lines.append(code + base64.b85encode(piece, pad=True).decode())
    body = "\n".join(lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex {'0' * 40}..{blob.hexdigest()}\n"
        f"GIT binary patch\nliteral {size}\n{body}\n\nliteral 0\nHcmV?d00001\n\n"
    )


def test_a_binary_patch_inflating_past_the_limit_is_refused_before_it_is_applied(
    tmp_path: Path, repo_task: Callable[..., Path], copies: list[Path], private_tmp: Path
) -> None:
    task = _task(repo_task)
    patch = _literal_patch("src/blob.dat", OVER)
    assert len(patch) < LIMIT // 16
    _refused(grade(load_task(task), patch=patch, sandbox="local"), "src/blob.dat", str(OVER), str(LIMIT))
    assert copies == []


def test_a_small_binary_patch_is_graded_on_its_merits(
    tmp_path: Path, repo_task: Callable[..., Path], private_tmp: Path
) -> None:
    task = _task(repo_task)
    result = grade(load_task(task), patch=_literal_patch("src/blob.dat", 1 << 20), sandbox="local")
    assert "src/blob.dat" in result.files_changed, result.reason_codes
    assert "submission-too-large" not in result.reason_codes


def test_a_delta_hunk_is_measured_by_the_file_it_makes() -> None:
    header = bytes([10]) + bytes([0x80, 0x80, 0x80, 0x80, 0x10])  # source 10 bytes, result 2**32
    data = zlib.compress(header)
    code = chr(ord("A") + len(data) - 1)
    patch = f"diff --git a/x b/x\nindex 1..2 100644\nGIT binary patch\ndelta {len(data)}\n{code}"
    patch += base64.b85encode(data, pad=True).decode() + "\n\n"
    with pytest.raises(SubmissionTooLarge, match="writes x as 4294967296 bytes"):
        _sizes.check_patch_size(patch, LIMIT)


def test_a_checkout_of_too_many_files_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sizes, "MAX_CHECKOUT_FILES", 5)
    for n in range(6):
        (tmp_path / f"f{n}").touch()
    with pytest.raises(SubmissionTooLarge, match="more than 5 files"):
        _sizes.check_checkout_size(tmp_path, skipped_by_copy, LIMIT)


def test_many_sparse_files_each_under_the_limit_are_refused_in_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sizes, "MAX_CHECKOUT_BYTES", 4 * LIMIT)
    for n in range(5):
        (tmp_path / f"f{n}").touch()
        os.truncate(tmp_path / f"f{n}", LIMIT)
    with pytest.raises(SubmissionTooLarge, match="in all"):
        _sizes.check_checkout_size(tmp_path, skipped_by_copy, LIMIT)
