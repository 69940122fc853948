"""What a local command starts dies with it, and what it prints is kept in bounded memory, never on disk.

Two ways to contain a command's processes, chosen once per process (:func:`pid_namespace_available`):

- **a PID namespace** (root, with util-linux ``unshare``): the command runs under
  ``unshare --pid --fork --kill-child --mount-proc``. When its shell ends, or at the timeout, the
  namespace's first process dies and the kernel kills every process left in it, daemons that called
  ``setsid`` included. ``/proc`` inside shows the namespace's own processes. Its mount namespace (private
  propagation) also lets the sandbox mount overlays for that command alone (:class:`Containment`'s
  ``overlays``): a folder laid over a site folder of an interpreter outside its environment (how the harness
  joins a task's own venv), and the task's environment from its shared read-only layers.
- **a marker and a scan** (any user): the command's environment carries a fresh random token in
  :data:`MARKER`; after the command, every process whose environment holds the token or whose session
  is the command's is killed, until none is left. A process that re-executes itself with an emptied
  environment and leaves the session escapes this; grade untrusted code in docker.

Output goes through pipes to reader threads that keep the head and the tail (:class:`OutputCapture`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Protocol

from gradeflow.errors import SandboxUnavailable
from gradeflow.sandbox.base import OutputCapture

__all__ = [
    "MARKER",
    "OVERLAY_UNSAFE",
    "CommandContainment",
    "Containment",
    "Drain",
    "Feed",
    "Overlay",
    "check_overlay_folders",
    "kill_group",
    "overlay_options",
    "pid_namespace_available",
]

MARKER = "GRADEFLOW_COMMAND_TOKEN"
"""The variable that marks a command's processes when no PID namespace is used."""
_UNSHARE = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"]
# The command runs as the namespace's second process, so it keeps ordinary signal handling (the first
# process of a PID namespace ignores signals it has no handler for).
_WAITER = 'sh -c "$1"; exit $?'
_KILL_ROUNDS = 50
_probe_lock = threading.Lock()
_probed: list[bool] = []


def pid_namespace_available() -> bool:
    """Whether commands can run in a PID namespace here (root and a working ``unshare``); asked once."""
    with _probe_lock:
        if not _probed:
            _probed.append(_probe())
        return _probed[0]


