"""The sandbox contract: run a command against one workspace, read back what it wrote.

A :class:`SandboxFactory` opens one :class:`Sandbox` per grading step over a host folder that already
holds the repository to run (the private copy made by the snapshot step). Commands see the repository
at :attr:`Sandbox.workspace` and may write reports under :attr:`Sandbox.output_dir`, which lies
outside the repository. Closing a sandbox removes everything it created. When a candidate's step
fails as if the environment had, :meth:`SandboxFactory.probe` tells whether a fresh sandbox still works.
A factory holds the environment store's entries its sandboxes run on (:meth:`SandboxFactory.hold`) until it is
closed.
"""

from __future__ import annotations

import abc
import contextlib
import os
import platform
import shutil
import stat
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import IO, ClassVar, Self, cast

from pydantic import BaseModel

from gradeflow.environments.store import Holds
from gradeflow.errors import SandboxUnavailable, SpecError
from gradeflow.models import EnvironmentSpec, TaskSpec
from gradeflow.sandbox.shape import Shape

__all__ = [
    "DEFAULT_DISK",
    "MAX_OUTPUT_BYTES",
    "PROBE_MIN_FREE_BYTES",
    "PROBE_TIMEOUT",
    "CappedWriter",
    "CommandResult",
    "OutputCapture",
    "OutputTooLarge",
    "Sandbox",
    "SandboxDescription",
    "SandboxFactory",
    "archive_roots",
    "archive_tree",
    "check_free_space",
    "default_disk",
    "member_path",
    "numeric_user",
    "remove_tree",
    "replace_tree",
    "restore_roots",
    "run_true_in_fresh_sandbox",
]

MAX_OUTPUT_BYTES = 64 * 1024
"""Captured stdout/stderr is cut to this many bytes (head and tail kept)."""

BASE_ENV = {
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
}
"""Variables every command sees (the task's ``env`` may override them); nothing else is inherited."""
DEFAULT_DISK = 1024**3
"""``environment.disk`` when unset: 1 GiB, or half of ``memory`` when that is less (docker and isolated)."""
PROBE_MIN_FREE_BYTES = 64 * 1024 * 1024
"""Below this much free space where workspaces and baselines live, a probe reports the disk full."""


class CommandResult(BaseModel):
    """What one command did."""

    command: str
    exit_code: int | None
    """``None`` when the command was killed at its timeout."""
    stdout: str = ""
    stderr: str = ""
    duration: float = 0.0
    """Wall-clock seconds measured from outside the process."""
    timed_out: bool = False
    oom_killed: bool = False
    disk_full: bool = False
    """The sandbox's writable space (``environment.disk``) filled up while the command ran."""
    cpu_throttled: bool = False
    """The command wanted more CPU than ``environment.cpus`` and was held back: a cpu cgroup's quota throttled it
    at least once, or, where there is none, its CPU-time budget ended it (the isolated sandbox; always ``False``
    where the sandbox does not tell)."""
    cpu_seconds: float | None = None
    """CPU seconds all the command's processes used together, from its cgroup's accounting; ``None`` where
    the sandbox does not measure it."""
    stdout_bytes: int | None = None
    """How many bytes the command wrote to stdout in all, captured or not (``None``: not counted)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.oom_killed and not self.disk_full


class SandboxDescription(BaseModel):
    """The environment facts a sandbox reports for the fingerprint."""

    sandbox: str
    image: str | None = None
    image_id: str | None = None
    architecture: str = platform.machine()
    python_version: str = platform.python_version()
    timezone: str = BASE_ENV["TZ"]
    pythonhashseed: str = BASE_ENV["PYTHONHASHSEED"]
    python_environment: str | None = None
    """Where ``setup`` installs: the local sandbox's private environment per sandbox and what it layers over."""


