"""Committing an overlay's upper layer into its lower folder, once the overlay is unmounted.

The isolated sandbox shows the workspace as an overlay whose writes land on the sandbox's own file system
(:mod:`gradeflow.sandbox._disk`); when it closes, :func:`commit_upper` leaves the host folder holding what the
overlay showed, as if commands had written there. The overlay is mounted with ``redirect_dir=off`` and
``metacopy=off``, so each entry of the upper layer speaks for its own path alone: a whiteout (a character
device 0/0) removes the lower entry, an opaque folder (``trusted.overlay.opaque``) replaces it, a file, link
or FIFO replaces it, any other folder merges into it.

gradeflow runs this as root over a tree the candidate shaped: every step goes through folder descriptors
opened with ``O_NOFOLLOW``, so no link in the lower folder is ever followed. It is a best effort over what
the command left: an entry that cannot be applied (nested over :data:`MAX_DEPTH` folders deep, a host disk
without room) is left out, never an error of the grader.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from gradeflow.sandbox.base import remove_tree

__all__ = ["MAX_DEPTH", "commit_upper"]

MAX_DEPTH = 200
"""Folders deeper than this under the workspace are not committed (two descriptors are open per level)."""
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_OPAQUE = "trusted.overlay.opaque"


def commit_upper(upper: Path, lower: Path) -> None:
    """Apply the upper layer at ``upper`` to ``lower`` (see the module's docstring)."""
    stack = [(os.open(upper, _DIR), os.open(lower, _DIR), _names(upper))]
    try:
        while stack:
            upper_fd, lower_fd, names = stack[-1]
            if not names:
                stack.pop()
                if stack:  # the root's own metadata is the sandbox's, not the command's
                    _copy_metadata(os.fstat(upper_fd), lower_fd)
                os.close(upper_fd)
                os.close(lower_fd)
                continue
            name = names.pop()
            with contextlib.suppress(OSError):
                child = _apply(name, upper_fd, lower_fd, len(stack) < MAX_DEPTH)
                if child is not None:
                    stack.append(child)
    finally:
        for upper_fd, lower_fd, _ in stack:
            os.close(upper_fd)
            os.close(lower_fd)


def _names(folder: int | Path) -> list[str]:
    with os.scandir(folder) as entries:
        return [entry.name for entry in entries]


def _apply(name: str, upper_fd: int, lower_fd: int, deeper: bool) -> tuple[int, int, list[str]] | None:
    """Apply one entry; for a folder, the descriptors and names to apply under it next."""
    info = os.stat(name, dir_fd=upper_fd, follow_symlinks=False)
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        return _folder(name, upper_fd, lower_fd, deeper)
    _remove(name, lower_fd)
    if stat.S_ISREG(mode):
        _copy_file(name, upper_fd, lower_fd, info)
    elif stat.S_ISLNK(mode):
        os.symlink(os.readlink(name, dir_fd=upper_fd), name, dir_fd=lower_fd)
        os.chown(name, info.st_uid, info.st_gid, dir_fd=lower_fd, follow_symlinks=False)
    elif stat.S_ISFIFO(mode):
        os.mkfifo(name, 0o600, dir_fd=lower_fd)
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW, dir_fd=lower_fd)
        try:
            _copy_metadata(info, fd)
        finally:
            os.close(fd)
    # A whiteout (a character device 0/0) only removes; sockets and devices are not carried over.
    return None


def _folder(name: str, upper_fd: int, lower_fd: int, deeper: bool) -> tuple[int, int, list[str]] | None:
    if not deeper:
        return None
    try:
        opaque = os.getxattr(f"/proc/self/fd/{upper_fd}/{name}", _OPAQUE, follow_symlinks=False) == b"y"
    except OSError:
        opaque = False
    try:
        existing = os.stat(name, dir_fd=lower_fd, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None and (opaque or not stat.S_ISDIR(existing.st_mode)):
        _remove(name, lower_fd)
        existing = None
    if existing is None:
        os.mkdir(name, 0o700, dir_fd=lower_fd)
    child_upper = os.open(name, _DIR, dir_fd=upper_fd)
    try:
        child_lower = os.open(name, _DIR, dir_fd=lower_fd)
    except OSError:
        os.close(child_upper)
        raise
    return child_upper, child_lower, _names(child_upper)


def _remove(name: str, lower_fd: int) -> None:
    """Remove ``name`` from the lower folder, whatever it is; a folder through its descriptor's own path."""
    try:
        existing = os.stat(name, dir_fd=lower_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(existing.st_mode):
        remove_tree(Path(f"/proc/self/fd/{lower_fd}") / name)
    else:
        os.unlink(name, dir_fd=lower_fd)


def _copy_file(name: str, upper_fd: int, lower_fd: int, info: os.stat_result) -> None:
    source = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=upper_fd)
    try:
        target = os.open(name, _NEW, 0o600, dir_fd=lower_fd)
        try:
            _copy_data(source, target, info.st_size)
            _copy_metadata(info, target)
        finally:
            os.close(target)
    finally:
        os.close(source)


def _copy_data(source: int, target: int, size: int) -> None:
    """The data of ``source`` at the same offsets in ``target``, holes left holes: a sparse file of a huge
    length takes on the host only the blocks it took on the sandbox's disk."""
    offset = 0
    while offset < size:
        try:
            data = os.lseek(source, offset, os.SEEK_DATA)
        except OSError:  # ENXIO: only a hole is left
            break
        hole = os.lseek(source, data, os.SEEK_HOLE)
        os.lseek(target, data, os.SEEK_SET)
        while data < hole and (sent := os.sendfile(target, source, data, hole - data)):
            data += sent
        offset = hole
    os.ftruncate(target, size)


def _copy_metadata(info: os.stat_result, fd: int) -> None:
    """Owner, then mode (a change of owner clears set-id bits), then times, from ``info`` onto ``fd``."""
    os.fchown(fd, info.st_uid, info.st_gid)
    os.fchmod(fd, stat.S_IMODE(info.st_mode))
    os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
