"""Memory, process and CPU limits for one command from cgroups of its own, where this process may make them.

Where gradeflow runs as root and the memory and pids controllers are writable (cgroup v2 beside our own
cgroup, or the v1 hierarchies), every isolated command joins fresh cgroups before bwrap starts: the
memory limit counts every process and every page the command makes (tmpfs pages included) with no swap
beyond it, the pids limit every process, and, where the cpu controller is writable too, all its processes
together get at most ``environment.cpus`` of the host's cores (a CFS quota per 100 ms period, as docker's
``--cpus``: v1 ``cpu.cfs_quota_us``, v2 ``cpu.max``). Afterwards an out-of-memory kill is read back as
``oom-killed``, as docker reports it, and so are the CPU seconds the command used and whether the quota held
it back. Elsewhere the isolated sandbox falls back to ``prlimit`` (per-process limits) and ``nice``: see
:class:`~gradeflow.sandbox._bwrap.View`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["CPU_PERIOD_US", "JOIN", "CommandGroups", "cgroups_available", "make_groups"]

_ROOT = Path("/sys/fs/cgroup")
JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
"""``sh -c JOIN join PROCS... -- ARGV...``: the shell enters each cgroup, then becomes ``ARGV``."""
CPU_PERIOD_US = 100_000
"""The CFS period the CPU quota is counted in (docker's too)."""


@dataclass(frozen=True)
class _Layout:
    version: int
    bases: dict[str, Path]
    """Controller → the folder new cgroups are made in (one folder for all under v2); ``cpu`` (and v1's
    ``cpuacct``) only where CPU can be limited."""

    def without_cpu(self) -> _Layout:
        return replace(self, bases={k: v for k, v in self.bases.items() if k not in ("cpu", "cpuacct")})


@dataclass
class CommandGroups:
    """The cgroups of one command; :meth:`remove` after the command ended."""

    layout: _Layout
    folders: dict[str, Path]

    @property
    def cpu(self) -> bool:
        """Whether the command's CPU is limited here (else the caller limits it by ``prlimit`` and ``nice``)."""
        return "cpu" in self.folders

    def procs(self) -> list[str]:
        return [str(folder / "cgroup.procs") for folder in dict.fromkeys(self.folders.values())]

    def kill(self) -> None:
        """Kill every process in the cgroups now (the command's, whatever session or namespace it is in)."""
        for folder in dict.fromkeys(self.folders.values()):
            _kill_members(folder)

    def oom_kills(self) -> int:
        """How many processes the kernel killed for memory in this command's cgroup."""
        name = "memory.events" if self.layout.version == 2 else "memory.oom_control"
        return _field(self.folders["memory"] / name, "oom_kill") or 0

    def cpu_throttled(self) -> bool:
        """Whether the CPU quota held the command back at least once (``nr_throttled`` of ``cpu.stat``)."""
        return self.cpu and (_field(self.folders["cpu"] / "cpu.stat", "nr_throttled") or 0) > 0

    def cpu_seconds(self) -> float | None:
        """CPU seconds all the command's processes used together (``None``: not accounted here)."""
        if self.layout.version == 2:  # every v2 cgroup accounts its CPU, limited or not
            usec = _field(self.folders["memory"] / "cpu.stat", "usage_usec")
            return None if usec is None else usec / 1e6
        try:
            return int((self.folders["cpuacct"] / "cpuacct.usage").read_text()) / 1e9
        except (KeyError, OSError, ValueError):
            return None

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


def _field(path: Path, key: str) -> int | None:
    """The number after ``key`` in a flat-keyed cgroup file (``None``: no such file or line)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return None


def _kill_members(folder: Path) -> None:
    with contextlib.suppress(OSError):
        for pid in (folder / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                os.kill(int(pid), signal.SIGKILL)


_lock = threading.Lock()
_found: list[_Layout | None] = []


def _own_path(controller: str) -> str | None:
    """This process's cgroup path for ``controller`` (``""``: the v2 unified one); v1 hierarchies may hold
    several controllers (``cpu,cpuacct``)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if (controller == "" and names == "") or (controller and controller in names.split(",")):
            return path
    return None


def _unified() -> _Layout | None:
    try:
        controllers = set((_ROOT / "cgroup.controllers").read_text().split())
    except OSError:
        return None
    if not {"memory", "pids"} <= controllers:
        return None
    own = _own_path("")
    base = _ROOT / own.lstrip("/") if own is not None else _ROOT
    return _Layout(2, {name: base for name in ("memory", "pids", "cpu") if name in controllers})


def _separate() -> _Layout | None:
    bases = {}
    for controller in ("memory", "pids", "cpu", "cpuacct"):
        own = _own_path(controller)
        if own is not None and (_ROOT / controller).is_dir():
            # Co-mounted hierarchies (``cpu`` and ``cpuacct`` both links to ``cpu,cpuacct``) are one folder.
            bases[controller] = (_ROOT / controller).resolve() / own.lstrip("/")
        elif controller in ("memory", "pids"):
            return None
    return _Layout(1, bases)


def _probe() -> _Layout | None:
    if os.geteuid() != 0:
        return None
    layout = _unified() or _separate()
    if layout is None:
        return None
    # Only a layout whose cgroups can really be made and limited counts; CPU is dropped where it cannot be.
    for candidate in (layout, layout.without_cpu()):
        groups = _make(candidate, 64 * 1024 * 1024, 16, 1.0)
        if groups is not None:
            groups.remove()
            return candidate
    return None


def cgroups_available() -> bool:
    """Whether commands get cgroups of their own here (asked once)."""
    with _lock:
        if not _found:
            _found.append(_probe())
        return _found[0] is not None


def make_groups(memory: int, pids: int, cpus: float) -> CommandGroups | None:
    """Fresh cgroups limited to ``memory`` bytes (no swap beyond), ``pids`` processes and, where the cpu
    controller can be used (:attr:`CommandGroups.cpu`), ``cpus`` cores; ``None`` where cgroups cannot be used
    here (the caller limits by ``prlimit`` instead)."""
    if not cgroups_available():
        return None
    layout = _found[0]
    assert layout is not None
    return _make(layout, memory, pids, cpus)


def _settings(layout: _Layout, memory: int, pids: int, cpus: float) -> list[tuple[str, str, str, bool]]:
    """``(controller, file, value, required)`` to write into a new cgroup set."""
    quota = max(1000, round(cpus * CPU_PERIOD_US))
    if layout.version == 2:
        settings = [
            ("memory", "memory.max", str(memory), True),
            ("memory", "memory.swap.max", "0", False),
            ("pids", "pids.max", str(pids), True),
        ]
        return settings + ([("cpu", "cpu.max", f"{quota} {CPU_PERIOD_US}", True)] if "cpu" in layout.bases else [])
    settings = [
        ("memory", "memory.limit_in_bytes", str(memory), True),
        ("memory", "memory.memsw.limit_in_bytes", str(memory), False),
        ("pids", "pids.max", str(pids), True),
    ]
    if "cpu" in layout.bases:
        settings.append(("cpu", "cpu.cfs_period_us", str(CPU_PERIOD_US), True))
        settings.append(("cpu", "cpu.cfs_quota_us", str(quota), True))
    return settings


def _make(layout: _Layout, memory: int, pids: int, cpus: float) -> CommandGroups | None:
    name = f"gradeflow-{secrets.token_hex(6)}"
    folders = {controller: base / name for controller, base in layout.bases.items()}
    groups = CommandGroups(layout, folders)
    try:
        for folder in dict.fromkeys(folders.values()):
            folder.mkdir()
        for controller, key, value, required in _settings(layout, memory, pids, cpus):
            target = folders[controller] / key
            if required or target.exists():
                _write(target, value)
    except OSError:
        groups.remove()
        return None
    return groups


def _write(target: Path, value: str) -> None:
    try:
        target.write_text(value)
    except OSError as exc:
        # v1 refuses a quota over the parent's: the parent's lower quota then bounds the command already.
        if not (exc.errno == errno.EINVAL and target.name == "cpu.cfs_quota_us"):
            raise
