"""Telling when a command filled the container's writable space (``environment.disk``).

Each writable folder is a tmpfs of ``disk`` bytes (see :meth:`DockerSettings.tmpfs`). Two views of it:

- a watcher, started once per container as the keeper user (so the task user can neither kill it nor
  write its state file), polls ``statvfs`` of every writable folder every 20 ms and counts each time
  one of them becomes full: this catches a command that filled the disk, failed, and deleted its files;
- the reaper's ``df`` after each command shows a folder still full at the end.

A command that filled a folder while it ran is ``disk_full``, told apart from an out-of-memory kill.
A fill undone within one poll can go unseen; the command then fails with whatever else it did.
"""

from __future__ import annotations

import re
from typing import Any

from gradeflow.sandbox._docker_engine import WATCH_DIR, WRITABLE

__all__ = ["DF_COMMAND", "disk_events", "folders_full", "start_watcher"]

FULL_BELOW = 64 * 1024
"""A folder with less than this many bytes free (or no inode left) counts as full."""
_STATE = f"{WATCH_DIR}/state"
_WATCH = """
import os, sys, time
state, paths, full_below = sys.argv[1], sys.argv[3:], int(sys.argv[2])
events, full = 0, set()


def record():
    with open(state + ".tmp", "w") as handle:
        handle.write("disk_full %d\\n" % events)
    os.replace(state + ".tmp", state)


record()
while True:
    for path in paths:
        try:
            fs = os.statvfs(path)
        except OSError:
            continue
        now = fs.f_bavail * fs.f_frsize < full_below or (fs.f_files > 0 and fs.f_favail == 0)
        if now and path not in full:
            events += 1
            record()
        (full.add if now else full.discard)(path)
    time.sleep(0.02)
"""
DF_COMMAND = f"cat {_STATE} 2>/dev/null; df -Pk {' '.join(WRITABLE)} 2>/dev/null"
"""Shell for the reaper: the watcher's count, then each writable folder's free space."""
_EVENTS = re.compile(rb"^disk_full (\d+)$", re.MULTILINE)
_DF_LINE = re.compile(rb"^\S+\s+\d+\s+\d+\s+(\d+)\s+\d+%\s+(/\S*)$", re.MULTILINE)


def start_watcher(api: Any, container_id: str, keeper_user: str) -> None:
    """Start the watcher in the background as ``keeper_user``; engine errors propagate."""
    argv = ["python3", "-c", _WATCH, _STATE, str(FULL_BELOW), *WRITABLE]
    exec_id = api.exec_create(container_id, argv, user=keeper_user, stdout=False, stderr=False)["Id"]
    api.exec_start(exec_id, detach=True)


def disk_events(reaper_output: bytes) -> int | None:
    """How many times the watcher saw a folder fill up, from the reaper's output; ``None`` if it said nothing."""
    found = _EVENTS.search(reaper_output)
    return int(found.group(1)) if found else None


def folders_full(reaper_output: bytes) -> list[str]:
    """The writable folders ``df`` shows with less than :data:`FULL_BELOW` bytes free."""
    writable = {folder.encode() for folder in WRITABLE}
    return [
        mount.decode()
        for available, mount in _DF_LINE.findall(reaper_output)
        if mount in writable and int(available) * 1024 < FULL_BELOW
    ]
