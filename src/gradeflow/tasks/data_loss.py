"""Evidence for the data-loss detector: two commits of a repository, or two checkouts and their changes.

Changes come from ``git diff --name-status -z -M`` (git's rename detection: a file moved with most of its
content is ``renamed``, not deleted). Tests are the ``test_*`` functions a changed test file defines at
module level or in a ``Test*`` class, found by parsing (nothing is imported). A test file that does not
parse on the candidate defines no tests. Sizes are compared for the modified files only.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from gradeflow.graders.data_loss import DataLossFinding, FileSize, data_loss_findings
from gradeflow.integrity.bounded import PARSE_ERRORS
from gradeflow.models import ChangedFile
from gradeflow.tasks._git import git
from gradeflow.text import parse_python

__all__ = ["data_loss_between", "data_loss_from", "defined_tests"]

_STATUS = {"A": "added", "M": "modified", "D": "removed", "R": "renamed"}


def _show(repo: Path, rev: str, path: str) -> str | None:
    run = git(repo, "show", f"{rev}:{path}", check=False)
    return run.stdout.decode("utf-8", "replace") if run.returncode == 0 else None


def defined_tests(path: str, text: str | None) -> set[str]:
    """``path::name`` of each ``test_*`` function at module level or in a ``Test*`` class of ``text``."""
    try:
        tree = parse_python(text or "")
    except PARSE_ERRORS:  # a nesting too deep for the parser, null bytes: the candidate's file defines no test
        return set()
    bodies = [tree.body] + [n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Test")]
    funcs = (n for body in bodies for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    return {f"{path}::{f.name}" for f in funcs if f.name.startswith("test_")}


def _changes(repo: Path, base: str, candidate: str) -> list[ChangedFile]:
    """The changes between two commits, names as they are (``-z``: no quoting, any byte but NUL)."""
    fields = git(repo, "diff", "--name-status", "-z", "-M", base, candidate).stdout.decode(errors="surrogateescape")
    parts, changes = fields.split("\0"), []
    while len(parts) > 1:
        status = parts.pop(0)
        kind = _STATUS.get(status[:1], "modified")
        old = parts.pop(0)
        new = parts.pop(0) if status[:1] in ("R", "C") else old
        changes.append(ChangedFile(path=new, old_path=old if kind == "renamed" else None, status=kind))  # type: ignore[arg-type]
    return changes


def _size(text: str) -> FileSize:
    return FileSize(lines=len(text.splitlines()), size=len(text.encode()))


def data_loss_from(
    changes: list[ChangedFile],
    read_base: Callable[[str], str | None],
    read_candidate: Callable[[str], str | None],
    scope: list[str],
    data: list[str] | None = None,
) -> list[DataLossFinding]:
    """What the ``changes`` lose, reading each side's files (``None`` when absent) through the readers."""
    before: set[str] = set()
    after: set[str] = set()
    sizes: dict[str, tuple[FileSize, FileSize]] = {}
    for c in changes:
        old_path = c.old_path or c.path
        old, new = read_base(old_path), read_candidate(c.path)
        if Path(c.path).name.startswith("test_") or Path(old_path).name.startswith("test_"):
            before |= defined_tests(old_path, old)
            after |= defined_tests(c.path, new) if c.status != "removed" else set()
        if c.status == "modified" and old is not None and new is not None:
            sizes[c.path] = (_size(old), _size(new))
    return data_loss_findings(changes, before, after, sizes, scope, data)


def data_loss_between(
    repo: Path, base: str, candidate: str, scope: list[str], data: list[str] | None = None
) -> list[DataLossFinding]:
    """What commit ``candidate`` loses against ``base`` in ``repo`` (git's rename detection on)."""
    changes = _changes(repo, base, candidate)
    return data_loss_from(changes, lambda p: _show(repo, base, p), lambda p: _show(repo, candidate, p), scope, data)
