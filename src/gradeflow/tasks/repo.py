"""Finding and materializing the pristine base: a git commit, a plain folder, or a .tar.gz."""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from gradeflow.errors import BaselineBroken, InfraError, SpecError
from gradeflow.models import TaskSpec
from gradeflow.tasks._filetypes import MAX_DEPTH, why_unsupported
from gradeflow.tasks._git import git, init_snapshot_repo

__all__ = [
    "BaseRef",
    "copy_tree",
    "gitlinks",
    "materialize",
    "resolve_base",
    "skipped_by_copy",
    "write_agent_checkout",
]

_SKIP = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


def skipped_by_copy(name: str) -> bool:
    """Whether :func:`copy_tree` leaves out entries of this name (VCS and cache folders, bytecode)."""
    return name in _SKIP or name.endswith(".pyc")


class BaseRef(BaseModel):
    """Where the base comes from and which exact content it is."""

    kind: Literal["git", "folder", "archive"]
    location: str
    revision: str
    """Full commit id, or the content hash of a folder or archive."""
    submodules: dict[str, str] = {}
    """A git base's submodules filled from local repositories: path in the base -> repository."""


def resolve_base(task: TaskSpec) -> BaseRef:
    """Pin the task's base; ``SpecError`` when the repository or revision does not exist."""
    location = task.repo
    if "://" in location or location.startswith("git@"):
        raise InfraError(
            f"repo {location}: remote repositories must be cloned first (no network here)",
            reason_code="baseline-broken",
        )
    path = Path(location)
    if not path.exists():
        raise SpecError(f"repo: {location} does not exist (task {task.task_id})")
    if path.is_file() and location.endswith((".tar.gz", ".tgz")):
        return BaseRef(kind="archive", location=location, revision=_file_hash(path))
    if (path / ".git").exists() or task.base_revision:
        for name, source in task.submodules.items():
            if not Path(source).is_dir():
                raise SpecError(f"submodules: {name}: {source} is not a folder (task {task.task_id})")
        revision = _git_revision(path, task)
        return BaseRef(kind="git", location=location, revision=revision, submodules=task.submodules)
    if task.submodules:
        raise SpecError(f"submodules: given for {location}, which is not a git repository (task {task.task_id})")
    return BaseRef(kind="folder", location=location, revision=_folder_hash(path))


def _git_revision(path: Path, task: TaskSpec) -> str:
    if not task.base_revision:
        raise SpecError(f"base_revision: required for the git repository {path} (task {task.task_id})")
    proc = git(path, "rev-parse", "--verify", "--quiet", f"{task.base_revision}^{{commit}}", check=False)
    if proc.returncode != 0:
        raise SpecError(f"base_revision: {task.base_revision} not found in {path} (task {task.task_id})")
    return proc.stdout.decode().strip()


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:40]


def _folder_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP)
        for name in sorted(files):
            if name.endswith(".pyc"):
                continue
            full = Path(folder) / name
            digest.update(str(full.relative_to(root)).encode() + b"\0")
            digest.update(os.readlink(full).encode() if full.is_symlink() else full.read_bytes())
    return digest.hexdigest()[:40]


def copy_tree(source: Path, dest: Path) -> None:
    """Copy a folder keeping symlinks as links and skipping VCS and cache folders.

    Entries that cannot be copied (see :func:`gradeflow.tasks._filetypes.unsupported_entries`: FIFOs,
    sockets, devices, unreadable files, link loops, folders nested too deep) are left out, and the copy
    is made readable and writable by gradeflow (only the owner's bits are added; git records none but
    the executable bit), so restoring, sealing and removing it never meet a read-only folder.
    """

    def ignore(folder: str, names: list[str]) -> list[str]:
        depth = len(Path(folder).relative_to(source).parts)
        return [
            n
            for n in names
            if skipped_by_copy(n) or depth >= MAX_DEPTH or why_unsupported(Path(folder) / n) is not None
        ]

    shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True, ignore=ignore)
    _owner_may_write(dest)


def _owner_may_write(root: Path) -> None:
    for folder, dirs, files in os.walk(root):
        for name, bits in [*((d, 0o700) for d in dirs), *((f, 0o600) for f in files)]:
            path = Path(folder) / name
            if not path.is_symlink() and (mode := path.stat().st_mode) & bits != bits:
                path.chmod(mode | bits)
    if (mode := root.stat().st_mode) & 0o700 != 0o700:
        root.chmod(mode | 0o700)


