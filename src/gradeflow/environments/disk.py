"""Where the environment store lives on disk, and what each of its entries weighs, measured once.

Two folders: :func:`roots_dir` (the root filesystems, one folder per recipe) and :func:`bases_dir` (one folder
per baseline key: the pristine checkout and the environment setup built on it).

An entry's size is what its build recorded (a root's ``root.json`` holds ``bytes``), else what ``size.json``
in the entry says, as long as the entry's top-level folders are still the ones that were measured (a base
whose environment was built after its checkout was measured is measured again); else it is measured now
(the disk blocks of every regular file, each hard link once) and recorded. So listing the store, or keeping
it under its cap after a build, reads one small file per entry and walks only an entry never measured.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from gradeflow.config import cache_dir

__all__ = ["bases_dir", "entry_size", "roots_dir", "shared_dir", "tree_size"]

SIZE_FILE = "size.json"


def roots_dir() -> Path:
    """``$GRADEFLOW_ROOTS``, or ``roots`` under gradeflow's home."""
    folder = Path(os.environ.get("GRADEFLOW_ROOTS") or cache_dir() / "roots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def bases_dir() -> Path:
    """``baselines`` under gradeflow's home (not made when missing)."""
    return cache_dir() / "baselines"


def shared_dir() -> Path:
    """``shared`` under gradeflow's home: the environments ``environment.shared_setup`` built, one per key (not
    made when missing)."""
    return cache_dir() / "shared"


def tree_size(folder: Path) -> int:
    """Bytes of the regular files under ``folder`` (each hard link once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for current, _, files in os.walk(folder):
        for name in files:
            info = os.lstat(os.path.join(current, name))
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_blocks * 512
    return total


def entry_size(folder: Path) -> int:
    """Bytes of a root's or a base's folder: recorded at build time or at its first measure (see the module)."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        return int(json.loads((folder / "root.json").read_text())["bytes"])
    stamp = _stamp(folder)
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        recorded = json.loads((folder / SIZE_FILE).read_text())
        if recorded["stamp"] == stamp:
            return int(recorded["bytes"])
    size = tree_size(folder)
    staging = folder / f".{SIZE_FILE}.{os.getpid()}"
    with contextlib.suppress(OSError):
        staging.write_text(json.dumps({"bytes": size, "stamp": stamp}))
        staging.replace(folder / SIZE_FILE)
    return size


def _stamp(folder: Path) -> list[list[str | int]]:
    """The entry's top-level folders by name, inode and time: a folder built, replaced or removed changes it."""
    found: list[list[str | int]] = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                found.append([entry.name, info.st_ino, info.st_mtime_ns])
    return sorted(found)
