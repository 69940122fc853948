"""Process-wide settings read from the environment, and the names the command line offers before anything runs
(the sandbox kinds, the task types), in one place.

Nothing heavy is imported here (the package metadata only when the version is asked for), so the ``gradeflow``
command builds its argument parser (``--help``, usage errors) without pydantic; :mod:`gradeflow.models.spec`
takes its names from here.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Literal, get_args

from gradeflow.errors import SpecError

__all__ = [
    "ENV_CAP_VARIABLE",
    "SANDBOX_KINDS",
    "TASK_TYPES",
    "VARIED_RUN_SETTINGS",
    "SandboxKind",
    "TaskType",
    "byte_size",
    "cache_dir",
    "env_cap",
    "gradeflow_version",
    "varied_beside_main",
    "varied_run_setting",
]

TaskType = Literal["bugfix", "feature", "refactor", "perf"]
TASK_TYPES: tuple[str, ...] = get_args(TaskType)
"""The kinds of change a task asks for."""
SandboxKind = Literal["isolated", "docker", "local"]
SANDBOX_KINDS: tuple[str, ...] = get_args(SandboxKind)
"""The sandboxes a task or a caller may name, the default first."""
ENV_CAP_VARIABLE = "GRADEFLOW_ENV_CAP"
"""The environment variable holding the most the environment store may keep (see :func:`env_cap`)."""

VARIED_RUN_SETTINGS = ("auto", "beside", "after")

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)


def gradeflow_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gradeflow")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def cache_dir() -> Path:
    """Where pristine baselines are kept: ``$GRADEFLOW_HOME`` or ``~/.cache/gradeflow``."""
    root = Path(os.environ.get("GRADEFLOW_HOME") or Path.home() / ".cache" / "gradeflow")
    root.mkdir(parents=True, exist_ok=True)
    return root


def env_cap() -> int | None:
    """The most the environment store (roots and bases) may hold, in bytes: ``$GRADEFLOW_ENV_CAP``, e.g. ``50G``.

    ``None`` (no cap, the default) when it is unset or empty; ``SpecError`` naming the variable and its
    value when it is not a size.
    """
    value = os.environ.get(ENV_CAP_VARIABLE, "").strip()
    return byte_size(value, ENV_CAP_VARIABLE) if value else None


def byte_size(value: str, where: str) -> int:
    """Bytes in a size like ``50G``, ``500M``, ``1.5T`` or ``4096`` (K, M, G, T: powers of 1024; a ``B`` or
    ``iB`` may follow); ``SpecError`` naming ``where`` and ``value`` otherwise."""
    size = _SIZE.fullmatch(value.strip())
    if size is None:
        raise SpecError(f"{where}: {value!r} is not a size like 50G, 500M or 1.5T")
    return int(float(size.group(1)) * 1024 ** " kmgt".index(size.group(2).lower() or " "))


def varied_run_setting() -> str:
    """``GRADEFLOW_VARIED_RUN`` (``auto`` when unset or empty); ``SpecError`` naming it when it is none of
    :data:`VARIED_RUN_SETTINGS`. Reads no load: a caller that only checks the setting pays nothing for it."""
    setting = os.environ.get("GRADEFLOW_VARIED_RUN", "auto").strip().lower() or "auto"
    if setting not in VARIED_RUN_SETTINGS:
        raise SpecError(f"GRADEFLOW_VARIED_RUN: {setting!r} is not one of {', '.join(VARIED_RUN_SETTINGS)}")
    return setting


def varied_beside_main() -> bool:
    """Whether a grade starts its varied run beside the main run (``GRADEFLOW_VARIED_RUN``).

    ``after``: once the main run is over, and only when its required tests passed (the least CPU: a failing
    candidate pays for no second run). ``beside``: at once, on the tests the main run must pass (a passing
    grade's tests step takes about one run's time; a failing one's varied run is left unread). ``auto``, the
    default: ``beside`` while a core is idle, else ``after``. A core is idle when nothing but this thread is
    runnable beyond the cores the two runs leave free (the kernel's count of runnable threads, the least of
    three samples a few milliseconds apart) and the one-minute load average is below the cores this process
    may use less half a core: the count alone sees whether the machine is busy now, and the average alone
    counted the caller's own grades (a loop of one-at-a-time grades holds it near one on two cores, with the
    second core idle between them). The verdict is the same either way."""
    setting = varied_run_setting()
    if setting != "auto":
        return setting == "beside"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cores < 2 or os.getloadavg()[0] > cores - 0.5:
        return False
    runnable = _runnable_threads()
    return runnable is None or runnable - 1 <= cores - 2


def _runnable_threads() -> int | None:
    """The kernel's count of runnable threads (``/proc/loadavg``), the least of three samples; ``None`` where unread."""
    samples = []
    for _ in range(3):
        try:
            fields = Path("/proc/loadavg").read_text(encoding="ascii").split()
            samples.append(int(fields[3].split("/")[0]))
        except (OSError, IndexError, ValueError):
            return None
        time.sleep(0.002)
    return min(samples)
