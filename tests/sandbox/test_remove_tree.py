"""Removing a tree a command shaped: any depth, any modes, never through a link, never recursing."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gradeflow.sandbox.base import remove_tree


def _nest(root: Path, depth: int) -> None:
    """``depth`` folders, each holding a file, made relative to a descriptor as a command can (no long path)."""
    fd = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)


def test_a_tree_deeper_than_the_recursion_limit_is_removed(tmp_path: Path) -> None:
    root = tmp_path / "run"
    root.mkdir()
    depth = sys.getrecursionlimit() * 3
    _nest(root, depth)
    remove_tree(root)
    assert not root.exists()


def test_folders_without_permissions_are_removed(tmp_path: Path) -> None:
    root = tmp_path / "run"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "file").write_text("x")
    (root / "a" / "b").chmod(0)
    (root / "a").chmod(0o500)
    remove_tree(root)
    assert not root.exists()


def test_links_are_removed_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "file").write_text("kept")
    root = tmp_path / "run"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "to-folder").symlink_to(outside)
    (root / "to-file").symlink_to(outside / "keep" / "file")
    remove_tree(root)
    assert not root.exists()
    assert (outside / "keep" / "file").read_text() == "kept"


def test_names_like_its_own_are_no_trouble(tmp_path: Path) -> None:
    root = tmp_path / "run"
    for name in (".gradeflow-flat-0", ".gradeflow-flat-1", "x/.gradeflow-flat-2", "x/y/.gradeflow-flat-0"):
        (root / name).mkdir(parents=True)
        (root / name / "file").write_text("x")
    remove_tree(root)
    assert not root.exists()


def test_a_missing_folder_is_no_error_and_a_link_is_refused(tmp_path: Path) -> None:
    remove_tree(tmp_path / "missing")
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(OSError, match="is a link"):
        remove_tree(link)
    remove_tree(link, ignore_errors=True)
    assert target.is_dir()
