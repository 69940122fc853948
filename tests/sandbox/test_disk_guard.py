"""A sandbox disk shown larger than its room (a shaped run's): made whatever inode count the host's file system
shows, and the disk guard's watch on the host's disk under it.

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


class _Statvfs:
    """What ``os.statvfs`` gives of a 256 GiB file system that counts its inodes as XFS does (more than blocks)."""

    f_frsize = 4096
    f_blocks = 256 * 1024 * 1024 * 1024 // 4096
    f_bfree = f_blocks * 8 // 10  # 20% in use (51 GiB: under TAKEN_MOST)
    f_bavail = f_bfree - f_blocks // 20  # 5% kept for root
    f_files = 400_000_000


@pytest.mark.parametrize("files", [400_000_000, 0, 16_777_216])
def test_a_shaped_disk_is_made_whatever_inode_count_the_host_shows(
    files: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from gradeflow.sandbox import _disk

    if not _disk.disk_available():
        pytest.skip("sandboxes get no disk of their own here")
    host = _Statvfs()
    host.f_files = files  # XFS's, btrfs's (none counted), ext4's
    statvfs = os.statvfs
    monkeypatch.setattr(_disk.os, "statvfs", lambda path: host if path == tmp_path else statvfs(path))
    size, inodes = _disk.SandboxDisk.shown_as(tmp_path, _disk.image_size(16 * _MIB))
    assert size >= host.f_blocks * host.f_frsize and (inodes is None or inodes <= size // 4096)
    disk = _disk.SandboxDisk(16 * _MIB, like=tmp_path)
    try:
        made = statvfs(disk.root)
        assert disk.beyond_room and abs(made.f_blocks * made.f_frsize - 256 * 1024**3) < 256 * 1024**3 // 100
        # The host's count where ext4 can hold it (mke2fs rounds it up to whole groups), else about its most.
        asked = min(files, size // 4096) if files else made.f_files
        assert made.f_files > 0 and abs(made.f_files - asked) < (0.01 if files < size // 4096 else 0.1) * asked
        # As much in use and free to a user as on the host (within 1% of its size), none of it written: the image
        # holds a few megabytes of the file system's own tables.
        used = (made.f_blocks - made.f_bfree) * made.f_frsize
        whole = host.f_blocks * host.f_frsize
        assert abs(used - (host.f_blocks - host.f_bfree) * host.f_frsize) < whole // 100, used
        assert abs(made.f_bavail * made.f_frsize - host.f_bavail * host.f_frsize) < whole // 100
        assert disk.image.stat().st_blocks * 512 < 64 * _MIB
    finally:
        disk.close()


def test_a_shaped_disk_shows_the_hosts_use_up_to_a_bound_and_its_share_kept_for_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from gradeflow.sandbox import _disk

    host = _Statvfs()
    monkeypatch.setattr(_disk.os, "statvfs", lambda path: host)
    used, kept = _disk.SandboxDisk.taken_as(tmp_path)
    assert used == (host.f_blocks - host.f_bfree) * host.f_frsize and kept == pytest.approx(5.0)
    host.f_bfree, host.f_bavail = host.f_blocks // 10, 0  # 90% in use, the rest kept for root
    used, kept = _disk.SandboxDisk.taken_as(tmp_path)
    assert used == _disk.TAKEN_MOST and kept == pytest.approx(10.0)
    host.f_blocks = 0  # a file system that counts no blocks
    assert _disk.SandboxDisk.taken_as(tmp_path) == (0, 0.0)
