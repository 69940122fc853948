"""What gradeflow keeps on disk to run tasks again quickly, listed and pruned: ``gradeflow env list`` and
``gradeflow env prune``.

Two kinds of entries. **Roots** (``$GRADEFLOW_ROOTS``, by default ``<cache>/roots``): the Debian or image
filesystems of ``environment.root``, one folder per recipe. **Bases** (``<cache>/baselines``): one folder per
baseline key holding the pristine checkout and, for a task with ``setup``, the environment setup built on it
(the layers every run mounts read-only). Either is rebuilt on its next use when it is gone: a grade that
finds its cached baseline's folder missing builds it again (its digests say so), a root is debootstrapped
again. So pruning costs time, never a verdict.

Each entry's last use is the time of its ``used`` file (touched whenever a grade takes it), else of the
folder. :func:`prune` removes the least recently used first, until the total fits ``max_bytes``, and every
entry unused for longer than ``unused_for`` seconds. An entry another process is building (its build lock
taken) or that a grade took in the last ten minutes (it may be mounted in a running sandbox) is kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gradeflow.config import cache_dir
from gradeflow.environments.roots import roots_dir, tree_size

__all__ = ["RECENT", "Stored", "prune", "stored", "touch_used"]

RECENT = 600.0
"""Seconds after its last use during which an entry is never pruned (a grade may still be running on it)."""

Kind = Literal["root", "base"]


@dataclass(frozen=True)
class Stored:
    """One kept folder: a root or a base (pristine checkout plus its built environment)."""

    kind: Kind
    name: str
    path: Path
    bytes: int
    used: float
    """When a grade last took it (seconds since the epoch)."""
    environment: bool = False
    """For a base: it holds an environment setup built."""


def touch_used(folder: Path) -> None:
    """Mark ``folder`` (a root's or a base's) as used now."""
    with contextlib.suppress(OSError):
        (folder / "used").touch()


def _used(folder: Path) -> float:
    for path in (folder / "used", folder):
        with contextlib.suppress(OSError):
            return path.stat().st_mtime
    return 0.0


def stored() -> list[Stored]:
    """Every root and base kept on this machine, least recently used first."""
    found: list[Stored] = []
    roots = roots_dir()
    if roots.is_dir():
        for folder in sorted(p for p in roots.iterdir() if p.is_dir() and not p.name.startswith(".")):
            found.append(Stored("root", folder.name, folder, tree_size(folder), _used(folder)))
    bases = cache_dir() / "baselines"
    if bases.is_dir():
        for folder in sorted(p for p in bases.iterdir() if p.is_dir()):
            built = (folder / "environment").is_dir()
            found.append(Stored("base", folder.name, folder, tree_size(folder), _used(folder), built))
    return sorted(found, key=lambda entry: entry.used)


@contextlib.contextmanager
def _unless_held(entry: Stored) -> Iterator[bool]:
    """Hold the entry's build lock while it is removed; ``False`` when another process holds it."""
    lock = entry.path.with_name(entry.path.name + ".lock") if entry.kind == "root" else entry.path / "environment.lock"
    if not lock.exists():
        yield True
        return
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prune(
    max_bytes: int | None = None, unused_for: float | None = None, *, dry_run: bool = False, now: float | None = None
) -> list[Stored]:
    """Remove entries, least recently used first, until the rest total at most ``max_bytes``, and every entry
    unused for more than ``unused_for`` seconds; the removed entries (with ``dry_run``: the ones it would
    remove). An entry whose build lock another process holds is kept."""
    moment = time.time() if now is None else now
    entries = stored()
    total = sum(entry.bytes for entry in entries)
    removed: list[Stored] = []
    for entry in entries:
        old = unused_for is not None and moment - entry.used > unused_for
        over = max_bytes is not None and total > max_bytes
        if not (old or over) or moment - entry.used < RECENT:
            continue
        with _unless_held(entry) as free:
            if not free:
                continue
            if not dry_run:
                _remove(entry.path)
        removed.append(entry)
        total -= entry.bytes
    return removed


def _remove(folder: Path) -> None:
    # A root's tree holds files owned by other users and read-only folders: rm copes with both, and
    # --one-file-system never follows a mount a sandbox left by mistake.
    subprocess.run(["rm", "-rf", "--one-file-system", "--", os.fspath(folder)], check=False)
