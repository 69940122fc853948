"""A file system of each isolated sandbox's own, ``environment.disk`` in size, holding everything it writes.

As root, where loop devices and overlayfs work (asked once: :func:`disk_available`), an isolated sandbox makes
an ext4 file system in a file of the host's temp folder (no journal, one inode per 8 KiB, sized so that
``environment.disk`` bytes and a :func:`headroom` beyond them are free to commands: :func:`image_size`) and
loop-mounts it as its scratch folder (:class:`SandboxDisk`). ``HOME``, the private environment, the upper layers
of shared environments, the output folder and the folder shown as ``/tmp`` live there, and so does the upper
layer of an overlay that :class:`WorkspaceLayer` mounts over the workspace at its own host path: the workspace's
writes count too. A command that takes more than ``environment.disk`` of it (its bytes, or its inodes at one per
8 KiB) is stopped and reported ``disk_full`` (:attr:`SandboxDisk.floor`, :class:`DiskGuard`), whether or not any
of its writes failed: the headroom lies between that limit and ``ENOSPC``, so a command that ran the disk out
(and swallowed the error) went past the limit first, by the whole headroom, and is seen whether it left its
files or not (unless it also deleted them within one poll of the guard: see ``docs/concepts/residual-risks.md``).
Its pages are page cache, not tmpfs: no memory is held for what was written (on a host whose temp folder is a
tmpfs, the file itself is memory).

The file's room is taken on the host's disk when the sandbox opens (``fallocate``: no data written), so nothing
a command writes can fill the host's disk or fail for want of room later (the kernel writes a loop device's
pages back long after the command wrote them); a host without that room makes the sandbox unavailable (the
environment's fault, never the candidate's).

Closing commits the workspace's writes into the host folder (the caller's, where the local sandbox leaves them
too: :func:`~gradeflow.sandbox._commit.commit_upper`), then unmounts the file system (lazily when something
still holds it) and removes its file: nothing else a command wrote outlives the sandbox. The overlay renames
no folder that was there before the sandbox opened (``redirect_dir=off``: ``rename`` fails with ``EXDEV``, and
``mv`` or ``shutil.move`` copy instead). Cost measured on a 2-core machine under load (a load average of 6 to
11): a median of 33 ms per sandbox for a 1 GiB disk (``fallocate``, ``mkfs``, the loop mount, the overlay, both
unmounts, removing the file), 20-60 ms more per sandbox opened, run once and closed.

A shaped run's sandbox (:mod:`gradeflow.sandbox.shape`) shows a machine's disk instead: the file is as large as
the host's file system under the workspace, with as many inodes (:meth:`SandboxDisk.shown_as`), and sparse past
the room taken for it, so ``statvfs`` reads the host's size where the main run's reads ``environment.disk``. Its
file system never answers ``ENOSPC`` at the limit: the guard alone stops a command past it (a fast writer a few
milliseconds' writes later, which land past the room taken), and it is stopped too when the host's disk under
the file is all but full (:data:`HOST_FULL_BELOW`; not at :data:`HOST_DISK_FLOOR`, where other sandboxes' room
taken meanwhile would pass for its writes).

Elsewhere (not root, no loop device or no overlayfs) the workspace, ``HOME`` and the private environment are
folders of the host's disk, bounded per file only; :class:`DiskGuard` stops a command that takes the host's disk
low (see :mod:`gradeflow.sandbox.isolated`). With a disk of its own, it stops a command that filled it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from gradeflow.errors import SandboxUnavailable
from gradeflow.sandbox._commit import commit_upper
from gradeflow.sandbox._local_procs import kill_group
from gradeflow.sandbox.base import remove_tree

__all__ = [
    "FULL_BELOW",
    "HOST_DISK_FLOOR",
    "DiskGuard",
    "SandboxDisk",
    "WorkspaceLayer",
    "disk_available",
    "folder_full",
    "headroom",
    "image_size",
]

FULL_BELOW = 1024 * 1024
"""A file system with less than this many bytes free (or no inode left) is full: ext4 answers a big write with
ENOSPC while a megabyte or two still show free (blocks it keeps for its own metadata and preallocations)."""
_MIB = 1024 * 1024
_INODE_BYTES = 8192
_SBIN = "/usr/sbin:/sbin:/usr/bin:/bin"
# No blocks kept for root: writes through an overlay are made with its mounter's rights (root) and would take them.
_MKFS = ["-q", "-F", "-t", "ext4", "-m", "0", "-b", "4096", "-i", "8192"]
_MKFS += ["-O", "^has_journal,^resize_inode", "-E", "nodiscard,lazy_itable_init=1"]
# A fresh sparse file reads as zeros: the inode tables need no zeroing, now (mkfs) or later (the kernel).
_LOOP_OPTIONS = "loop,noinit_itable,nosuid,nodev,noatime"
_MS_NOSUID, _MS_NODEV, _MNT_DETACH = 2, 4, 2
_libc = ctypes.CDLL(None, use_errno=True)


def headroom(disk: int) -> int:
    """The room beyond ``disk`` bytes that a sandbox's file system keeps free to commands (1/16 of it, 8 MiB at
    least): far more than ext4's early ``ENOSPC`` (about 2 MiB), so no write fails before the limit is passed,
    and a command that runs the file system out writes this much past the limit first."""
    return max(8 * _MIB, -(-disk // 16 // 4096) * 4096)


def image_size(disk: int) -> int:
    """The file system's size for ``disk`` bytes and their :func:`headroom` free to commands: the inode tables
    (one 256-byte inode per 8 KiB) and ext4's own reserve (2%, at most 16 MiB) added, in whole 4 KiB blocks."""
    room = disk + headroom(disk)
    size = room + room // 30 + min(room // 49, 16 * _MIB)
    return -(-size // 4096) * 4096


TAKEN_MOST = 64 * 1024 * _MIB
"""The most a shaped run's disk shows in use: allocating it costs the kernel about a millisecond per GiB (54 GiB: 55 ms
here, 1.5 TiB: 3.3 s on a busy machine) and writes a few megabytes of block bitmaps into the disk's file."""


class SandboxDisk:
    """One sandbox's file system, mounted at :attr:`root`; its sparse file lies in :attr:`host` beside it.

    ``SandboxUnavailable`` when it cannot be made (the host's disk full, no loop device free)."""

    floor: tuple[int, int]
    """Bytes and inodes free at which ``disk`` of them are taken since the file system was made (the
    :func:`headroom` and its inodes left): below either, it is full (:func:`folder_full`)."""

    def __init__(self, disk: int, like: Path | None = None) -> None:
        """``like``: a host folder whose file system this one's size and inode count copy (a shaped run's disk:
        :meth:`shown_as`), as sparse beyond the room ``disk`` takes; ``None``: just that room."""
        # Named as any temporary folder: commands see the scratch folder's path (HOME, the environment).
        self.host = Path(tempfile.mkdtemp())
        """The host folder holding the file system's file (and its mount point)."""
        self.image = self.host / "disk.ext4"
        self.root = self.host / "scratch"
        self._mounted = False
        self.beyond_room = False
        """The file is larger than the room taken for it on the host's disk (a machine's size shown)."""
        try:
            room = image_size(disk)
            size, inodes = self.shown_as(like, room) if like is not None else (room, None)
            with self.image.open("wb") as image:
                _reserve(image.fileno(), room)
                if size > room:
                    os.ftruncate(image.fileno(), size)
                    self.beyond_room = True
            taken, reserved = self.taken_as(like) if like is not None and self.beyond_room else (0, 0.0)
            counted = ["-N", str(inodes)] if inodes is not None else []
            counted += ["-m", f"{reserved:.4f}"] if reserved else []  # after _MKFS's "-m 0": this one counts
            _run([_tool("mke2fs"), *_MKFS, *counted, str(self.image)])
            self.root.mkdir()
            _run([_tool("mount"), "-o", _LOOP_OPTIONS, str(self.image), str(self.root)])
            self._mounted = True
            (self.root / "lost+found").rmdir()
            self.root.chmod(0o700)
            if taken:
                self._take(taken)
            info = os.statvfs(self.root)
            self.floor = (info.f_bavail * info.f_frsize - disk, info.f_favail - disk // _INODE_BYTES)
        except (OSError, subprocess.SubprocessError) as exc:
            self.close()
            raise SandboxUnavailable(f"isolated sandbox: cannot make its {disk}-byte disk: {exc}") from None

    @staticmethod
    def shown_as(like: Path, room: int) -> tuple[int, int | None]:
        """The size and inode count of ``like``'s file system (what a plain run there reads with ``statvfs``), or
        ``room`` and ext4's count where that file system is smaller or has no inode count (btrfs, some tmpfs)."""
        try:
            info = os.statvfs(like)
        except OSError:
            return room, None
        shown = info.f_blocks * info.f_frsize
        if shown <= room:
            return room, None
        # ext4's inode count for the room at one per 8 KiB is the least (the floor counts on it), one per 4 KiB
        # block the most ext4 can hold (XFS counts more: what its free room could hold).
        inodes = min(info.f_files, shown // 4096, 2**32 - 1) if info.f_files >= room // _INODE_BYTES else None
        # ext4 leaves its inode tables out of the size it reports: the file is that much larger.
        tables = (inodes if inodes is not None else shown // _INODE_BYTES) * 256
        return -(-(shown + tables) // 4096) * 4096, inodes

    @staticmethod
    def taken_as(like: Path) -> tuple[int, float]:
        """The bytes ``like``'s file system has in use (at most :data:`TAKEN_MOST`) and the share of it kept for root
        (percent, at most mke2fs's 50): a disk shown at that file system's size also shows what a plain run there
        reads as used and free."""
        try:
            info = os.statvfs(like)
        except OSError:
            return 0, 0.0
        if info.f_blocks <= 0:
            return 0, 0.0
        used = max(0, info.f_blocks - info.f_bfree) * info.f_frsize
        return min(used, TAKEN_MOST), min(50.0, max(0, info.f_bfree - info.f_bavail) * 100 / info.f_blocks)

    def _take(self, taken: int) -> None:
        """A root-only file of ``taken`` bytes at the disk's top, outside every folder the sandbox binds: allocated,
        never written (ext4's unwritten extents), so the file system counts the bytes as used while neither it nor
        the host's disk holds them. Where it cannot be made, the disk shows less in use; it still works."""
        path = self.root / ".taken"
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except OSError:
            return
        try:
            _reserve(fd, taken)
        except OSError:
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Unmount (lazily when still busy) and remove the file system. Idempotent."""
        if self._mounted:
            unmount(self.root)
            self._mounted = False
        remove_tree(self.host, ignore_errors=True)


def folder_full(folder: str | Path, floor: tuple[int, int] = (FULL_BELOW, 1)) -> bool:
    """The file system of ``folder`` has fewer bytes or inodes free to commands than ``floor`` (by default:
    less than :data:`FULL_BELOW` bytes or no inode; a sandbox's own disk: its :attr:`SandboxDisk.floor`)."""
    try:
        info = os.statvfs(folder)
    except OSError:
        return False
    return info.f_bavail * info.f_frsize < floor[0] or info.f_favail < floor[1]


class WorkspaceLayer:
    """An overlay over the host folder ``tree`` at its own path, its writes in an upper layer on a sandbox's disk
    (``root``). Mounted by :meth:`mount` once the tree is ready for commands; :meth:`close` commits the writes."""

    def __init__(self, tree: Path, root: Path) -> None:
        self.tree = tree
        self.upper = root / "workspace_upper"
        self.work = root / "workspace_work"
        self.upper.mkdir()
        self.work.mkdir()
        self.mounted = False

    def mount(self) -> None:
        if not self.mounted:
            mount_overlay(self.tree, self.upper, self.work, self.tree)
            self.mounted = True

    def unmount(self) -> None:
        if self.mounted:
            unmount(self.tree)
            self.mounted = False

    def discard(self) -> None:
        """Unmount and throw every write away (the tree is as the host folder holds it)."""
        self.unmount()
        for folder in (self.upper, self.work):
            remove_tree(folder, ignore_errors=True)
            folder.mkdir()

    def close(self) -> None:
        """Unmount and commit the writes into the host folder (a best effort: see
        :func:`~gradeflow.sandbox._commit.commit_upper`); the upper layer goes with the sandbox's disk."""
        self.unmount()
        with contextlib.suppress(OSError):
            if any(self.upper.iterdir()):
                commit_upper(self.upper, self.tree)


def mount_overlay(lower: Path, upper: Path, work: Path, target: Path) -> None:
    """An overlay of ``upper`` over ``lower`` at ``target`` (``nosuid``, ``nodev``); ``OSError`` when refused."""
    parts = {"lowerdir": lower, "upperdir": upper, "workdir": work}
    data = ",".join(f"{key}={_escape(str(path))}" for key, path in parts.items())
    data += ",redirect_dir=off,metacopy=off,index=off"
    if _libc.mount(b"overlay", os.fsencode(target), b"overlay", _MS_NOSUID | _MS_NODEV, data.encode()) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"cannot mount an overlay at {target}: {os.strerror(code)}")


def unmount(target: Path) -> None:
    """Unmount ``target``; detached lazily when busy (gone once nothing holds it); nothing when not mounted."""
    if _libc.umount2(os.fsencode(target), 0) == 0 or ctypes.get_errno() == errno.EINVAL:
        return
    _libc.umount2(os.fsencode(target), _MNT_DETACH)


def _reserve(fd: int, size: int) -> None:
    """Take ``size`` bytes for the file ``fd`` on its disk, writing nothing (a sparse file where the file system
    cannot: a file system without ``fallocate``)."""
    if _libc.fallocate(fd, 0, ctypes.c_long(0), ctypes.c_long(size)) == 0:
        return
    code = ctypes.get_errno()
    if code != errno.EOPNOTSUPP:
        raise OSError(code, os.strerror(code))
    os.ftruncate(fd, size)


def _escape(path: str) -> str:
    """A path inside overlayfs's options, where ``,`` and ``:`` separate."""
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def _tool(name: str) -> str:
    return shutil.which(name, path=f"{_SBIN}:{os.environ.get('PATH', '')}") or name


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
    if done.returncode != 0:
        raise OSError(f"{Path(argv[0]).name} failed: {done.stderr.decode(errors='replace').strip()[-200:]}")


HOST_DISK_FLOOR = 0.02
"""A command is stopped (``disk-limit-exceeded``) when a file system it writes to has less than this share
of its size (or of its inodes) free (and under 256 MiB, or 32,768 inodes, at the least): its workspace,
``HOME`` and private environment are
folders of the host's disk, bounded per file, not in total."""
_FLOOR_MIN = 256 * 1024 * 1024
_INODE_FLOOR_MIN = 32_768
"""Files (inodes) count like bytes: a command is stopped when it takes a file system it writes to below this
many free inodes (or the same share of its inodes), a million empty files cost no space."""
HOST_FULL_BELOW = 64 * _MIB
"""The host's disk under a sandbox disk shown larger than its room is all but full below this many bytes free."""
_GUARD_PERIOD = 0.25
_FULL_PERIOD = 0.01
"""A statvfs costs microseconds: polled this often, a sandbox's disk is seen past its limit unless the command
writes the whole headroom and deletes it again within one period."""


class DiskGuard(threading.Thread):
    """Kills a command's process group when a file system it writes to runs low; ``tripped`` tells."""

    def __init__(
        self,
        folders: tuple[str, ...],
        leader: int,
        full: tuple[str, ...] = (),
        floor: tuple[int, int] = (FULL_BELOW, 1),
        kill: Callable[[int], None] = kill_group,
        host_full: tuple[str, ...] = (),
    ) -> None:
        """``folders``: on the host's disk (stopped below :data:`HOST_DISK_FLOOR`); ``full``: the sandbox's own
        file systems (stopped when full, that is below ``floor``: see :func:`folder_full`); ``kill``: how the
        command is stopped, given ``leader`` (by default its process group); ``host_full``: the host folders of
        sandbox disks larger than the room taken for them (stopped when the host's disk is all but full, below
        :data:`HOST_FULL_BELOW`, and losing room: whoever takes it, the loop device's writes would fail next)."""
        super().__init__(daemon=True, name="gradeflow-disk-guard")
        self.folders = folders
        self.host_full = host_full
        self.full = full
        self.floor = floor
        self.kill = kill
        self.leader = leader
        self.halt = threading.Event()
        self.tripped = False

    def run(self) -> None:
        # Only what the disk lost while the command ran counts: a disk already low is the environment's, and
        # a sandbox disk a command found full (an earlier command filled it) stops it only once it takes more
        # of it: the command may be the one that frees it (``rm``).
        start = {folder: _free(folder) for folder in (*self.folders, *self.full, *self.host_full)}
        period = _FULL_PERIOD if self.full else _GUARD_PERIOD
        while not self.halt.wait(period):
            full = any(_filled(folder, start[folder], self.floor) for folder in self.full)
            full = full or any(_filled(f, start[f], (HOST_FULL_BELOW, 1)) for f in self.host_full)
            if full or any(_took_it_low(folder, start[folder]) for folder in self.folders):
                self.tripped = True
                self.kill(self.leader)
                return


def _free(folder: str) -> tuple[int, int, int, int]:
    """Free and total bytes, free and total inodes (0 where the file system does not count them)."""
    try:
        info = os.statvfs(folder)
    except OSError:
        return 0, 0, 0, 0
    return info.f_bavail * info.f_frsize, info.f_blocks * info.f_frsize, info.f_favail, info.f_files


def _filled(folder: str, start: tuple[int, int, int, int], floor: tuple[int, int]) -> bool:
    """The sandbox's own file system is full, and the command took some of it: it was not full when the command
    started, or it has a megabyte (or its 128 inodes) fewer free than then: starting a command takes a few inodes,
    and the free bytes of a file system being written back move by a few blocks on their own."""
    if not folder_full(folder, floor):
        return False
    free, _, inodes_free, _ = _free(folder)
    was_full = start[0] < floor[0] or (start[3] > 0 and start[2] < floor[1])
    return not was_full or free < start[0] - FULL_BELOW or inodes_free < start[2] - FULL_BELOW // _INODE_BYTES


def _took_it_low(folder: str, start: tuple[int, int, int, int]) -> bool:
    free, size, inodes_free, inodes = _free(folder)
    floor = max(_FLOOR_MIN, HOST_DISK_FLOOR * size)
    if size > 0 and free < floor and start[0] - free > _FLOOR_MIN // 4:
        return True
    inode_floor = max(_INODE_FLOOR_MIN, HOST_DISK_FLOOR * inodes)
    return inodes > 0 and inodes_free < inode_floor and start[2] - inodes_free > _INODE_FLOOR_MIN // 4


_lock = threading.Lock()
_found: list[bool] = []


def disk_available() -> bool:
    """Whether sandboxes get a file system of their own here (root, a loop device, overlayfs); asked once."""
    with _lock:
        if not _found:
            _found.append(_probe())
        return _found[0]


def _probe() -> bool:
    if os.geteuid() != 0 or not Path("/dev/loop-control").exists():
        return False
    try:
        disk = SandboxDisk(8 * _MIB)
    except SandboxUnavailable:
        return False
    try:
        lower = disk.root / "lower"
        lower.mkdir()
        layer = WorkspaceLayer(lower, disk.root)
        layer.mount()
        (lower / "written").write_text("")
        layer.close()
        return (lower / "written").is_file()
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            unmount(disk.root / "lower")
        disk.close()
