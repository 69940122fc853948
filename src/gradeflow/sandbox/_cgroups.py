"""Memory and process limits for one command from a cgroup of its own, where this process may make one.

Where gradeflow runs as root and the memory and pids controllers are writable (cgroup v2 beside our own
cgroup, or the v1 hierarchies), every isolated command joins fresh cgroups before bwrap starts: the
memory limit counts every process and every page the command makes (tmpfs pages included) with no swap
beyond it, the pids limit every process, and an out-of-memory kill is read back as ``oom-killed``, as
docker reports it. Elsewhere the isolated sandbox falls back to ``prlimit`` (per-process limits).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["JOIN", "CommandGroups", "cgroups_available", "make_groups"]

_ROOT = Path("/sys/fs/cgroup")
JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
"""``sh -c JOIN join PROCS... -- ARGV...``: the shell enters each cgroup, then becomes ``ARGV``."""


@dataclass(frozen=True)
class _Layout:
    version: int
    bases: dict[str, Path]
    """Controller → the folder new cgroups are made in (one folder for both under v2)."""


@dataclass
class CommandGroups:
    """The cgroups of one command; :meth:`remove` after the command ended."""

    layout: _Layout
    folders: dict[str, Path]

    def procs(self) -> list[str]:
        return [str(folder / "cgroup.procs") for folder in dict.fromkeys(self.folders.values())]

    def oom_kills(self) -> int:
        """How many processes the kernel killed for memory in this command's cgroup."""
        name = "memory.events" if self.layout.version == 2 else "memory.oom_control"
        try:
            text = (self.folders["memory"] / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def remove(self) -> None:
        """Kill anything left in the cgroups, then remove them (bounded retries: removal waits for exits)."""
        for folder in dict.fromkeys(self.folders.values()):
            for _ in range(100):
                _kill_members(folder)
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def _kill_members(folder: Path) -> None:
    with contextlib.suppress(OSError):
        for pid in (folder / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                os.kill(int(pid), signal.SIGKILL)


_lock = threading.Lock()
_found: list[_Layout | None] = []


def _own_path(controller: str) -> str | None:
    """This process's cgroup path for ``controller`` (``""``: the v2 unified one)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if names.split(",") == [controller] or (controller == "" and names == ""):
            return path
    return None


def _probe() -> _Layout | None:
    if os.geteuid() != 0:
        return None
    try:
        controllers = (_ROOT / "cgroup.controllers").read_text().split()
    except OSError:
        controllers = []
    if {"memory", "pids"} <= set(controllers):
        own = _own_path("")
        base = _ROOT / own.lstrip("/") if own is not None else _ROOT
        layout = _Layout(2, {"memory": base, "pids": base})
    else:
        bases = {}
        for controller in ("memory", "pids"):
            own = _own_path(controller)
            if own is None or not (_ROOT / controller).is_dir():
                return None
            bases[controller] = _ROOT / controller / own.lstrip("/")
        layout = _Layout(1, bases)
    # Only a layout whose cgroups can really be made and limited counts.
    groups = _make(layout, 64 * 1024 * 1024, 16)
    if groups is None:
        return None
    groups.remove()
    return layout


def cgroups_available() -> bool:
    """Whether commands get cgroups of their own here (asked once)."""
    with _lock:
        if not _found:
            _found.append(_probe())
        return _found[0] is not None


def make_groups(memory: int, pids: int) -> CommandGroups | None:
    """Fresh cgroups limited to ``memory`` bytes (no swap beyond) and ``pids`` processes; ``None`` where
    cgroups cannot be used here (the caller limits by ``prlimit`` instead)."""
    if not cgroups_available():
        return None
    layout = _found[0]
    assert layout is not None
    return _make(layout, memory, pids)


def _make(layout: _Layout, memory: int, pids: int) -> CommandGroups | None:
    name = f"gradeflow-{secrets.token_hex(6)}"
    folders = {controller: base / name for controller, base in layout.bases.items()}
    groups = CommandGroups(layout, folders)
    settings = (
        {"memory.max": memory, "memory.swap.max": 0, "pids.max": pids}
        if layout.version == 2
        else {"memory.limit_in_bytes": memory, "memory.memsw.limit_in_bytes": memory, "pids.max": pids}
    )
    try:
        for folder in dict.fromkeys(folders.values()):
            folder.mkdir()
        for key, value in settings.items():
            target = folders["pids" if key.startswith("pids") else "memory"] / key
            if target.exists() or key in ("memory.max", "memory.limit_in_bytes", "pids.max"):
                target.write_text(str(value))
    except OSError:
        groups.remove()
        return None
    return groups