def default_disk(memory: int) -> int:
    """Bytes of the writable space when ``environment.disk`` is not set, for ``memory`` bytes of memory."""
    return min(DEFAULT_DISK, memory // 2)


def numeric_user(environment: EnvironmentSpec, sandbox: str) -> tuple[int, int]:
    """``environment.user`` as ``(uid, gid)`` (a lone uid is its own gid); ``SpecError`` naming ``sandbox``
    when it is not numeric."""
    uid, _, gid = environment.user.partition(":")
    gid = gid or uid
    if not uid.isdigit() or not gid.isdigit():
        raise SpecError(f"environment.user: the {sandbox} sandbox needs a numeric 'uid:gid', not {environment.user!r}")
    return int(uid), int(gid)


def archive_tree(root: Path, archive: Path, max_bytes: int | None = None) -> None:
    """Write ``root``'s content to the tar ``archive``, names relative to it (``./x``); links stay links.

    ``OutputTooLarge`` as soon as the archive would pass ``max_bytes`` (a sparse file is archived whole)."""
    with archive.open("wb") as raw:
        out = raw if max_bytes is None else cast(IO[bytes], CappedWriter(raw, max_bytes, str(root)))
        with tarfile.open(fileobj=out, mode="w") as tar:
            tar.add(root, arcname=".")


class CappedWriter:
    """Writes through to ``out`` and refuses (``OutputTooLarge``) any write that would take it past ``limit`` bytes;
    ``what`` names the source in the message. Enough of a binary file for ``tarfile`` and the docker copy."""

    def __init__(self, out: IO[bytes], limit: int, what: str) -> None:
        self._out, self._limit, self._what = out, limit, what
        self.written = 0

    def write(self, data: bytes) -> int:
        size = len(data)
        if self.written + size > self._limit:
            raise OutputTooLarge(f"{self._what} is over {self._limit} bytes as an archive")
        self._out.write(data)
        self.written += size
        return size

    def tell(self) -> int:
        return self._out.tell()

    def flush(self) -> None:
        self._out.flush()


def member_path(name: str) -> str:
    """A tar member's path relative to the archived root (:func:`archive_tree` names them ``./x``)."""
    return str(PurePosixPath(name.removeprefix("./")))


def archive_roots(roots: dict[str, str], folder: Path) -> None:
    """Each host folder of ``roots`` to ``folder/<name>.tar`` (``export_environment`` for sandboxes on this host)."""
    for name, root in roots.items():
        archive_tree(Path(root), folder / f"{name}.tar")


OVERLAY_OPAQUE = ("user.overlay.opaque", "trusted.overlay.opaque")
"""The attribute that makes an overlay's folder hide the layers under it: bubblewrap's overlays (``userxattr``) read
the first, the kernel's as root the second."""
_OPAQUE_PAX = "SCHILY.xattr.user.overlay.opaque"


def archive_layer(upper: Path, archive: Path) -> None:
    """An overlay's upper folder written to ``archive`` as a layer to lay over the same lowers again: its whiteouts
    (``0/0`` character devices, a lower file removed) as they are, a folder made opaque (a lower folder removed and
    made again) marked in its member's pax header, as GNU tar carries extended attributes."""

    def mark(info: tarfile.TarInfo) -> tarfile.TarInfo:
        if info.isdir() and is_opaque(upper / member_path(info.name)):
            info.pax_headers = {**info.pax_headers, _OPAQUE_PAX: "y"}
        return info

    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        tar.add(upper, arcname=".", filter=mark)


def is_opaque(path: Path) -> bool:
    """Whether the folder ``path`` of an overlay's layer hides the layers under it."""
    for name in OVERLAY_OPAQUE:
        with contextlib.suppress(OSError):
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
    return False


def opaque_member(member: tarfile.TarInfo) -> bool:
    """Whether an :func:`archive_layer` member is an opaque folder."""
    return member.isdir() and member.pax_headers.get(_OPAQUE_PAX) == "y"


def mark_opaque(path: Path) -> None:
    """Make the folder ``path`` opaque to both kinds of overlay (as root: the ``trusted`` one needs it)."""
    for name in OVERLAY_OPAQUE:
        os.setxattr(path, name, b"y", follow_symlinks=False)


def restore_roots(roots: dict[str, str], folder: Path) -> None:
    """Each host folder of ``roots`` replaced by ``folder/<name>.tar`` where there is one (``import_environment``)."""
    for name, root in roots.items():
        if (folder / f"{name}.tar").is_file():
            replace_tree(Path(root), folder / f"{name}.tar")


def replace_tree(root: Path, archive: Path) -> None:
    """Empty ``root`` (the folder itself stays), then extract ``archive`` into it; nothing lands outside it."""
    for entry in list(root.iterdir()) if root.is_dir() else []:
        if entry.is_dir() and not entry.is_symlink():
            remove_tree(entry)
        else:
            entry.unlink()
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="tar")


