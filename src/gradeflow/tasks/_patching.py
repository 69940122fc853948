"""Turning a submission into a private workspace: apply a diff, or diff a checkout, then describe it.

The workspace is always a one-commit git repository of the pristine base; the submission is staged
on top of it, so ``git diff --cached`` is the graded patch in both modes.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from gradeflow.errors import PatchDoesNotApply, PathEscape
from gradeflow.models import ChangedFile
from gradeflow.sandbox.base import remove_tree
from gradeflow.tasks._git import git
from gradeflow.tasks.repo import copy_tree, skipped_by_copy

__all__ = [
    "added_lines",
    "apply_patch",
    "changed_files",
    "check_links",
    "check_patch_paths",
    "graded_patch",
    "stage_checkout",
]

_HEADER = re.compile(
    r"^(?:diff --git a/(\S+) b/(\S+)|(?:---|\+\+\+) (?:[ab]/)?(\S+)|"
    r"(?:rename|copy) (?:from|to) (\S+))"
)


def _escapes(path: str) -> bool:
    if path == "/dev/null":
        return False
    pure = PurePosixPath(path)
    return pure.is_absolute() or ".." in pure.parts or path.startswith("~")


def check_patch_paths(patch: str) -> None:
    """``PathEscape`` when any path the diff names leaves the repository."""
    for line in patch.splitlines():
        match = _HEADER.match(line)
        if match:
            for path in filter(None, match.groups()):
                if _escapes(path):
                    raise PathEscape(f"the patch touches {path!r}, outside the repository")


def apply_patch(workspace: Path, patch: str) -> None:
    """Apply and stage a unified diff; ``PathEscape`` or ``PatchDoesNotApply`` when it cannot."""
    if not patch.strip():
        return  # an empty patch is a valid, empty submission
    check_patch_paths(patch)
    with tempfile.NamedTemporaryFile("wb", suffix=".diff", delete=False) as handle:
        handle.write(patch.encode("utf-8", errors="surrogateescape"))
    try:
        proc = git(workspace, "apply", "--binary", "--whitespace=nowarn", handle.name, check=False)
    finally:
        os.unlink(handle.name)
    if proc.returncode != 0:
        error = proc.stderr.decode(errors="replace").strip().splitlines()
        detail = error[0] if error else "git apply failed"
        if "beyond a symbolic link" in detail or "outside repository" in detail:
            raise PathEscape(f"the patch writes through a link or outside the repository: {detail}")
        raise PatchDoesNotApply(f"the patch does not apply to the base: {detail}")
    check_links(workspace)
    # -f: a file the patch adds is graded even when the repository's .gitignore would hide it.
    git(workspace, "add", "-A", "-f")


def stage_checkout(workspace: Path, checkout: Path) -> None:
    """Replace the workspace's files with the checkout's and stage the difference (ignored files excluded).

    The copy leaves cache folders out (``__pycache__``, ``*.pyc``); files there that the base tracks
    (some sdists ship one) are copied too, so a file the agent never touched is never "removed".
    """
    tracked = git(workspace, "ls-files", "-z").stdout.decode("utf-8", errors="surrogateescape").split("\0")
    for entry in workspace.iterdir():
        if entry.name != ".git":
            remove_tree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    copy_tree(checkout, workspace)
    for path in tracked:
        source = checkout / path
        if path and any(skipped_by_copy(part) for part in Path(path).parts) and _inside_file(source, checkout):
            (workspace / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, workspace / path)
    git(workspace, "add", "-A")
    git(workspace, "clean", "-fdxq")
    check_links(workspace)


def _inside_file(path: Path, root: Path) -> bool:
    """A regular file really inside ``root`` (no link on the way leads out)."""
    return path.is_file() and not path.is_symlink() and path.resolve().is_relative_to(root.resolve())


def check_links(workspace: Path) -> None:
    """``PathEscape`` when a symlink in the workspace points outside it."""
    root = workspace.resolve()
    for folder, dirs, files in os.walk(workspace):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*dirs, *files]:
            entry = Path(folder) / name
            if entry.is_symlink():
                target = (entry.parent / os.readlink(entry)).resolve()
                if not target.is_relative_to(root):
                    raise PathEscape(f"{entry.relative_to(workspace)} links outside the repository")


def graded_patch(workspace: Path) -> str:
    """The staged difference from the base, as a git unified diff with binary hunks."""
    out = git(workspace, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "-M", "HEAD").stdout
    return out.decode("utf-8", errors="replace")


def changed_files(workspace: Path) -> list[ChangedFile]:
    """One entry per staged file, with line counts (binary files are counted, never read)."""
    numstat = git(workspace, "diff", "--cached", "--numstat", "-z", "-M", "HEAD").stdout.decode(errors="replace")
    status = git(workspace, "diff", "--cached", "--name-status", "-z", "-M", "HEAD").stdout.decode(errors="replace")
    kinds = _statuses(status)
    changes = []
    for added, removed, old, new in _numstat(numstat):
        kind = kinds.get(new, "modified")
        changes.append(
            ChangedFile(
                path=new,
                old_path=old if old != new else None,
                status=kind,  # type: ignore[arg-type]
                lines_added=int(added) if added != "-" else 0,
                lines_removed=int(removed) if removed != "-" else 0,
                binary=added == "-",
            )
        )
    return changes


def _statuses(raw: str) -> dict[str, str]:
    names = {"A": "added", "M": "modified", "D": "removed", "R": "renamed", "T": "modified", "C": "added"}
    fields, kinds, i = raw.split("\0"), {}, 0
    while i < len(fields) - 1:
        code = fields[i][:1]
        if code in "RC":
            kinds[fields[i + 2]] = names[code]
            i += 3
        else:
            kinds[fields[i + 1]] = names.get(code, "modified")
            i += 2
    return kinds


def _numstat(raw: str) -> list[tuple[str, str, str, str]]:
    fields, rows, i = raw.split("\0"), [], 0
    while i < len(fields) and fields[i]:
        added, removed, path = fields[i].split("\t", 2)
        if path:
            rows.append((added, removed, path, path))
            i += 1
        else:  # a rename: the old and new paths follow as their own fields
            rows.append((added, removed, fields[i + 1], fields[i + 2]))
            i += 3
    return rows


def added_lines(patch: str) -> dict[str, list[str]]:
    """The lines the patch adds, per target path (empty when unidiff cannot read the diff)."""
    try:
        parsed = PatchSet(patch)
    except UnidiffParseError:
        return {}
    return {f.path: [line.value.rstrip("\n") for hunk in f for line in hunk if line.is_added] for f in parsed}
