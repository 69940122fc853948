"""What gradeflow keeps on disk to run tasks again quickly: listed, pruned, and kept under a size cap
(``gradeflow env list``, ``gradeflow env prune``, ``$GRADEFLOW_ENV_CAP``).

Three kinds of entries. **Roots** (``$GRADEFLOW_ROOTS``, by default ``<cache>/roots``): the Debian or image
filesystems of ``environment.root``, one folder per recipe. **Bases** (``<cache>/baselines``): one folder per
baseline key holding the pristine checkout and, for a task with ``setup``, the environment setup built on it
(the layers every run mounts read-only). **Shared** (``<cache>/shared``): one folder per key of
``environment.shared_setup``, the layer under the environments of every base built on it. Each is rebuilt on its
next use when it is gone: a grade that finds its cached baseline's folder missing builds it again (its digests say
so), a root is debootstrapped again, a base whose shared layer is gone builds its environment again over a new one.
So pruning costs time, never a verdict.

Each entry's last use is the time of its ``used`` file (touched whenever a grade takes it), else of the
folder; its size is recorded once (:func:`~gradeflow.environments.disk.entry_size`). :func:`prune` removes the
least recently used first, until the total fits ``max_bytes``, and every entry unused for longer than
``unused_for`` seconds. :func:`enforce_cap` does the same to ``$GRADEFLOW_ENV_CAP`` after a root is built and
whenever a grade takes a base, just built or cached (:func:`touch_used`; :func:`touch_built` once a base's
environment is built, its size recorded first), keeping that entry.

Never removed: an entry another process is building (its build lock taken), one held by :func:`in_use` or by
:class:`Holds` (a sandbox factory holds its root and the bases its grades take for as long as it is open), one a
grade took in the last ten minutes (:data:`RECENT`: it may be mounted in a running sandbox), and anything in
the store's folders not laid out as an entry (a root holds ``fs`` or ``root.json``, a base ``repo`` or
``environment``; links are not followed).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal, Self

import structlog

from gradeflow.config import env_cap
from gradeflow.environments.disk import bases_dir, entry_size, roots_dir, shared_dir

__all__ = ["RECENT", "Holds", "Stored", "enforce_cap", "in_use", "prune", "stored", "touch_built", "touch_used"]

_log = structlog.get_logger(__name__)

RECENT = 600.0
"""Seconds after its last use during which an entry is never pruned (a grade may still be running on it)."""

Kind = Literal["root", "base", "shared"]
_BUILDING = ".build-"
"""A root's folder while it is built: ``<recipe name>.build-<pid>``, under its recipe's build lock."""


@dataclass(frozen=True)
class Stored:
    """One kept folder: a root or a base (pristine checkout plus its built environment)."""

    kind: Kind
    name: str
    """Its key: the root's recipe name or the baseline key."""
    path: Path
    bytes: int
    used: float
    """When a grade last took it (seconds since the epoch)."""
    environment: bool = False
    """For a base: it holds an environment setup built."""


def touch_used(folder: Path) -> None:
    """Mark ``folder`` (a root's or a base's) as used now, then keep the store under its cap with ``folder`` kept
    (:func:`enforce_cap`). A grade takes its base this way, just built or cached; ``SpecError`` when
    ``$GRADEFLOW_ENV_CAP`` is malformed."""
    with in_use(folder), contextlib.suppress(OSError):
        (folder / "used").touch()
    enforce_cap(folder)


def touch_built(folder: Path) -> None:
    """:func:`touch_used` for an entry just built, its size measured and recorded first: no later listing, nor
    the cap, walks its tree (a base's environment can hold tens of thousands of files)."""
    entry_size(folder)
    touch_used(folder)


@contextlib.contextmanager
def in_use(folder: Path) -> Iterator[None]:
    """Hold ``folder`` (a root's or a base's) for the block: no prune or cap removes it meanwhile, however long
    ago it was last used. A shared lock on its ``in-use.lock``, so any number of holders in any process; it
    waits while the entry is being removed (then it is gone, as any missing entry). A missing folder is not
    held."""
    try:
        handle = (folder / "in-use.lock").open("a")
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        yield


class Holds:
    """Entries held in use until :meth:`release` (or the end of a ``with`` block, or this object's collection):
    one shared lock per entry, as :func:`in_use` takes, opened once however often the entry is asked for.

    A pickled or deep-copied ``Holds`` holds nothing: a copy in another process holds what it is asked for there.
    """

    _guard = threading.Lock()
    """Held while the locks of any ``Holds`` change: grades in threads share one sandbox factory's."""

    def __init__(self) -> None:
        self._locks: dict[str, int] = {}
        """Entry folder → the descriptor of its ``in-use.lock``, locked shared."""
        weakref.finalize(self, _unlock, self._locks)

    def hold(self, folder: Path) -> bool:
        """Hold ``folder`` (a root's or a base's) from now on; ``False`` when it is missing (nothing held). Taken
        again when its ``in-use.lock`` is no longer the file held (the entry was removed and built again)."""
        lock = folder / "in-use.lock"
        with self._guard:
            held = self._locks.get(str(folder))
            if held is not None and _same_file(held, lock):
                return True
            descriptor = _lock_shared(lock)
            if descriptor is None:
                return False
            if held is not None:
                os.close(held)
            self._locks[str(folder)] = descriptor
            return True

    def release(self) -> None:
        """Release every entry held (they may be pruned again); idempotent."""
        with self._guard:
            _unlock(self._locks)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def __reduce__(self) -> tuple[type[Holds], tuple[()]]:
        return Holds, ()