def remove_tree(folder: Path, *, ignore_errors: bool = False) -> None:
    """Remove ``folder`` however a command shaped the tree under it; a missing ``folder`` is no error.

    A command can nest folders thousands of levels deep (made relative to a folder's descriptor, so no
    path is ever long) and take the write or search permission off them: a recursive removal
    (``shutil.rmtree`` on Python 3.11) then ends in ``RecursionError`` inside the grader. Here every
    subfolder met is first moved up to sit directly under ``folder`` (a rename within one file system),
    so the work is a loop over short names with at most two descriptors open, whatever the depth.
    ``ignore_errors``: an ``OSError`` (a busy mount, say) leaves what could not be removed, silently.
    """
    try:
        _remove_flattened(folder)
    except FileNotFoundError:
        return
    except OSError:
        if not ignore_errors:
            raise


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _remove_flattened(folder: Path) -> None:
    if folder.is_symlink():
        raise OSError(f"{folder} is a link, not a folder: not removed")
    os.chmod(folder, 0o700)
    top = os.open(folder, _FOLDER_FLAGS)
    try:
        taken = set(os.listdir(top))
        pending = [name for name in taken if _is_folder(name, top)]
        _clear(top, top, taken, pending)
        while pending:
            name = pending.pop()
            os.chmod(name, 0o700, dir_fd=top)
            fd = os.open(name, _FOLDER_FLAGS, dir_fd=top)
            try:
                _clear(fd, top, taken, pending)
            finally:
                os.close(fd)
            os.rmdir(name, dir_fd=top)
    finally:
        os.close(top)
    os.rmdir(folder)


def _is_folder(name: str, parent: int) -> bool:
    return stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)


def _clear(fd: int, top: int, taken: set[str], pending: list[str]) -> None:
    """Unlink every non-folder in ``fd``; move its subfolders under ``top`` (``fd`` is not ``top``) and queue them."""
    with os.scandir(fd) as entries:
        found = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for name, is_folder in found:
        if not is_folder:
            os.unlink(name, dir_fd=fd)
        elif fd != top:
            moved = _free_name(taken)
            os.rename(name, moved, src_dir_fd=fd, dst_dir_fd=top)
            pending.append(moved)


def _free_name(taken: set[str]) -> str:
    number = len(taken)
    while f".gradeflow-flat-{number}" in taken:
        number += 1
    name = f".gradeflow-flat-{number}"
    taken.add(name)
    return name


class OutputTooLarge(ValueError):
    """A file a command wrote (a report, a record) is over the size the reader allows."""


class OutputCapture:
    """Keeps the head and the tail of a stream of any length in bounded memory."""

    def __init__(self, limit: int = MAX_OUTPUT_BYTES) -> None:
        self._limit = limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        """Bytes added in all."""

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            if len(self._tail) > 2 * self._limit:
                del self._tail[: len(self._tail) - self._limit]

    def text(self) -> str:
        """The captured text, cut like :func:`cap_output` when it was longer than the limit."""
        return cap_output(bytes(self._head + self._tail[-self._limit :]), self._limit)


def cap_output(data: bytes, limit: int = MAX_OUTPUT_BYTES) -> str:
    """Decode ``data``, keeping its head and tail when it is longer than ``limit`` bytes."""
    if len(data) > limit:
        half = limit // 2
        data = data[:half] + b"\n[... output truncated ...]\n" + data[-half:]
    return data.decode("utf-8", errors="replace")


