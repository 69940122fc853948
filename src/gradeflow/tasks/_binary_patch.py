"""Large binary files in the graded patch: their path, size and hash instead of their base85 content.

``git diff --binary`` embeds every binary file whole (base85 of its compressed bytes, about 1.3× the
file for random data), so a 100 MB file made a 135 MB ``result.patch``. Past a cap per file and a
budget per patch, :func:`omit_large_binaries` keeps the file's headers (the ``index`` line names both
git blob ids), replaces the ``GIT binary patch`` block by git's own ``Binary files … differ`` line and
adds a ``# gradeflow:`` line with the path, the size and the SHA-256 of the file after the patch. git
ignores that line; ``git apply`` then takes the content from the object store when it has the blob.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from gradeflow.tasks._diff import file_diffs

__all__ = ["MAX_EMBEDDED_BINARY", "MAX_EMBEDDED_BINARY_TOTAL", "omit_large_binaries"]

MAX_EMBEDDED_BINARY = 64 * 1024
"""Characters of ``GIT binary patch`` text one file may keep in the patch."""
MAX_EMBEDDED_BINARY_TOTAL = 1024 * 1024
"""Characters of ``GIT binary patch`` text the whole patch may keep; later files are left out past it."""
_MARK = "\nGIT binary patch\n"
_SECTION = re.compile(r"^(?=diff --git )", re.MULTILINE)
_LITERAL = re.compile(r"literal (\d+)\n")
_INDEX = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)", re.MULTILINE)
_UNSAFE = re.compile(r'["\\\x00-\x1f\x7f]')


def omit_large_binaries(patch: str, workspace: Path | None = None) -> str:
    """``patch`` with each binary file over the caps reduced to its headers, path, size and hash.

    ``workspace`` is the tree after the patch: sizes and SHA-256 come from its files. Without it (a
    refused submission), the size is the one a ``literal`` hunk states and the hash the git blob id.
    A patch without binary content is returned as it is.
    """
    if _MARK not in patch:
        return patch
    budget = MAX_EMBEDDED_BINARY_TOTAL
    parts = []
    for section in _SECTION.split(patch):
        at = section.find(_MARK)
        size = len(section) - at if at >= 0 else 0
        if at >= 0 and (size > MAX_EMBEDDED_BINARY or size > budget):
            section = _summary(section[: at + 1], section[at + len(_MARK) :], workspace)
        else:
            budget -= size
        parts.append(section)
    return "".join(parts)


def _summary(header: str, hunks: str, workspace: Path | None) -> str:
    """The header, git's ``Binary files`` line and a ``# gradeflow:`` line for one left-out file."""
    files = file_diffs(header.encode("utf-8", errors="surrogateescape"))
    if not files:
        return header
    old, new = files[0].old_path, files[0].path
    source = "/dev/null" if old is None else _quoted(f"a/{old}")
    target = "/dev/null" if new is None else _quoted(f"b/{new}")
    facts = _facts(header, hunks, new, workspace) if new is not None else "removed"
    note = f"# gradeflow: binary content left out: {_quoted(new or old or '')}, {facts}\n"
    return f"{header}Binary files {source} and {target} differ\n{note}"


def _facts(header: str, hunks: str, path: str, workspace: Path | None) -> str:
    """``N bytes, sha256 H`` for the file after the patch, from the workspace when it has it."""
    target = workspace / path if workspace is not None else None
    if target is not None and target.is_file() and not target.is_symlink():
        digest = hashlib.sha256()
        with target.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        return f"{target.stat().st_size} bytes, sha256 {digest.hexdigest()}"
    literal = _LITERAL.match(hunks)
    size = f"{literal.group(1)} bytes" if literal else "size unknown"
    index = _INDEX.search(header)
    return f"{size}, git blob {index.group(2)}" if index else size


def _quoted(name: str) -> str:
    """``name`` as git prints it: C-quoted when it holds a quote, a backslash or a control character."""
    if not _UNSAFE.search(name):
        return name
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    escaped = re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\{ord(m.group()):03o}", escaped)
    return f'"{escaped}"'
