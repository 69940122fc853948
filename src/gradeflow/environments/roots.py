"""Root filesystems the isolated sandbox runs commands on: built once per recipe, verified before every use.

The docker sandbox runs a ``debian:`` root too, as an image imported from this folder
(:mod:`gradeflow.sandbox._docker_root`).

A task names its root in ``environment.root``:

- ``host``: this machine's ``/usr`` and ``/etc`` and gradeflow's own interpreter (no folder is built);
- ``debian:<release>``: ``debootstrap --variant=minbase`` of that release from the mirror apt uses here
  (``$GRADEFLOW_DEBIAN_MIRROR`` overrides), with ``python3``, ``python3-venv``, ``python3-pip`` and the task's
  ``environment.packages``;
- ``docker:<image>``: the filesystem of a container of that image, exported once (the engine is needed
  for the build only).

Each root is kept under :func:`roots_dir` in a folder named by its recipe's digest, with ``root.json`` beside
it (recipe, Python version, size, a digest of every entry's path, kind, mode, size and modification time).
Two grades that need the same root wait on one lock and build it once; a root whose entries no longer
match its digest (edited, half deleted) is removed and built again. Roots are only ever mounted read-only.
After a build the store is kept under ``$GRADEFLOW_ENV_CAP`` (:func:`~gradeflow.environments.store.enforce_cap`),
the new root kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gradeflow.environments.disk import roots_dir, tree_size
from gradeflow.environments.store import enforce_cap
from gradeflow.errors import SandboxUnavailable

__all__ = ["Root", "RootRecipe", "debian_mirror", "ensure_root", "locked", "roots_dir", "stat_digest"]

RECIPE_VERSION = 2
"""Bumped when the way a root is built changes, so no root built the old way is served."""
BASE_PACKAGES = ("python3", "python3-venv", "python3-pip")
_BUILD_TIMEOUT = 3600


@dataclass(frozen=True)
class RootRecipe:
    """What a root is built from: ``kind`` (``debian`` or ``docker``), the release or image, extra packages."""

    kind: str
    source: str
    packages: tuple[str, ...] = ()

    @classmethod
    def from_spec(cls, root: str, packages: list[str] | tuple[str, ...] = ()) -> RootRecipe | None:
        """The recipe of ``environment.root`` (``None`` for ``host``)."""
        if root == "host":
            return None
        kind, _, source = root.partition(":")
        return cls(kind, source, tuple(sorted(set(packages))))

    @property
    def name(self) -> str:
        material = json.dumps([RECIPE_VERSION, self.kind, self.source, self.packages])
        label = re.sub(r"[^a-z0-9]+", "-", self.source.lower()).strip("-")[:40]
        return f"{self.kind}-{label}-{hashlib.sha256(material.encode()).hexdigest()[:12]}"

    def label(self) -> str:
        extra = f" + {', '.join(self.packages)}" if self.packages else ""
        return f"{self.kind}:{self.source}{extra}"


@dataclass(frozen=True)
class Root:
    """A built root: its folder and the facts read at build time."""

    folder: Path
    recipe: RootRecipe
    python: str
    """``major.minor`` of the root's ``python3`` (empty when it has none)."""
    digest: str


