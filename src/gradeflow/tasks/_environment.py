"""The task's environment: what ``setup`` built on the pristine base, captured once, shared by every run.

``setup`` runs once per baseline, in a sandbox over a copy of the pristine base (hidden tests injected).
What it left is kept in a folder beside the pristine repository:

- ``<root>.tar`` for each of the sandbox's environment roots (``HOME``; the local sandbox's private
  Python environment), as :meth:`~gradeflow.sandbox.base.Sandbox.export_environment` wrote them;
- ``workspace.tar``: the workspace files setup added or changed (``.git`` and bytecode left out);
- ``environment.json``: this module's :class:`TaskEnvironment`: the paths setup ran with, the files
  that name them, the files setup removed, and a digest of the whole.

For the isolated sandbox, and the local one as root, the roots are also kept unpacked (``layers/<name>``,
owned by one user of their own) and every run mounts them read-only as the lower layer of an overlay: nothing
is copied, the run's writes land in a layer of its own that dies with it, and the few files that name setup's
paths are rewritten into a small layer over them. The docker sandbox, with the engine on this machine, shows
``HOME``'s layer under a writable layer of each container's own and binds a ``debian:`` root's private
environment read-only (:mod:`gradeflow.sandbox._docker_layers`). Every run lays the workspace files setup made
over its tree, except where the tree differs from the base (the candidate's own change wins); other sandboxes
(local without root, docker with a remote engine) get their own copy of the roots, imported into the sandbox.
The old paths are rewritten to the new ones in the files that named them (an editable install names the
workspace; a console script names the environment's interpreter). The candidate's packaging (``pyproject.toml``,
``setup.py``, entry points) never runs and installs nothing: a patch that changes its dependencies or
its build is graded in the base's environment.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from pydantic import BaseModel

from gradeflow.environments.disk import shared_dir
from gradeflow.sandbox.base import Sandbox, is_opaque, mark_opaque, member_path, opaque_member, remove_tree

__all__ = [
    "TaskEnvironment",
    "capture_environment",
    "import_environment",
    "lay_workspace",
    "shared_folder",
    "tree_manifest",
]

WORKSPACE_ARCHIVE = "workspace"
"""The name of the captured workspace files among the archives (beside the roots' names)."""

_SIGNATURE = tuple[str, str]
"""How an entry stands: (``file``/``exec``/``link``/``dir``, content hash or link target)."""


class TaskEnvironment(BaseModel):
    """A captured environment: where it is kept and what is needed to copy it into a new sandbox."""

    folder: Path
    digest: str
    """sha256 of every captured file with the old paths written as placeholders, caches and bytecode left out."""
    workspace: str
    """The workspace path setup ran in, as its commands saw it."""
    roots: dict[str, str]
    """The sandbox's environment roots setup ran with (``home``, ``env``), as its commands saw them."""
    naming: dict[str, list[str]]
    """Per archive (``workspace`` or a root's name), the members whose content names one of those paths."""
    removed: list[str]
    """Workspace paths setup deleted."""
    shared: str | None = None
    """The key of the shared environment (``environment.shared_setup``) this one was built over: its layers lie
    under this one's, which then hold only what ``setup`` wrote over them (see :mod:`gradeflow.tasks.shared`)."""
    layered: list[str] = []
    """Roots kept unpacked under ``layers/<name>`` too, mounted read-only into every run of a sandbox that can
    (:attr:`~gradeflow.sandbox.base.Sandbox.mounts_layers`) instead of being copied."""
    owner: int = 0
    """The user that owns the unpacked layers (and runs the commands that mount them)."""

    def save(self) -> None:
        (self.folder / "environment.json").write_text(self.model_dump_json(indent=1))

    @classmethod
    def load(cls, folder: Path) -> TaskEnvironment:
        loaded = cls.model_validate_json((folder / "environment.json").read_text())
        return loaded.model_copy(update={"folder": folder})


def _skipped(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return not parts or parts[0] == ".git" or "__pycache__" in parts or name.endswith((".pyc", ".pyo"))


def tree_manifest(tree: Path) -> dict[str, _SIGNATURE]:
    """Every entry under ``tree`` but ``.git`` and bytecode, with its signature (links are not followed)."""
    found: dict[str, _SIGNATURE] = {}
    for folder, dirs, files in os.walk(tree):
        base = Path(folder)
        for name in [*dirs, *files]:
            path = base / name
            rel = path.relative_to(tree).as_posix()
            if _skipped(rel):
                continue
            signature = _path_signature(path)
            if signature is not None:
                found[rel] = signature
        dirs[:] = [
            d for d in dirs if not (base / d).is_symlink() and not _skipped((base / d).relative_to(tree).as_posix())
        ]
    return found


def _path_signature(path: Path) -> _SIGNATURE | None:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISDIR(info.st_mode):
        return ("dir", "")
    if stat.S_ISREG(info.st_mode):
        kind = "exec" if info.st_mode & 0o111 else "file"
        return (kind, hashlib.sha256(path.read_bytes()).hexdigest())
    return None


def _member_signature(member: tarfile.TarInfo, data: bytes | None) -> _SIGNATURE | None:
    if member.issym():
        return ("link", member.linkname)
    if member.isdir():
        return ("dir", "")
    if member.isfile() and data is not None:
        return ("exec" if member.mode & 0o111 else "file", hashlib.sha256(data).hexdigest())
    return None


def capture_environment(
    sandbox: Sandbox, before: dict[str, _SIGNATURE], folder: Path, under: TaskEnvironment | None = None
) -> TaskEnvironment:
    """Keep in ``folder`` what setup left in ``sandbox``: its roots, and the workspace's changes from ``before``.

    ``under``: the shared environment mounted under setup (:func:`import_environment`); only what setup wrote over
    it is kept (the roots' upper layers), unpacked for the same owner."""
    folder.mkdir(parents=True, exist_ok=True)
    sandbox.export_environment(folder)
    after = folder / "after.tar"
    sandbox.export_workspace(after)
    seen: set[str] = set()
    with tarfile.open(after) as src, tarfile.open(folder / f"{WORKSPACE_ARCHIVE}.tar", "w") as dst:
        for member in src:
            name = member_path(member.name)
            if name == "." or _skipped(name) or ".." in PurePosixPath(name).parts:
                continue
            seen.add(name)
            data = src.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
            signature = _member_signature(member, data)
            if signature is None or before.get(name) == signature:
                continue
            member.name = name
            dst.addfile(member, io.BytesIO(data) if data is not None else None)
    after.unlink()
    roots = sandbox.environment_roots()
    olds = {"<workspace>": sandbox.workspace, **{f"<{name}>": path for name, path in roots.items()}}
    naming: dict[str, list[str]] = {}
    digest = hashlib.sha256(under.digest.encode() if under is not None else b"")
    for archive in sorted([WORKSPACE_ARCHIVE, *roots]):
        naming[archive] = _scan(folder / f"{archive}.tar", olds, digest, archive)
    removed = sorted(p for p, sig in before.items() if p not in seen and sig[0] != "dir")
    digest.update("\0".join(removed).encode())
    drawn = _LAYER_UIDS[0] + int(digest.hexdigest()[:8], 16) % _LAYER_UIDS[1]
    if under is not None:  # one owner for the whole stack: setup ran as the shared layers' owner
        drawn = under.owner
    owner = sandbox.layer_owner(drawn)
    layered = _unpack_layers(folder, roots, owner, private=owner != drawn) if sandbox.mounts_layers else []
    environment = TaskEnvironment(
        folder=folder,
        digest=f"sha256:{digest.hexdigest()}",
        workspace=sandbox.workspace,
        roots=roots,
        naming={k: v for k, v in naming.items() if v},
        removed=removed,
        shared=under.folder.name if under is not None else None,
        layered=layered,
        owner=owner,
    )
    environment.save()
    return environment


_LAYER_UIDS = (260_000, 60_000)
"""First uid and how many: the owners of unpacked layers, apart from the isolated sandbox's per-run users."""


def _unpack_layers(folder: Path, roots: dict[str, str], owner: int, *, private: bool) -> list[str]:
    """Each root's archive unpacked once into ``layers/<name>``, owned by ``owner`` (as root); the names.
    ``private``: ``owner`` may be a user of this host (the docker sandbox's command user), so the layers' folder
    is root's alone (the engine, as root, mounts them; no user of this host reaches them)."""
    done = []
    if private and os.geteuid() == 0:
        (folder / "layers").mkdir(mode=0o700)
    for name in sorted(roots):
        archive = folder / f"{name}.tar"
        if not archive.is_file():
            continue
        layer = folder / "layers" / name
        layer.mkdir(parents=True)
        with tarfile.open(archive) as tar:
            tar.extractall(layer, filter="tar")  # whiteouts too: character devices, made as root
            for member in tar:
                if opaque_member(member) and ".." not in PurePosixPath(member_path(member.name)).parts:
                    mark_opaque(layer / member_path(member.name))
        if os.geteuid() == 0:
            for current, dirs, files in os.walk(layer):
                for entry in (current, *(os.path.join(current, n) for n in (*dirs, *files))):
                    os.lchown(entry, owner, owner)
        done.append(name)
    return done


def _scan(archive: Path, olds: dict[str, str], digest: hashlib._Hash, label: str) -> list[str]:
    """Members of ``archive`` naming one of the ``olds`` paths; each member goes into ``digest`` normalised."""
    naming: list[str] = []
    if not archive.is_file():
        return naming
    patterns = sorted(
        ((old.encode(), placeholder.encode()) for placeholder, old in olds.items()), key=lambda p: -len(p[0])
    )
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            name = member_path(member.name)
            data = tar.extractfile(member).read() if member.isfile() else b""  # type: ignore[union-attr]
            normal = data if b"\0" in data else _replace(data, patterns)
            if normal != data:
                naming.append(member.name)
            cached = label == "home" and PurePosixPath(name).parts[:1] == (".cache",)
            if not cached and not _skipped(name):
                signature = _member_signature(member, normal) or ("other", "")
                digest.update(f"{label}\0{name}\0{signature[0]}\0{signature[1]}\n".encode())
    return naming


def _replace(data: bytes, pairs: list[tuple[bytes, bytes]]) -> bytes:
    for old, new in pairs:
        if old and old != new:
            data = data.replace(old, new)
    return data


def lay_workspace(environment: TaskEnvironment, tree: Path, pristine: Path) -> None:
    """Lay the workspace files setup made over ``tree``, except where ``tree`` differs from ``pristine``.

    Where the candidate changed a path (its content is not the base's), its own version stays, and
    nothing is laid through a link or into a folder the candidate replaced.
    """
    with tarfile.open(environment.folder / f"{WORKSPACE_ARCHIVE}.tar") as tar:
        for member in tar:
            name = member_path(member.name)
            if ".." in PurePosixPath(name).parts or not _base_owned(tree, pristine, name):
                continue
            target = tree / name
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            if target.is_dir() and not target.is_symlink():
                remove_tree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
            target.parent.mkdir(parents=True, exist_ok=True)
            tar.extract(member, tree, filter="tar")
    for name in environment.removed:
        target = tree / name
        if _base_owned(tree, pristine, name) and (target.is_file() or target.is_symlink()):
            target.unlink()


def _base_owned(tree: Path, pristine: Path, name: str) -> bool:
    """Whether ``name`` and each folder above it stand in ``tree`` as in ``pristine`` (no link, same content)."""
    path = PurePosixPath(name)
    for folder in reversed(path.parents):
        if str(folder) == ".":
            continue
        here, there = tree / folder, pristine / folder
        if here.is_symlink() or (here.exists() and not here.is_dir()) or there.is_symlink():
            return False
    here, there = tree / name, pristine / name
    if not here.exists() and not here.is_symlink():
        return not there.exists() and not there.is_symlink()
    if not there.exists() and not there.is_symlink():
        return False
    return _path_signature(here) == _path_signature(there)


def import_environment(environment: TaskEnvironment, sandbox: Sandbox, tree: Path) -> None:
    """Copy the captured roots into ``sandbox`` (over ``tree``), with the old paths rewritten to its own.

    Archives with nothing to rewrite are imported as they were kept (the docker sandbox's paths never
    change). The workspace files that named an old path are rewritten in ``tree`` when the sandbox runs
    there (the local sandbox).
    """
    roots = sandbox.environment_roots()
    pairs = _moved_paths(environment, sandbox)
    if environment.layered and sandbox.mounts_layers:
        own = {name: environment.folder / "layers" / name for name in environment.layered if name in roots}
        fixes = {name: _fixes(own[name], environment.naming.get(name, []), pairs) for name in own}
        layers: dict[str, tuple[Path, ...]] = {name: (layer,) for name, layer in own.items()}
        if environment.shared is not None:
            _stack_shared(environment, sandbox, layers, fixes)
        sandbox.mount_environment(layers, fixes, environment.owner)
    elif not pairs:
        sandbox.import_environment(environment.folder)
        return
    else:
        _import_copies(environment, sandbox, roots, pairs)
    if sandbox.runs_on(tree):
        inside = tree.resolve()
        for name in environment.naming.get(WORKSPACE_ARCHIVE, []):
            target = tree / member_path(name)
            # Never through a link: the candidate's tree may hold one where setup's file was.
            if target.is_file() and target.resolve() == inside / member_path(name):
                target.write_bytes(_replace(target.read_bytes(), pairs))


def _import_copies(
    environment: TaskEnvironment, sandbox: Sandbox, roots: dict[str, str], pairs: list[tuple[bytes, bytes]]
) -> None:
    """The roots' archives imported into ``sandbox``, the ``pairs`` rewritten in their named members."""
    with tempfile.TemporaryDirectory(prefix="gradeflow-env-") as folder:
        scratch = Path(folder)
        for name in roots:
            source = environment.folder / f"{name}.tar"
            named = set(environment.naming.get(name, []))
            if source.is_file() and not named:
                (scratch / source.name).symlink_to(source)
            elif source.is_file():
                _rewrite_archive(source, scratch / source.name, named, pairs)
        sandbox.import_environment(scratch)


def _moved_paths(environment: TaskEnvironment, sandbox: Sandbox) -> list[tuple[bytes, bytes]]:
    """The paths ``environment``'s build ran with (its workspace, its roots) against ``sandbox``'s own, those that
    differ, the longest first (so a root inside the workspace is rewritten before the workspace is)."""
    roots = sandbox.environment_roots()
    moves = [(environment.workspace, sandbox.workspace)]
    moves += [(old, roots[name]) for name, old in environment.roots.items() if name in roots]
    return sorted(((o.encode(), n.encode()) for o, n in moves if o != n), key=lambda p: -len(p[0]))


def shared_folder(key: str) -> Path:
    """Where the shared environment of ``key`` is kept."""
    return shared_dir() / key


def _stack_shared(
    environment: TaskEnvironment,
    sandbox: Sandbox,
    layers: dict[str, tuple[Path, ...]],
    fixes: dict[str, dict[str, bytes]],
) -> None:
    """The shared environment's layers laid under ``environment``'s own, and its files that name its build's paths
    rewritten to ``sandbox``'s where the layer over it does not hide them."""
    assert environment.shared is not None
    shared = TaskEnvironment.load(shared_folder(environment.shared))
    roots = sandbox.environment_roots()
    pairs = _moved_paths(shared, sandbox)
    for name in shared.layered:
        if name not in roots:
            continue
        below = shared.folder / "layers" / name
        above = layers.get(name, ())
        named = [m for m in shared.naming.get(name, []) if not any(_hides(layer, m) for layer in above)]
        fixes[name] = {**_fixes(below, named, pairs), **fixes.get(name, {})}
        layers[name] = (below, *above)


def _hides(layer: Path, member: str) -> bool:
    """Whether ``layer``, laid over another, hides that one's ``member``: it holds the path itself (a file, a folder
    or a whiteout), or a folder above it that is opaque or is no folder."""
    path = PurePosixPath(member_path(member))
    for folder in reversed(path.parents):
        if str(folder) == ".":
            continue
        here = layer / folder
        if os.path.lexists(here) and (here.is_symlink() or not here.is_dir() or is_opaque(here)):
            return True
    return os.path.lexists(layer / path)


def _fixes(layer: Path, named: list[str], pairs: list[tuple[bytes, bytes]]) -> dict[str, bytes]:
    """The ``named`` regular files of ``layer`` with the ``pairs`` rewritten (those that change)."""
    fixed: dict[str, bytes] = {}
    for member in named:
        path = layer / member_path(member)
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            new = _replace(data, pairs)
            if new != data:
                fixed[member] = new
    return fixed


def _rewrite_archive(source: Path, target: Path, named: set[str], pairs: list[tuple[bytes, bytes]]) -> None:
    """``source`` copied to ``target`` with the ``pairs`` rewritten in the ``named`` members."""
    with tarfile.open(source) as src, tarfile.open(target, "w") as dst:
        for member in src:
            data = src.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
            if data is not None and member.name in named:
                data = _replace(data, pairs)
                member.size = len(data)
            dst.addfile(member, io.BytesIO(data) if data is not None else None)