def _probe() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run([*_UNSHARE, "true"], capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


Overlay = tuple[str, tuple[str, ...], str | None]
"""``(folder, lower folders, upper folder)``: an overlay at ``folder``, the later lower folders on top."""
OVERLAY_UNSAFE = frozenset(":,\\")
"""Characters the overlay's options cannot hold in a folder's path (they separate folders and options)."""


def check_overlay_folders(kind: str, folders: Iterable[str]) -> None:
    """``SandboxUnavailable`` naming the first of ``folders`` an overlay's options cannot hold (``kind``: the
    sandbox's)."""
    unsafe = [folder for folder in folders if set(folder) & OVERLAY_UNSAFE]
    if unsafe:
        raise SandboxUnavailable(
            f"{kind} sandbox: cannot mount the task's environment from {unsafe[0]}: "
            "a path holding ':', ',' or '\\' cannot be an overlay's folder"
        )


def overlay_options(lowers: tuple[str, ...], upper: str | None) -> str:
    """The mount options of an overlay of ``lowers`` (the later on top), writable into ``upper`` when given."""
    options = f"lowerdir={':'.join(reversed(lowers))}"
    return options if upper is None else f"{options},upperdir={upper},workdir={upper}-work"


class CommandContainment(Protocol):
    """How one command is started and ended: the local sandbox's :class:`Containment`, the isolated one's bwrap."""

    pass_fds: tuple[int, ...]

    def argv(self, command: str) -> list[str]: ...
    def environment(self, env: dict[str, str]) -> dict[str, str]: ...
    def started(self) -> None: ...
    def watch(self, leader: int) -> None: ...
    def kill_all(self, leader: int) -> None: ...
    def check_started(self, command: str, stderr: str) -> None: ...
    def disk_full(self, exit_code: int | None) -> bool: ...
    def oom_killed(self) -> bool: ...
    def cpu_throttled(self, exit_code: int | None) -> bool: ...
    def cpu_seconds(self) -> float | None: ...
    def close(self) -> None: ...


class Containment:
    """How one command is started and, once it ended, how everything it started is killed."""

    pass_fds: tuple[int, ...] = ()
    """Descriptors the started process keeps (none here)."""

    def __init__(self, pid_namespace: bool, overlays: tuple[Overlay, ...] = ()) -> None:
        """``overlays``: each ``(folder, lowers, upper)`` an overlay mounted at ``folder`` in the command's mount
        namespace, the later ``lowers`` on top, read-only without an ``upper`` (else its writes land there, its
        work folder ``upper + '-work'``); only with ``pid_namespace`` (none is made without)."""
        self.pid_namespace = pid_namespace
        self.token = "" if pid_namespace else secrets.token_hex(16)
        self.overlays = overlays if pid_namespace else ()
        self._failed = f"gradeflow-overlay-failed-{secrets.token_hex(8)}"

    def started(self) -> None:
        """Called once the process was started (or failed to start): close what only the child needs."""

    def watch(self, leader: int) -> None:
        """Called with the started process's pid, to watch it while it runs (nothing to watch here)."""

    def check_started(self, command: str, stderr: str) -> None:
        """``SandboxUnavailable`` when an overlay could not be laid, so ``command`` never ran."""
        del command
        if self.overlays and self._failed in stderr:
            why = stderr[: stderr.index(self._failed)].strip().splitlines()
            folders = ", ".join(folder for folder, _, _ in self.overlays)
            raise SandboxUnavailable(f"local sandbox: cannot mount over {folders}: {why[-1] if why else 'no output'}")

    def disk_full(self, exit_code: int | None) -> bool:
        """Whether the command ended because it hit a disk limit (the local sandbox sets none)."""
        del exit_code
        return False

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the command for memory (the local sandbox cannot tell)."""
        return False

    def cpu_throttled(self, exit_code: int | None) -> bool:
        """Whether a CPU limit held the command back (the local sandbox sets none)."""
        del exit_code
        return False

    def cpu_seconds(self) -> float | None:
        """CPU seconds the command used (the local sandbox does not measure it)."""
        return None

    def close(self) -> None:
        """Release what this containment made for its command (nothing here)."""

    def argv(self, command: str) -> list[str]:
        if self.pid_namespace:
            mounts = "".join(
                f"mount -t overlay gradeflow -o {shlex.quote(overlay_options(lowers, upper))} "
                f"{shlex.quote(folder)} || {{ echo {self._failed} >&2; exit 125; }}\n"
                for folder, lowers, upper in self.overlays
            )
            return [*_UNSHARE, "/bin/sh", "-c", mounts + _WAITER, "gradeflow", command]
        return ["/bin/sh", "-c", command]

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        return env if self.pid_namespace else {**env, MARKER: self.token}

    def kill_all(self, leader: int) -> None:
        """Kill the command's process group, then (without a namespace) every marked process."""
        kill_group(leader)
        if self.pid_namespace:
            return
        needle = f"{MARKER}={self.token}".encode()
        for _ in range(_KILL_ROUNDS):
            found = [pid for pid in _pids() if _started_by(pid, needle, leader)]
            if not found:
                return
            for pid in found:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)


def kill_group(pid: int) -> None:
    # The group is signalled until it is empty (bounded), so a process forking while it dies is caught too.
    for _ in range(_KILL_ROUNDS):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.001)


def _pids() -> list[int]:
    me = os.getpid()
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit() and int(entry.name) != me]


def _started_by(pid: int, needle: bytes, leader: int) -> bool:
    """Whether ``pid`` carries the command's marker or sits in its session (``leader`` is the session id)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        fields = stat[stat.rindex(b")") + 2 :].split()
        if int(fields[3]) == leader:  # session id, after state, ppid and pgrp
            return fields[0] != b"Z"
        return needle in Path(f"/proc/{pid}/environ").read_bytes() and fields[0] != b"Z"
    except (OSError, ValueError, IndexError):
        return False


class Drain(threading.Thread):
    """Reads a pipe to its end into an :class:`OutputCapture`."""

    def __init__(self, pipe: IO[bytes]) -> None:
        super().__init__(daemon=True, name="gradeflow-local-output")
        self.pipe = pipe
        self.capture = OutputCapture()

    def run(self) -> None:
        fd = self.pipe.fileno()
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(fd, 65536):
                self.capture.add(chunk)

    def finish(self, grace: float) -> OutputCapture:
        """The capture once the pipe ended, or after ``grace`` seconds (an escaped process holds it open)."""
        self.join(grace)
        if not self.is_alive():  # never close a pipe the thread still reads: its number could be reused
            self.pipe.close()
        return self.capture


class Feed(threading.Thread):
    """Writes a payload to a pipe, then closes it; a reader that stops early only ends the feed."""

    def __init__(self, pipe: IO[bytes], payload: bytes) -> None:
        super().__init__(daemon=True, name="gradeflow-local-input")
        self.pipe = pipe
        self.payload = payload

    def run(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.pipe.write(self.payload)
        with contextlib.suppress(OSError, ValueError):
            self.pipe.close()
