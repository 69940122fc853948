"""The disk guard's watch on the host's disk under a sandbox disk shown larger than its room (a shaped run's).

Room taken on the host while the command runs is not the command's unless the host's disk is all but full: other
sandboxes opening beside it take gigabytes (their disks' room) and must not stop it (they did, as false alarms
of the hostile corpus's honest controls, when that watch used the 2% floor of a disk without a sandbox disk).
A 200 MiB tmpfs stands for the host's disk.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gradeflow.sandbox._disk import HOST_FULL_BELOW, DiskGuard, unmount

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs")

_MIB = 1024 * 1024


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "host"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200m", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        unmount(folder)


@pytest.fixture
def command() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def _fill(path: Path, mib: int) -> None:
    path.write_bytes(bytes(mib * _MIB))


def test_room_others_take_is_not_the_commands_until_the_host_is_all_but_full(
    host: Path, command: subprocess.Popen[bytes]
) -> None:
    killed: list[int] = []
    guard = DiskGuard((), command.pid, kill=killed.append, host_full=(str(host),))
    guard.start()
    try:
        _fill(host / "others", 100)  # 100 MiB taken, 100 MiB left: a neighbour's room, whoever took it
        assert not guard.halt.wait(0.5) and not guard.tripped and killed == []
        _fill(host / "more", 100 - HOST_FULL_BELOW // _MIB + 8)  # now under the floor, and losing room
        guard.join(30)
        assert guard.tripped and killed == [command.pid]
    finally:
        guard.halt.set()