def _lock_shared(lock: Path) -> int | None:
    """A descriptor of ``lock`` (made when missing) locked shared; ``None`` when its entry is missing or was removed
    while the lock was awaited (a removal holds it exclusively)."""
    try:
        descriptor = os.open(lock, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError:
        return None
    with contextlib.suppress(OSError):
        fcntl.flock(descriptor, fcntl.LOCK_SH)
        if _same_file(descriptor, lock):
            return descriptor
    os.close(descriptor)
    return None


def _unlock(locks: dict[str, int]) -> None:
    while locks:
        os.close(locks.popitem()[1])


def _same_file(descriptor: int, path: Path) -> bool:
    try:
        held, there = os.fstat(descriptor), os.stat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)


def stored() -> list[Stored]:
    """Every root, base and shared environment kept on this machine, least recently used first."""
    found = [_entry("root", folder) for folder in _entries(roots_dir(), ("fs", "root.json"))]
    found += [_entry("base", folder) for folder in _entries(bases_dir(), ("repo", "environment"))]
    found += [_entry("shared", folder) for folder in _entries(shared_dir(), ("environment.json",))]
    return sorted(found, key=lambda entry: entry.used)


def _entries(home: Path, marks: tuple[str, ...]) -> list[Path]:
    """The folders in ``home`` laid out as entries (holding one of ``marks``); links and hidden names skipped."""
    if not home.is_dir():
        return []
    return sorted(
        folder
        for folder in home.iterdir()
        if not folder.name.startswith(".")
        and not folder.is_symlink()
        and folder.is_dir()
        and any(os.path.lexists(folder / mark) for mark in marks)
    )


def _entry(kind: Kind, folder: Path) -> Stored:
    built = kind == "base" and (folder / "environment").is_dir()
    return Stored(kind, folder.name, folder, entry_size(folder), _used(folder), built)


def _used(folder: Path) -> float:
    for path in (folder / "used", folder):
        with contextlib.suppress(OSError):
            return path.stat().st_mtime
    return 0.0


def enforce_cap(just_built: Path) -> list[Stored]:
    """Keep the store under ``$GRADEFLOW_ENV_CAP``: remove the least recently used entries until the rest fit,
    never ``just_built`` nor what the module says is never removed; the removed entries, logged with their keys
    and sizes. Nothing is read when no cap is set; ``SpecError`` when it is malformed."""
    cap = env_cap()
    if cap is None:
        return []
    removed, left = _evict(stored(), cap, None, dry_run=False, now=time.time(), keep=just_built)
    if removed:
        _log.info(
            "environments evicted",
            cap_bytes=cap,
            freed_bytes=sum(entry.bytes for entry in removed),
            left_bytes=left,
            evicted=[{"kind": entry.kind, "key": entry.name, "bytes": entry.bytes} for entry in removed],
        )
    if left > cap:
        _log.warning(
            "environment store over its cap: the rest are in use, being built or used in the last ten minutes",
            cap_bytes=cap,
            left_bytes=left,
        )
    return removed


def prune(
    max_bytes: int | None = None,
    unused_for: float | None = None,
    *,
    dry_run: bool = False,
    now: float | None = None,
    keep: Path | None = None,
) -> list[Stored]:
    """Remove entries, least recently used first, until the rest total at most ``max_bytes``, and every entry
    unused for more than ``unused_for`` seconds; the removed entries (with ``dry_run``: the ones it would
    remove). ``keep`` and what the module says is never removed stay."""
    moment = time.time() if now is None else now
    return _evict(stored(), max_bytes, unused_for, dry_run=dry_run, now=moment, keep=keep)[0]


def _evict(
    entries: list[Stored],
    max_bytes: int | None,
    unused_for: float | None,
    *,
    dry_run: bool,
    now: float,
    keep: Path | None,
) -> tuple[list[Stored], int]:
    """:func:`prune` over ``entries`` (least recently used first): the removed ones and the bytes left."""
    total = sum(entry.bytes for entry in entries)
    kept = keep.resolve() if keep is not None else None
    removed: list[Stored] = []
    for entry in entries:
        old = unused_for is not None and now - entry.used > unused_for
        over = max_bytes is not None and total > max_bytes
        if not (old or over) or now - entry.used < RECENT or entry.path.resolve() == kept:
            continue
        with _unless_held(entry, now) as free:
            if not free:
                continue
            if not dry_run:
                _remove(entry.path)
        removed.append(entry)
        total -= entry.bytes
    return removed, total


@contextlib.contextmanager
def _unless_held(entry: Stored, now: float) -> Iterator[bool]:
    """Hold the entry's build and in-use locks while it is removed; ``False`` when another holder has either,
    or when, looked at again under them, it is gone or was used in the last :data:`RECENT` seconds."""
    with contextlib.ExitStack() as held:
        for lock in _locks(entry):
            try:
                handle = held.enter_context(lock.open("rb"))
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except FileNotFoundError:
                continue
            except OSError:
                yield False
                return
        yield entry.path.is_dir() and now - _used(entry.path) >= RECENT


def _locks(entry: Stored) -> list[Path]:
    """Its build lock (a root's beside it, named by its recipe even while it is built; a base's in it) and its
    in-use lock."""
    if entry.kind == "root":
        build = entry.path.with_name(entry.name.split(_BUILDING)[0] + ".lock")
    elif entry.kind == "shared":
        build = entry.path.with_name(entry.name + ".lock")
    else:
        build = entry.path / "environment.lock"
    return [build, entry.path / "in-use.lock"]


def _remove(folder: Path) -> None:
    # A root's tree holds files owned by other users and read-only folders: rm copes with both, and
    # --one-file-system never follows a mount a sandbox left by mistake.
    subprocess.run(["rm", "-rf", "--one-file-system", "--", os.fspath(folder)], check=False)
