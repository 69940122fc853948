"""Committing an overlay's writes into its lower folder, on a real overlayfs (root only)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from gradeflow.sandbox._commit import commit_upper
from gradeflow.sandbox._disk import mount_overlay, unmount

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting an overlay needs root")


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    """A folder with files, folders and a link, shown as an overlay at its own path while the test runs."""
    lower = tmp_path / "tree"
    (lower / "keep" / "deep").mkdir(parents=True)
    (lower / "keep" / "deep" / "a.txt").write_text("a")
    (lower / "gone").mkdir()
    (lower / "gone" / "b.txt").write_text("b")
    (lower / "changed.txt").write_text("old")
    (lower / "removed.txt").write_text("x")
    (lower / "replaced").mkdir()
    (lower / "replaced" / "old.txt").write_text("old")
    (lower / "link").symlink_to("keep")
    for name in ("upper", "work"):
        (tmp_path / name).mkdir()
    mount_overlay(lower, tmp_path / "upper", tmp_path / "work", lower)
    try:
        yield lower
    finally:
        unmount(lower)


def _manifest(root: Path) -> dict[str, tuple[str, str, int]]:
    """Every path under ``root``: its kind, content (a link's target) and permission bits."""
    found: dict[str, tuple[str, str, int]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            found[str(path.relative_to(root))] = ("link", os.readlink(path), 0)
        elif stat.S_ISDIR(info.st_mode):
            found[str(path.relative_to(root))] = ("dir", "", stat.S_IMODE(info.st_mode))
        else:
            found[str(path.relative_to(root))] = ("file", path.read_text(), stat.S_IMODE(info.st_mode))
    return found


def test_the_lower_folder_ends_as_the_overlay_showed_it(tree: Path, tmp_path: Path) -> None:
    (tree / "changed.txt").write_text("new")
    (tree / "removed.txt").unlink()
    (tree / "made" / "in").mkdir(parents=True)
    (tree / "made" / "in" / "c.txt").write_text("c")
    (tree / "made" / "in" / "c.txt").chmod(0o751)
    (tree / "keep" / "deep" / "more.txt").write_text("more")
    (tree / "gone" / "b.txt").unlink()
    (tree / "gone").rmdir()
    (tree / "replaced" / "old.txt").unlink()
    (tree / "replaced").rmdir()
    (tree / "replaced").mkdir()  # opaque: nothing of the old folder shows through
    (tree / "replaced" / "new.txt").write_text("new")
    (tree / "link").unlink()
    (tree / "link").symlink_to("made")
    (tree / "keep" / "deep").chmod(0o700)
    shown = _manifest(tree)
    unmount(tree)
    commit_upper(tmp_path / "upper", tree)
    assert _manifest(tree) == shown
    assert "replaced/old.txt" not in shown and shown["replaced/new.txt"][1] == "new"


def test_a_link_in_the_lower_folder_is_never_followed(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / "escape").symlink_to(outside)
    unmount(tree)  # the link is in the lower folder, as a candidate's patch would put it
    mount_overlay(tree, tmp_path / "upper", tmp_path / "work", tree)
    (tree / "escape").unlink()
    (tree / "escape").mkdir()
    (tree / "escape" / "planted").write_text("x")
    unmount(tree)
    commit_upper(tmp_path / "upper", tree)
    assert list(outside.iterdir()) == []
    assert (tree / "escape").is_dir() and not (tree / "escape").is_symlink()
    assert (tree / "escape" / "planted").read_text() == "x"


def test_a_sparse_file_stays_sparse(tree: Path, tmp_path: Path) -> None:
    with (tree / "sparse.bin").open("wb") as handle:
        handle.seek(50 * 1024**3)
        handle.write(b"end")
    unmount(tree)
    commit_upper(tmp_path / "upper", tree)
    info = (tree / "sparse.bin").stat()
    assert info.st_size == 50 * 1024**3 + 3 and info.st_blocks * 512 < 1024 * 1024
    with (tree / "sparse.bin").open("rb") as handle:
        handle.seek(50 * 1024**3)
        assert handle.read() == b"end"
