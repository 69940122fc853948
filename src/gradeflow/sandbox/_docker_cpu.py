"""How much CPU a docker sandbox's command used, and whether ``environment.cpus`` held it back.

The engine bounds a container's CPU with a CFS quota on its cpu cgroup (``nano_cpus``), whose counters say
how many periods the quota throttled it (``nr_throttled``) and how much CPU all its processes used. Read
before and after a command, the differences are the command's (:func:`command_cpu`). A meter reads them:

- :class:`HostFiles`, where the container's cgroup is reachable in this host's ``/sys/fs/cgroup`` (an engine
  on this machine): its folder follows from the container's id and the engine's cgroup driver and version
  (``docker info``, asked once per engine): ``system.slice/docker-<id>.scope`` under systemd,
  ``docker/<id>`` under cgroupfs; v2's ``cpu.stat`` (``nr_throttled``, ``usage_usec``), or v1's ``cpu.stat``
  and ``cpuacct.usage``. A reading is a file read or two;
- :class:`EngineStats` elsewhere (a rootless or remote engine, another cgroup parent): the engine's one-shot
  stats (``throttling_data``, ``cpu_usage.total_usage``), an API round trip per reading, which an engine
  collecting every second may hold up to a second after the previous one. An engine that fails to answer
  one is not asked again for that container.

Neither working gives ``None`` readings, which :func:`command_cpu` reports as not throttled and not measured;
a meter never raises. The counters are the container's, not the command's alone: the sandbox's own helpers
(the idle keeper, the disk watcher) count too, and commands run at the same time in one sandbox each count
the others' CPU and throttling, so their figures are then approximate.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gradeflow.sandbox._docker_engine import ENGINE_ERRORS

__all__ = ["CGROUP_ROOT", "CpuMeter", "CpuSample", "EngineStats", "HostFiles", "command_cpu", "cpu_meter"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
"""Where this host's cgroups are mounted."""
_STATS_ERRORS: tuple[type[Exception], ...] = (*ENGINE_ERRORS, KeyError, TypeError, ValueError)
_engines: dict[str, tuple[str, str]] = {}
_engines_lock = threading.Lock()


@dataclass(frozen=True)
class CpuSample:
    """A container's CPU counters at one moment."""

    throttled: int
    """Periods in which the quota held the container back (``nr_throttled``)."""
    usage_ns: int | None
    """Nanoseconds of CPU all its processes used (``None``: not counted)."""


class CpuMeter(Protocol):
    def read(self) -> CpuSample | None:
        """The container's counters now; ``None`` when they cannot be read."""


def command_cpu(before: CpuSample | None, after: CpuSample | None) -> tuple[bool, float | None]:
    """``(cpu_throttled, cpu_seconds)`` of what ran between two readings; ``(False, None)`` without both."""
    if before is None or after is None:
        return False, None
    used = None if before.usage_ns is None or after.usage_ns is None else after.usage_ns - before.usage_ns
    return after.throttled > before.throttled, None if used is None else max(0, used) / 1e9


class HostFiles:
    """Reads a container's cgroup files on this host: ``cpu.stat``, and v1's ``cpuacct.usage``."""

    def __init__(self, cpu_stat: Path, usage: Path | None = None) -> None:
        """``usage``: v1's ``cpuacct.usage`` (nanoseconds); ``None`` under v2, whose ``cpu.stat`` has ``usage_usec``."""
        self.cpu_stat = cpu_stat
        self.usage = usage

    def read(self) -> CpuSample | None:
        try:
            fields = _fields(self.cpu_stat.read_text())
            usage = int(self.usage.read_text()) if self.usage is not None else None
        except (OSError, ValueError):
            return None
        if usage is None and "usage_usec" in fields:
            usage = fields["usage_usec"] * 1000
        return None if "nr_throttled" not in fields else CpuSample(fields["nr_throttled"], usage)


class EngineStats:
    """Reads a container's counters from the engine's one-shot stats."""

    def __init__(self, api: Any, container_id: str) -> None:
        self._api = api
        self._id = container_id
        self._off = False

    def read(self) -> CpuSample | None:
        if self._off:
            return None
        try:
            cpu = self._api.stats(self._id, stream=False, one_shot=True)["cpu_stats"]
            return CpuSample(int(cpu["throttling_data"]["throttled_periods"]), int(cpu["cpu_usage"]["total_usage"]))
        except _STATS_ERRORS:
            self._off = True
            return None


def cpu_meter(api: Any, container_id: str) -> CpuMeter:
    """The cheapest meter of a running container: its cgroup files where this host has them, else the engine's
    stats."""
    files = _host_files(api, container_id)
    return files if files is not None else EngineStats(api, container_id)


def _host_files(api: Any, container_id: str) -> HostFiles | None:
    engine = _engine_cgroups(api)
    if engine is None or engine[0] not in ("systemd", "cgroupfs"):
        return None
    driver, version = engine
    leaf = f"system.slice/docker-{container_id}.scope" if driver == "systemd" else f"docker/{container_id}"
    if version == "2":
        files = HostFiles(CGROUP_ROOT / leaf / "cpu.stat")
    else:  # v1 may mount cpu and cpuacct together, each name a link to ``cpu,cpuacct``
        files = HostFiles(
            (CGROUP_ROOT / "cpu").resolve() / leaf / "cpu.stat",
            (CGROUP_ROOT / "cpuacct").resolve() / leaf / "cpuacct.usage",
        )
    return files if files.read() is not None else None


def _engine_cgroups(api: Any) -> tuple[str, str] | None:
    """The engine's ``(CgroupDriver, CgroupVersion)``, asked once per engine; ``None`` when it does not answer."""
    key = str(getattr(api, "base_url", ""))
    with _engines_lock:
        if key not in _engines:
            try:
                info = api.info()
            except ENGINE_ERRORS:
                return None
            _engines[key] = (str(info.get("CgroupDriver", "")), str(info.get("CgroupVersion", "1")))
        return _engines[key]


def _fields(text: str) -> dict[str, int]:
    """The numbers of a flat-keyed cgroup file (``name value`` lines)."""
    fields = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            fields[name] = int(value)
    return fields