class Sandbox(abc.ABC):
    """A place where commands run against one workspace. Use it as a context manager."""

    workspace: str
    """The repository root as commands see it (their working directory)."""
    output_dir: str
    """A folder outside the repository where commands may write reports, as commands see it."""

    @abc.abstractmethod
    def run(self, command: str, *, env: dict[str, str], timeout: float, stdin: bytes | None = None) -> CommandResult:
        """Run a shell command from the repository root; raise ``SandboxUnavailable`` if it cannot start.

        ``stdin`` is piped to the command's standard input, which then ends: a payload read whole at the
        start (by the harness, say) leaves nothing for anything the command starts later to read back.
        Without it, standard input is empty.
        """

    @abc.abstractmethod
    def read_output(self, name: str, max_bytes: int) -> tuple[bytes, float] | None:
        """The bytes and mtime of ``output_dir/name``, or ``None`` when absent; over ``max_bytes`` is an error."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop everything the sandbox started and remove what it created. Idempotent."""

    @abc.abstractmethod
    def install_harness(self, files: dict[str, bytes]) -> str:
        """Put grader-owned files in a folder outside the repository; its path as commands see it.

        Calling it again replaces the folder's content. Commands may read the files; in the docker
        sandbox they cannot change them.
        """

    @abc.abstractmethod
    def export_workspace(self, archive: Path, max_bytes: int | None = None) -> None:
        """Write the workspace as it is now to the host file ``archive``: a tar, names relative to its root.

        The sandbox also keeps a copy of the other state commands made so far (``HOME``; in the local
        sandbox the private Python environment), which :meth:`import_workspace` puts back. ``max_bytes``:
        ``OutputTooLarge`` as soon as the archive (or the copy of ``HOME`` a docker sandbox keeps) would pass
        it, counted as it is written, so a sparse file's apparent size counts and the host disk holds no more.
        """

    @abc.abstractmethod
    def import_workspace(self, archive: Path) -> None:
        """Start afresh from ``archive`` (as :meth:`export_workspace` writes it, possibly edited).

        Afterwards the workspace holds exactly the archive's content, ``HOME`` (and the local private
        environment) is as at the last export, and ``TMPDIR`` is empty. The docker sandbox replaces its
        container, so ``/tmp``, ``/var/tmp`` and ``/dev/shm`` start empty and nothing earlier commands
        started survives; the harness folder is not carried over.
        """

    @abc.abstractmethod
    def environment_roots(self) -> dict[str, str]:
        """Where commands keep state outside the workspace, as commands see it: ``{name: folder}``.

        ``home`` (``HOME``) always; the local sandbox adds ``env``, its private Python environment. What
        ``setup`` installs lands in these folders and in the workspace.
        """

    def shown_folders(self) -> dict[str, str]:
        """Read-only folders commands see at a path of this sandbox's own (elsewhere in each sandbox), as commands
        see them: ``{name: folder}``. The local and isolated sandboxes show the view of gradeflow's site folder
        beside their private environment; none by default."""
        return {}

    @abc.abstractmethod
    def export_environment(self, folder: Path) -> None:
        """Write each root of :meth:`environment_roots` to the host file ``folder/<name>.tar``, names relative to it."""

    @abc.abstractmethod
    def import_environment(self, folder: Path) -> None:
        """Replace each root's content with ``folder/<name>.tar`` (as :meth:`export_environment` wrote it,
        possibly relocated); a root without a tar is left as it is."""

    @property
    def mounts_layers(self) -> bool:
        """Whether :meth:`mount_environment` shows a built environment without copying it (the isolated sandbox;
        the local sandbox as root; the docker sandbox on a root)."""
        return False

    @property
    def stacks_layers(self) -> bool:
        """Whether :meth:`mount_environment` lays several layers per root, an environment built over another one
        (``environment.shared_setup``) kept as the upper layer its build wrote, whiteouts and opaque folders
        included: the isolated sandbox and the local one, as root."""
        return False

    def layer_owner(self, drawn: int) -> int:
        """Who owns the environment's layers unpacked from this sandbox's roots: ``drawn`` (a user of their own,
        drawn per environment), or a user this sandbox's commands must be to write over them."""
        return drawn

    def mount_environment(
        self, layers: dict[str, tuple[Path, ...]], fixes: dict[str, dict[str, bytes]], owner: int
    ) -> None:
        """Show the environment roots from shared read-only ``layers`` (per root, the later on top; more than one
        only where :attr:`stacks_layers`), see :attr:`mounts_layers`."""
        raise NotImplementedError(f"the {type(self).__name__} copies environments (import_environment)")

    def runs_on(self, tree: Path) -> bool:
        """Commands run on the host folder ``tree`` itself (not on a copy of it)."""
        return Path(self.workspace) == tree

    def output_path(self, name: str) -> str:
        """The path of ``output_dir/name`` as commands see it."""
        return f"{self.output_dir.rstrip('/')}/{name}"

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class SandboxFactory(abc.ABC):
    """Opens sandboxes of one kind; cheap to create, safe to pass to Prefect tasks.

    It holds the store entries its sandboxes run on (its root, the bases its grades take) from their first use
    until :meth:`close` or the end of a ``with`` block (else until it is collected): no prune or cap removes them
    meanwhile (:mod:`gradeflow.environments.store`). A shallow copy (``copy.copy``, as most :meth:`show`,
    :meth:`with_network` and :meth:`shaped` make) shares its holds; a pickled one holds what it uses where it is
    unpickled.
    """

    kind: ClassVar[str]

    def hold(self, folder: Path) -> bool:
        """Hold ``folder`` (a root's or a base's entry its sandboxes use) until :meth:`close`: one lock per entry
        and factory, however often asked; ``False`` when the entry is missing."""
        holds = self.__dict__.get("_holds")
        if holds is None:
            holds = self.__dict__.setdefault("_holds", Holds())
        return holds.hold(folder)

    def close(self) -> None:
        """Release what :meth:`hold` holds. The factory stays usable: it holds again what it uses next."""
        holds = self.__dict__.get("_holds")
        if holds is not None:
            holds.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @abc.abstractmethod
    def open(self, host_workspace: Path) -> Sandbox:
        """A sandbox running commands against a copy or view of ``host_workspace``."""

    @abc.abstractmethod
    def describe(self) -> SandboxDescription:
        """Facts about the environment commands run in; raise ``SandboxUnavailable`` when it cannot run."""

    def check_limits(self, where: str) -> None:
        """``SpecError`` (naming ``where``) when the limits cannot be met by the engine that would run them.

        Called before any flow run. Nothing to check by default; an engine that does not answer is not
        the caller's mistake and is left for the grade to report.
        """
        del where

    def shaped(self, shape: Shape) -> SandboxFactory:
        """A factory like this one whose sandboxes look like ``shape`` (a developer's machine) as far as this
        kind of sandbox can (see :mod:`gradeflow.sandbox.shape`); by default this factory itself."""
        del shape
        return self

    def with_network(self) -> SandboxFactory:
        """Sandboxes like these whose commands may reach the network (``setup`` with ``environment.setup_network``);
        this factory itself where commands have it anyway (the local sandbox)."""
        return self

    def show(self, task: TaskSpec) -> SandboxFactory:
        """This factory, showing what ``task`` names of the host where the kind can (the isolated sandbox)."""
        return self

    @abc.abstractmethod
    def probe(self) -> None:
        """Check that a fresh sandbox works now; ``SandboxUnavailable`` naming what does not.

        Called after a candidate's step failed in a way that looks like the environment's: when the
        probe passes, the candidate broke its own sandbox. Never cached; a few seconds at most.
        """