def ensure_root(recipe: RootRecipe) -> Root:
    """The root of ``recipe``, built now when it is missing or changed; ``SandboxUnavailable`` when it cannot be.

    Verified by :func:`stat_digest` against the digest taken when it was built, before it is handed out. After
    a build, the store is kept under its cap with this root kept (``SpecError`` when the cap is malformed).
    """
    home = roots_dir()
    folder = home / recipe.name
    with locked(home / f"{recipe.name}.lock"):
        root = _load(folder, recipe)
        if root is not None and stat_digest(folder / "fs") == root.digest:
            _touch(folder)
            return root
        _remove(folder)
        failed = home / f"{recipe.name}.failed"
        if failed.is_file():
            raise SandboxUnavailable(failed.read_text(errors="replace").strip())
        try:
            built = _build(recipe, folder)
        except SandboxUnavailable as exc:
            failed.write_text(f"{exc} (remove {failed} to try again)\n")
            raise
    enforce_cap(folder)
    return built


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (made when missing) for the block: other processes wait."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _load(folder: Path, recipe: RootRecipe) -> Root | None:
    try:
        facts = json.loads((folder / "root.json").read_text())
        return Root(folder=folder / "fs", recipe=recipe, python=facts["python"], digest=facts["digest"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _touch(folder: Path) -> None:
    with contextlib.suppress(OSError):
        (folder / "used").touch()


def _remove(folder: Path) -> None:
    if folder.exists():
        subprocess.run(["rm", "-rf", "--one-file-system", str(folder)], check=False)


def _build(recipe: RootRecipe, folder: Path) -> Root:
    staging = folder.with_name(folder.name + f".build-{os.getpid()}")
    _remove(staging)
    fs = staging / "fs"
    fs.mkdir(parents=True)
    started = time.monotonic()
    try:
        if recipe.kind == "debian":
            _debootstrap(recipe, fs)
        elif recipe.kind == "docker":
            _export_image(recipe.source, fs)
        else:
            raise SandboxUnavailable(f"environment.root: unknown kind {recipe.kind!r}")
        python, digest = _python_version(fs), stat_digest(fs)
        facts = {
            "recipe": recipe.label(),
            "python": python,
            "digest": digest,
            "bytes": tree_size(fs),
            "build_seconds": round(time.monotonic() - started, 1),
            "built": time.time(),
        }
        (staging / "root.json").write_text(json.dumps(facts, indent=1))
        (staging / "used").touch()
        staging.rename(folder)
    finally:
        _remove(staging)
    return Root(folder=folder / "fs", recipe=recipe, python=python, digest=digest)


def _debootstrap(recipe: RootRecipe, fs: Path) -> None:
    tool = shutil.which("debootstrap") or ("/usr/sbin/debootstrap" if Path("/usr/sbin/debootstrap").exists() else None)
    if tool is None:
        raise SandboxUnavailable(
            f"environment.root debian:{recipe.source} needs debootstrap (Debian: apt-get install debootstrap)"
        )
    if os.geteuid() != 0:
        raise SandboxUnavailable(f"environment.root debian:{recipe.source}: debootstrap must run as root")
    packages = ",".join(dict.fromkeys((*BASE_PACKAGES, *recipe.packages)))
    argv = [tool, "--variant=minbase", f"--include={packages}", recipe.source, str(fs), debian_mirror()]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=_BUILD_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise SandboxUnavailable(f"debootstrap of {recipe.label()} took over {_BUILD_TIMEOUT} s") from None
    if done.returncode != 0:
        tail = _tail(done.stdout + done.stderr)
        raise SandboxUnavailable(f"debootstrap of {recipe.label()} failed (exit {done.returncode}): {tail}")
    # The downloaded packages are not part of the root; nor is what debootstrap mounted and left.
    for leftover in (fs / "var/cache/apt/archives").glob("*.deb"):
        leftover.unlink()
    # The host's is shown there to commands given the network (an empty file keeps the place).
    (fs / "etc/resolv.conf").unlink(missing_ok=True)
    (fs / "etc/resolv.conf").write_text("")


def _export_image(image: str, fs: Path) -> None:
    try:
        create = subprocess.run(["docker", "create", image, "/bin/true"], capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"environment.root docker:{image}: docker cannot run here ({exc})") from None
    if create.returncode != 0:
        tail = _tail(create.stderr)
        raise SandboxUnavailable(f"environment.root docker:{image}: cannot make a container: {tail}")
    container = create.stdout.decode().strip()
    try:
        export = subprocess.Popen(["docker", "export", container], stdout=subprocess.PIPE)
        untar = subprocess.run(
            ["tar", "-x", "--no-same-owner", "-C", str(fs)], stdin=export.stdout, capture_output=True, check=False
        )
        if export.wait() != 0 or untar.returncode != 0:
            raise SandboxUnavailable(f"environment.root docker:{image}: export failed: {_tail(untar.stderr)}")
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)


def _tail(output: bytes, lines: int = 4) -> str:
    text = output.decode(errors="replace").strip().splitlines()
    return " | ".join(line.strip() for line in text[-lines:])[-600:] or "no output"


def _python_version(fs: Path) -> str:
    """``major.minor`` of the root's ``python3`` from the names of its interpreters (``usr/bin/python3.9``)."""
    found = [m.group(1) for p in (fs / "usr/bin").glob("python3.*") if (m := re.fullmatch(r"python(3\.\d+)", p.name))]
    return max(found, key=lambda v: int(v.split(".")[1]), default="")


def debian_mirror() -> str:
    """``$GRADEFLOW_DEBIAN_MIRROR``, else the first Debian mirror apt is configured with, else deb.debian.org."""
    chosen = os.environ.get("GRADEFLOW_DEBIAN_MIRROR")
    if chosen:
        return chosen
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for source in sources:
        if source.suffix not in (".list", ".sources", "") or not source.is_file():
            continue
        for uri in _uris(source.read_text(errors="replace"), deb822=source.suffix == ".sources"):
            if "security" not in uri and "debian" in uri:
                return uri.rstrip("/")
    return "http://deb.debian.org/debian"


def _uris(text: str, *, deb822: bool) -> list[str]:
    if deb822:
        return [u for line in text.splitlines() if line.lower().startswith("uris:") for u in line.split()[1:]]
    found = []
    for line in text.splitlines():
        words = [w for w in line.split() if not w.startswith("[") and not w.endswith("]")]
        if len(words) >= 3 and words[0] == "deb":
            found.append(words[1])
    return found


def stat_digest(folder: Path) -> str:
    """A digest of every entry under ``folder``: path, kind, mode, size, modification time, link target.

    Cheap enough to run before every use (no content is read): an edit, a removal or an added file
    changes it.
    """
    digest = hashlib.sha256()
    if not folder.is_dir():
        return "absent"
    top = len(str(folder))
    for current, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files) + dirs:
            path = os.path.join(current, name)
            info = os.lstat(path)
            where = path[top:]
            digest.update(f"{where}\0{info.st_mode}\0{info.st_size}\0{info.st_mtime_ns}\n".encode(errors="replace"))
            if os.path.islink(path):
                digest.update(os.readlink(path).encode(errors="replace"))
    return digest.hexdigest()