def _checkout(repo: Path, revision: str, dest: Path, submodules: dict[str, str] | None = None) -> None:
    """The tree of ``revision`` as git checks it out into the empty ``dest`` (no ``.git`` left behind).

    Not ``git archive``: it applies ``export-subst`` and ``export-ignore``, so the base would differ from
    an agent's checkout in files the agent never touched. The clone borrows the repository's objects
    (``--shared``), so the user's repository is only read. A submodule (a gitlink) named in ``submodules``
    is checked out the same way from its repository, at the commit the tree pins; others stay empty folders.
    """
    git(dest.parent, "clone", "-q", "--shared", "--no-checkout", str(repo.resolve()), str(dest))
    git(dest, "checkout", "-q", "--detach", revision)
    # git writes what it can read and exits 0 when an object is missing (a partial or damaged mirror): the
    # base would lack the file, and the tests fail for want of it (a data file their code then downloads).
    listed = git(dest, "ls-files", "--deleted", "-z").stdout.decode(errors="surrogateescape")
    missing = [path for path in listed.split("\0") if path]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise BaselineBroken(f"{repo} lacks the content of {len(missing)} file(s) of {revision[:12]}: {shown}")
    links = gitlinks(dest, revision)
    shutil.rmtree(dest / ".git")
    submodules = submodules or {}
    for name, source in submodules.items():
        if any(name.startswith(f"{other}/") for other in submodules):
            continue  # filled by the checkout of the submodule holding it
        if name not in links:
            raise BaselineBroken(f"submodules names {name}, which is not a submodule of {repo} at {revision[:12]}")
        pinned = git(Path(source), "rev-parse", "--verify", "--quiet", f"{links[name]}^{{commit}}", check=False)
        if pinned.returncode != 0:
            raise BaselineBroken(f"submodule {name}: {source} does not hold the pinned commit {links[name][:12]}")
        inside = {path[len(name) + 1 :]: where for path, where in submodules.items() if path.startswith(f"{name}/")}
        shutil.rmtree(dest / name)
        _checkout(Path(source), links[name], dest / name, inside)


def gitlinks(repo: Path, revision: str) -> dict[str, str]:
    """The git submodules of ``revision``'s tree in ``repo`` (nested trees included, not submodules' own):
    path -> the commit it pins."""
    listed = git(repo, "ls-tree", "-r", "-z", revision).stdout.decode(errors="surrogateescape")
    links = {}
    for entry in listed.split("\0"):
        meta, _, path = entry.partition("\t")
        if meta.startswith("160000 "):
            links[path] = meta.split()[2]
    return links


def materialize(base: BaseRef, dest: Path) -> None:
    """Write the base's content into the empty folder ``dest`` and commit it as a one-commit repo."""
    try:
        _write_files(base, dest)
    except (OSError, tarfile.TarError, InfraError) as exc:
        raise BaselineBroken(f"cannot materialize {base.location}@{base.revision[:12]}: {exc}") from exc
    init_snapshot_repo(dest)


def _write_files(base: BaseRef, dest: Path) -> None:
    """The base's files, as git checks them out, into the (created if needed) empty folder ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    if base.kind == "git":
        _checkout(Path(base.location), base.revision, dest, base.submodules)
    elif base.kind == "folder":
        copy_tree(Path(base.location), dest)
    else:
        with tarfile.open(base.location) as archive:
            archive.extractall(dest, filter="data")


def write_agent_checkout(base: BaseRef, dest: Path) -> str:
    """The base as an agent should get it: a repository in ``dest`` with one commit and nothing else.

    No history after (or before) the base, no other refs, tags, reflog or stray objects: only the base
    tree's objects and one commit on ``main``. Returns the commit id. ``dest`` must be empty or absent.
    """
    try:
        _write_files(base, dest)
    except (OSError, tarfile.TarError) as exc:
        raise SpecError(f"cannot write the checkout into {dest}: {exc}") from None
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A", "-f")
    git(dest, "-c", "core.logAllRefUpdates=false", "commit", "-q", "--allow-empty", "--no-verify", "-m", "base")
    shutil.rmtree(dest / ".git" / "logs", ignore_errors=True)
    return git(dest, "rev-parse", "HEAD").stdout.decode().strip()