PROBE_TIMEOUT = 30.0
"""Seconds the probe's ``true`` may take in a fresh sandbox."""


def run_true_in_fresh_sandbox(factory: SandboxFactory, label: str, what: str) -> None:
    """Open a fresh sandbox over an empty folder and run ``true`` in it; ``SandboxUnavailable`` when that fails.

    ``label`` starts the messages (``docker sandbox``), ``what`` names the fresh thing (``container``).
    """
    try:
        with tempfile.TemporaryDirectory(prefix="gradeflow-probe-") as folder, factory.open(Path(folder)) as box:
            result = box.run("true", env={}, timeout=PROBE_TIMEOUT)
    except OSError as exc:
        raise SandboxUnavailable(f"{label}: a fresh {what} cannot be made: {exc}") from None
    if not result.ok:
        raise SandboxUnavailable(
            f"{label}: `true` fails in a fresh {what} (exit {result.exit_code}): {result.stderr[-200:]!r}"
        )


def check_free_space(*folders: Path, minimum: int = PROBE_MIN_FREE_BYTES) -> None:
    """``SandboxUnavailable`` when a folder's file system (or the temp folder's) has under ``minimum`` bytes free."""
    for folder in (*folders, Path(tempfile.gettempdir())):
        existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("/"))
        try:
            free = shutil.disk_usage(existing).free
        except OSError as exc:
            raise SandboxUnavailable(f"cannot read the free space under {existing}: {exc}") from None
        if free < minimum:
            raise SandboxUnavailable(
                f"the disk under {existing} is full ({free // (1024 * 1024)} MiB free, "
                f"{minimum // (1024 * 1024)} MiB needed)"
            )
