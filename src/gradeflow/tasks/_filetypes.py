"""Entries of a candidate's tree the grader cannot copy or follow, found before anything copies them.

A checkout may hold what no patch can: a FIFO (opening it to copy blocks), a socket or a device node
(no content to copy), a file or folder gradeflow's user cannot read, a symlink loop (resolving it
raises), or folders nested deeper than the copy can recurse. :func:`unsupported_entries` lists them
without following any link or opening any file; :func:`why_unsupported` is the test for one entry, so a
copy can leave out exactly what the scan reports.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath

__all__ = ["MAX_DEPTH", "too_deep", "unsupported_entries", "why_unsupported"]

MAX_DEPTH = 200
"""Folders deeper than this are refused: copying recurses once per level."""

_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def why_unsupported(path: Path) -> str | None:
    """Why the entry at ``path`` cannot be copied or followed, or ``None`` when it can. Follows no link."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        return f"an entry that cannot be examined ({exc.strerror})"
    kind = _KINDS.get(stat.S_IFMT(mode))
    if kind is not None:
        return kind
    if stat.S_ISLNK(mode):
        return _link_problem(path)
    if stat.S_ISDIR(mode):
        return None if os.access(path, os.R_OK | os.X_OK) else "a folder gradeflow cannot list"
    return None if os.access(path, os.R_OK) else "a file gradeflow cannot read"


def _link_problem(path: Path) -> str | None:
    try:
        path.resolve()
        os.stat(path)
    except RuntimeError:
        return "a symlink loop"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop"
    return None  # a dangling link is an ordinary link


def too_deep(relative: str) -> bool:
    """Whether a repository-relative path lies deeper than :data:`MAX_DEPTH` folders."""
    return len(PurePosixPath(relative).parts) > MAX_DEPTH


def unsupported_entries(root: Path, skip: Callable[[str], bool]) -> dict[str, str]:
    """Repository-relative paths under ``root`` that cannot be copied or followed, with why.

    Folders whose name ``skip`` accepts are not entered; a refused folder is reported, not entered.
    The walk is iterative, so no depth makes it fail.
    """
    found: dict[str, str] = {}
    pending = [root]
    while pending:
        folder = pending.pop()
        for name in sorted(os.listdir(folder)):
            if skip(name):
                continue
            path = folder / name
            relative = path.relative_to(root).as_posix()
            why = why_unsupported(path)
            if why is None and too_deep(relative):
                why = f"nested deeper than {MAX_DEPTH} folders"
            if why is not None:
                found[relative] = why
            elif path.is_dir() and not path.is_symlink():
                pending.append(path)
    return dict(sorted(found.items()))
