"""Host-side file helpers for the private workspace: a read-only view, restores, hidden-test injection."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gradeflow.graders.base import WorkspaceView
from gradeflow.models import ChangedFile
from gradeflow.models.globs import any_matcher
from gradeflow.sandbox.base import remove_tree

__all__ = [
    "HostWorkspace",
    "every_file",
    "inject_tree",
    "list_files",
    "matching_entries",
    "readable_file",
    "remove_injected",
    "restore_from",
    "tree_entries",
]

MAX_READ_BYTES = 8 * 1024 * 1024


def readable_file(root: Path, path: str) -> Path:
    """``root/path`` resolved: a regular file inside ``root`` (never through a link out of it), at most
    ``MAX_READ_BYTES``; ``FileNotFoundError`` otherwise."""
    target = (root / path).resolve()
    if not target.is_relative_to(root.resolve()) or not target.is_file():
        raise FileNotFoundError(path)
    if target.stat().st_size > MAX_READ_BYTES:
        raise FileNotFoundError(f"{path} is larger than {MAX_READ_BYTES} bytes")
    return target


@dataclass
class HostWorkspace(WorkspaceView):
    """Read-only view of a private workspace folder; reads never follow a link out of it."""

    root: Path
    changes: list[ChangedFile] = field(default_factory=list)
    patch: str = ""
    added: dict[str, list[str]] = field(default_factory=dict)

    def read(self, path: str) -> str:
        return readable_file(self.root, path).read_text(encoding="utf-8", errors="replace")

    def added_lines(self, path: str) -> list[str]:
        return self.added.get(path, [])


def list_files(root: Path, globs: list[str]) -> list[str]:
    """Repository-relative paths of regular files under ``root`` matching ``globs`` (no links, no .git)."""
    return matching_entries(root, globs)[0]


def every_file(root: Path) -> list[str]:
    """Every regular file under ``root`` (no .git, no links), as :func:`list_files` orders them."""
    return [rel for rel, link in _walk(root) if not link]


def matching_entries(root: Path, globs: list[str]) -> tuple[list[str], list[str]]:
    """The files under ``root`` matching ``globs`` (no .git, links to folders not entered), in one walk:
    ``(regular files, links to files)``, each as sorted repository-relative paths."""
    files_found: list[str] = []
    links_found: list[str] = []
    match = any_matcher(tuple(globs))
    for rel, link in _walk(root):
        if match(rel):
            (links_found if link else files_found).append(rel)
    return files_found, links_found


def tree_entries(
    root: Path, enter: Callable[[str], bool] = lambda rel: True
) -> Iterator[tuple[str, os.DirEntry[str] | None]]:
    """``(path relative to root, entry)`` of everything under ``root``: a folder's entries by name, then those of
    its subfolders (real folders, never a link to one) whose path ``enter`` admits, in the same order; ``(path,
    None)`` for a folder that cannot be listed. Strings and ``os.scandir``'s cached entry types, no path objects:
    the repository's tree is walked several times a grade."""
    pending = [""]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(os.path.join(root, folder) if folder else root) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            yield folder, None
            continue
        prefix = f"{folder}/" if folder else ""
        subfolders = []
        for entry in entries:
            rel = prefix + entry.name
            yield rel, entry
            if _is_folder(entry, follow=False) and enter(rel):
                subfolders.append(rel)
        pending.extend(reversed(subfolders))


def _walk(root: Path) -> Iterator[tuple[str, bool]]:
    """``(repository-relative path, whether a link)`` of every file and link to a file under ``root``, in
    :func:`tree_entries`' order, never into ``.git`` or through a link to a folder; a folder that cannot be read
    is passed over (as ``os.walk`` does)."""
    for rel, entry in tree_entries(root, lambda rel: rel.rpartition("/")[2] != ".git"):
        if entry is None:
            continue
        if entry.is_symlink():
            if not _is_folder(entry, follow=True):
                yield rel, True
        elif not _is_folder(entry, follow=False):
            yield rel, False


def _is_folder(entry: os.DirEntry[str], *, follow: bool) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:
        return False


def restore_from(pristine: Path, workspace: Path, paths: list[str]) -> list[str]:
    """Put ``paths`` back as they are in ``pristine`` (removing those the base lacks); returns those changed.

    Whatever the workspace has on the way to a path where the base has a folder (a file, a link, a
    link loop) is removed first, so nothing is written through a link and no folder is missing; a
    folder where the base has a file is removed whole, whatever its modes.
    """
    restored = []
    for rel in paths:
        source, target = pristine / rel, workspace / rel
        cleared = _clear_the_way(pristine, workspace, rel)
        if target.is_symlink() or target.exists():
            _remove(target)
            restored.append(rel)
        if source.is_file() and not source.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            _make_writable(target.parent)
            shutil.copy2(source, target)
        if (cleared or source.is_file()) and rel not in restored:
            restored.append(rel)
    return restored


def _clear_the_way(pristine: Path, workspace: Path, rel: str) -> bool:
    """Remove the first entry on the way to ``rel`` that is not the folder the base has there; whether one was."""
    parts = Path(rel).parts[:-1]
    for depth in range(1, len(parts) + 1):
        here, base = workspace.joinpath(*parts[:depth]), pristine.joinpath(*parts[:depth])
        if here.is_dir() and not here.is_symlink():
            continue
        if not here.is_symlink() and not here.exists():
            return False
        if here.is_symlink() and base.is_symlink() and os.readlink(here) == os.readlink(base):
            continue  # the base's own link
        if not here.is_symlink() and not base.is_dir():
            return False  # a file where the base has no folder either: nothing lies beneath it to restore
        _remove(here)
        return True
    return False


def _remove(path: Path) -> None:
    """Remove a file, link or whole folder, also from a read-only folder or with unreadable subfolders."""
    _make_writable(path.parent)
    if path.is_dir() and not path.is_symlink():
        remove_tree(path)
    else:
        path.unlink()


def _make_writable(folder: Path) -> None:
    mode = folder.stat().st_mode
    if mode & 0o700 != 0o700:
        folder.chmod(mode | 0o700)


def inject_tree(source: Path, workspace: Path, backup: Path) -> list[str]:
    """Copy ``source`` over the workspace, saving files it overwrites under ``backup``; returns the paths."""
    injected = list_files(source, ["**"])
    for rel in injected:
        target = workspace / rel
        if target.is_symlink() or target.is_dir():
            raise FileExistsError(f"hidden test {rel} would overwrite a link or folder of the submission")
        if target.exists():
            (backup / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(target, backup / rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / rel, target)
    return injected


def remove_injected(workspace: Path, injected: list[str], backup: Path) -> None:
    """Undo :func:`inject_tree`: remove the injected files and put the originals back."""
    for rel in injected:
        (workspace / rel).unlink(missing_ok=True)
        if (backup / rel).exists():
            shutil.move(backup / rel, workspace / rel)
