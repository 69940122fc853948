"""The isolated sandbox, the default on Linux: the local sandbox's private copy, each command in bubblewrap.

Everything the local sandbox does (a scrubbed environment, a private ``HOME`` and Python environment
layered over gradeflow's interpreter, output kept in bounded memory) plus, for every command
(:mod:`gradeflow.sandbox._bwrap`):

- **a view of the host by allow-list**: the system's folders (``/usr``, ``/etc``) and the interpreter's
  folders read-only, the harness folder read-only, the workspace and the sandbox's own folders
  (output, ``HOME``, the private environment) writable, a private size-limited ``/tmp`` (``TMPDIR``, emptied
  after every command), a fresh ``/proc`` and a minimal ``/dev``. Nothing else exists inside: no home folders,
  no other runs, nothing of gradeflow's state (``$GRADEFLOW_HOME``, Prefect's home, baselines, hidden tests' originals,
  the reference, the task spec), no host sockets (``/run``, the docker socket);
- **namespaces**: pid (every process dies with the command), network (a private loopback only, which
  reaches nothing of the host; with ``environment.network`` or an agent's network, slirp4netns as its way
  out, which never reaches the host's loopback: :mod:`gradeflow.sandbox._uplink`), ipc, uts;
- **a non-root user with no capabilities**: as root, commands run as a user of the sandbox's own
  (:func:`sandbox_user`; ``environment.user`` when the task sets one) with ``no_new_privs``, so nothing
  can be unmounted, remounted or read that this user could not read; the folders commands write are
  handed to that user before each command that follows a change made by gradeflow. As another user,
  bwrap makes a user namespace and drops every capability;
- **limits**: the timeout; ``environment.memory``, ``environment.pids`` and ``environment.cpus`` (all the
  command's processes together get at most that share of the host's cores, as in docker) from cgroups of the
  command's own where they can be made (:mod:`gradeflow.sandbox._cgroups`); ``environment.disk`` as a file
  system of the sandbox's own that holds everything commands write (the workspace through an overlay,
  ``HOME``, the private environment and its layers' writes, ``/tmp``, reports: :mod:`gradeflow.sandbox._disk`),
  its commands stopped as ``disk_full`` once they took more than ``environment.disk`` of it, whether or not a
  write of theirs failed (when the sandbox closes, the workspace's writes are
  committed into its host folder and the rest is gone); any one file at most ``environment.disk``; output.

  Weaker where gradeflow is not root or the kernel refuses (no writable cgroups, no loop device): memory and
  processes per process or user (``prlimit``); CPU as a budget of ``timeout × cpus`` CPU seconds per process
  (``RLIMIT_CPU``) at a lower priority (``nice``), which bounds no share of the cores at any moment; disk as
  the size of a tmpfs ``/tmp`` and of each file, plus a guard that stops a command taking the host's disk low,
  so a command can write more than ``environment.disk`` in its workspace in many files.

When bwrap is missing or refused here, or slirp4netns for a sandbox with the network,
:meth:`IsolatedSandboxFactory.describe` raises ``SandboxUnavailable`` with a hint: a grade that asked
for this sandbox is inconclusive, never silently run in another (nor on the host's network).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import math
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import ClassVar

from gradeflow.config import cache_dir
from gradeflow.environments.named import Shown, interpreter_site_folders, shown_folders
from gradeflow.environments.roots import Root, RootRecipe, ensure_root
from gradeflow.errors import SandboxUnavailable, SpecError
from gradeflow.models import EnvironmentSpec, TaskSpec
from gradeflow.models.spec import parse_size
from gradeflow.sandbox._bwrap import BwrapContainment, View, bwrap_path, bwrap_problem, interpreter_folders, system_view
from gradeflow.sandbox._cgroups import make_groups
from gradeflow.sandbox._disk import SandboxDisk, WorkspaceLayer, disk_available
from gradeflow.sandbox._host_packages import VIEW_NAME, view_digest, view_folder
from gradeflow.sandbox._link_hook import LINK_HOOK
from gradeflow.sandbox._uplink import uplink_problem
from gradeflow.sandbox.base import (
    SandboxDescription,
    SandboxFactory,
    check_free_space,
    default_disk,
    numeric_user,
    remove_tree,
    run_true_in_fresh_sandbox,
)
from gradeflow.sandbox.local import HARNESS_HOOK, LocalSandbox, write_scripts
from gradeflow.sandbox.shape import MACHINE_FOLDERS, Shape

__all__ = ["IsolatedSandbox", "IsolatedSandboxFactory", "IsolationSettings"]


class IsolationSettings:
    """The limits and identity of isolated commands, from a task's ``environment``; ``SpecError`` when bad."""

    def __init__(self, environment: EnvironmentSpec) -> None:
        self.uid, self.gid = numeric_user(environment, "isolated")
        if self.uid == 0:
            raise SpecError("environment.user: the isolated sandbox never runs commands as root (uid 0)")
        self.own_user = "user" not in environment.model_fields_set
        """No ``environment.user`` given: every sandbox gets a user of its own (see :func:`sandbox_user`)."""
        self.network = environment.network
        self.memory = parse_size(environment.memory)
        self.pids = environment.pids
        self.cpus = environment.cpus
        self.disk = parse_size(environment.disk) if environment.disk else default_disk(self.memory)
        self.root: Root | None = None
        """The root filesystem commands run on (``None``: the host's), resolved when the first sandbox opens."""
        self.shown = Shown(folders=(), interpreters=())
        """Host folders the task names (:func:`~gradeflow.environments.named.shown_folders`)."""


_USERS = itertools.count()
_FIRST_UID, _UIDS = 200_000, 60_000


def _person_uid(drawn: int) -> int:
    """``drawn``, or the next uid from it that no account of this host has (so no other process of this host is
    likely to hold it either)."""
    taken: set[int] = set()
    with contextlib.suppress(OSError):
        for line in Path("/etc/passwd").read_text(errors="replace").splitlines():
            fields = line.split(":")
            if len(fields) > 2 and fields[2].isdigit():
                taken.add(int(fields[2]))
    uid = drawn
    while uid in taken:
        uid += 1
    return uid


def _beside_system(root: str) -> Path | None:
    """A new folder, root's, on the file system that holds ``<root>/usr`` (``None`` where no temporary or cache
    folder is on it): a shaped run's ``/`` made there is one device with ``/usr`` and ``/etc``, as on a machine,
    where a folder of the sandbox's own disk was another (``os.stat('/').st_dev != os.stat('/usr').st_dev``: a
    sixth blind red team's fix strict only then passed, under the strict profile too). Named as any temporary
    folder: the mount table shows its path."""
    try:
        device = os.stat(f"{root}/usr").st_dev
    except OSError:
        return None
    for candidate in (tempfile.gettempdir(), "/var/tmp", str(cache_dir())):
        with contextlib.suppress(OSError):
            if os.stat(candidate).st_dev == device:
                folder = Path(tempfile.mkdtemp(dir=candidate))
                folder.chmod(0o755)
                return folder
    return None


def sandbox_user() -> int:
    """A uid (and gid) no other sandbox of this machine is likely to hold now, and no account has.

    Limits kept per user (``RLIMIT_NPROC``) are then per sandbox: a fork bomb in one run cannot take the
    process slots of another run graded at the same time.
    """
    return _FIRST_UID + (os.getpid() * 7919 + next(_USERS)) % _UIDS


def make_root_environment(folder: Path, python: str) -> Path:
    """A private environment at ``folder`` over a root's ``/usr/bin/python<python>`` and its system packages,
    written by hand (the interpreter lives in the root, not on this host): a ``pyvenv.cfg``, links to the
    interpreter, a site folder whose ``.pth`` joins the harness, ``pip`` and ``pytest`` scripts."""
    remove_tree(folder, ignore_errors=True)
    (folder / "bin").mkdir(parents=True)
    (folder / "pyvenv.cfg").write_text(f"home = /usr/bin\ninclude-system-site-packages = true\nversion = {python}\n")
    for name in ("python", "python3", f"python{python}"):
        (folder / "bin" / name).symlink_to(f"/usr/bin/python{python}")
    site = folder / "lib" / f"python{python}" / "site-packages"
    site.mkdir(parents=True)
    (site / "_hook.pth").write_text(HARNESS_HOOK)
    write_scripts(folder)
    return folder


class IsolatedSandbox(LocalSandbox):
    """A :class:`LocalSandbox` whose every command runs in bubblewrap over an allow-list view of the host."""

    kind: ClassVar[str] = "isolated"

    def __init__(
        self,
        host_workspace: Path,
        settings: IsolationSettings,
        read_only: tuple[str, ...] = (),
        shape: Shape | None = None,
    ) -> None:
        """``read_only``: more host folders commands see read-only at their paths (an agent's installation);
        ``shape``: commands see a developer's machine (see :mod:`gradeflow.sandbox.shape`): its user, host name,
        ``/home/<user>`` as ``HOME`` and the tree inside it (also still at its own path, where the environment
        set up for the task may name it)."""
        self._root = settings.root
        self._as_root = os.geteuid() == 0
        # A shaped run's disk is the size of the workspace's on the host, as a plain run there reads it.
        like = host_workspace if shape is not None else None
        self._disk = SandboxDisk(settings.disk, like) if self._as_root and disk_available() else None
        """The sandbox's own file system, its scratch folder (``None``: a folder on the host's disk)."""
        self._beside: Path | None = None
        """A shaped run's folder on the file system of the system's ``/usr`` (its ``/`` and ``/etc`` files)."""
        try:
            self._set_up(host_workspace, settings, read_only, shape)
        except BaseException:
            if self._disk is not None:
                self._disk.close()
            if self._beside is not None:
                remove_tree(self._beside, ignore_errors=True)
            raise

    def _set_up(
        self, host_workspace: Path, settings: IsolationSettings, read_only: tuple[str, ...], shape: Shape | None
    ) -> None:
        super().__init__(host_workspace, pid_namespace=False, shape=shape)
        self._workspace_layer = WorkspaceLayer(host_workspace, self._disk.root) if self._disk is not None else None
        if self._as_root and settings.own_user:
            settings = copy.copy(settings)
            settings.uid = settings.gid = sandbox_user() if shape is None else _person_uid(shape.uid)
        self._user, self._home = ("sandbox", str(self._scratch / "home")) if shape is None else (shape.user, shape.home)
        if shape is not None:
            self.workspace = shape.workspace
        self._settings = settings
        root = str(self._root.folder) if self._root is not None else None
        if shape is not None and self._disk is not None:
            self._beside = _beside_system(root or "")
            if self._beside is not None:  # scripts/clean-sandboxes.sh: a killed process left it when its disk is gone
                (self._beside / "disk").symlink_to(self._disk.image)
        self._accounts = self._write_accounts() if self._as_root else ()
        self._handed_over = False
        system, links = system_view(root)
        own_python = interpreter_folders() if root is None else ()
        named = (*settings.shown.folders, *(str(Path(f).resolve()) for f in read_only))
        self._read_only = (*system, *own_python, *dict.fromkeys(named))
        self._site_layer = self._harness_site_layer() if settings.shown.interpreters else self._scratch / "site"
        self._links = links
        own = (str(self._scratch / name) for name in ("out", "home", "env"))
        self._writable = (*own,) if shape is not None else (self._tree, *own)
        """The folders commands may write at their own paths: the workspace (at :attr:`workspace` when shaped),
        the output folder, ``HOME``, the private environment."""
        self._bwrap = bwrap_path() or "bwrap"
        self._top: str | None = None
        """A shaped run's ``/``: an empty folder (root's, read-only to commands) on the file system of the system's
        ``/usr`` where one can be had, as a machine's ``/`` and ``/usr`` are one device; else of its own disk."""
        if shape is not None and self._disk is not None:
            top = (self._beside or self._scratch) / "top"
            top.mkdir(mode=0o755)
            top.chmod(0o755)
            self._top = str(top)

    def _make_scratch(self) -> Path:
        return self._disk.root if self._disk is not None else super()._make_scratch()

    def _containment(self, timeout: float) -> BwrapContainment:
        self._hand_over()
        settings = self._settings
        groups = make_groups(settings.memory, settings.pids, settings.cpus) if self._as_root else None
        bounded = self._disk is not None
        if bounded:  # shown as /tmp: anyone may write, only the owner remove
            (self._scratch / "tmp").chmod(0o1777)
        harness_sites = tuple(
            (site, (site, str(self._site_layer)), None)
            for prefix in settings.shown.interpreters
            for site in interpreter_site_folders(prefix)
        )
        view = View(
            root=str(self._root.folder) if self._root is not None else None,
            overlays=(*harness_sites, *self._layers),
            read_only=(*self._read_only, str(self._scratch / "harness")),
            files=(*self._accounts, *self._resolver(), *self._host_packages(), *self._link_hook()),
            writable=self._writable,
            workdir=self.workspace,
            moved=()
            if self._shape is None
            else ((str(self._scratch / "home"), self._home), (self._tree, self.workspace)),
            hostname="sandbox" if self._shape is None else self._shape.hostname,
            devices=() if self._shape is None else self._shape.devices,
            machine_folders=() if self._shape is None else MACHINE_FOLDERS,
            machine=None if self._shape is None or settings.network else (self._shape.first_pid, self._shape.interface),
            # A disk of the sandbox's own bounds every file by filling up; a per-file limit of the same size would
            # stop the one big file just short of full (EFBIG, which Python takes as an OSError), unseen.
            file_size_limit=(self._shape is None or groups is None) and not bounded,
            network=settings.network,
            uid=settings.uid if self._as_root else None,
            gid=settings.gid if self._as_root else None,
            memory=settings.memory,
            pids=settings.pids,
            disk=settings.disk,
            tmp=str(self._scratch / "tmp") if bounded else None,
            disk_root=str(self._scratch) if bounded else None,
            disk_host=str(self._disk.host) if self._disk is not None and self._disk.beyond_room else None,
            top=self._top,
            disk_floor=self._disk.floor if self._disk is not None else View.disk_floor,
            cpu_budget=None if groups is not None and groups.cpu else math.ceil(timeout * settings.cpus),
            symlinks=self._links,
        )
        return BwrapContainment(view, self._bwrap, groups)

    def _moved(self) -> tuple[tuple[str, str], ...]:
        """A shaped sandbox's ``HOME`` at ``/home/<user>`` and the tree inside it, in that order."""
        if self._shape is None:
            return ()
        return (str(self._scratch / "home"), self._home), (self._tree, self.workspace)

    def _resolver(self) -> tuple[tuple[str, str], ...]:
        """On a root, the host's name servers and certificate authorities for a command given the network (a
        package index behind this site's proxy is reached as from the host)."""
        if self._root is None or not self._settings.network:
            return ()
        shown = []
        for name in ("/etc/resolv.conf", "/etc/ssl/certs/ca-certificates.crt"):
            host, inside = Path(name), Path(f"{self._root.folder}{name}")
            if host.is_file() and inside.is_file() and not inside.is_symlink():
                shown.append((str(host.resolve()), name))
        return tuple(shown)

    def _link_hook(self) -> tuple[tuple[str, str], ...]:
        """On a root, its ``sitecustomize`` with :data:`LINK_HOOK` first: an interpreter started through a link to
        the private environment's one (a tool's ``bin/python`` link to ``sys.executable``, as tox-current-env makes)
        runs as the environment's, where Python would look for ``pyvenv.cfg`` beside the link only. A root without
        the file (not Debian's layout) keeps that behaviour of Python's."""
        if self._root is None:
            return ()
        inside = Path(f"{self._root.folder}/etc/python{self._root.python}/sitecustomize.py")
        if not inside.is_file() or inside.is_symlink():
            return ()
        ours = self._scratch / "sitecustomize.py"
        if not ours.exists():
            ours.write_text(LINK_HOOK + "\n" + inside.read_text(errors="replace"))
            ours.chmod(0o644)
        return ((str(ours), f"/etc/python{self._root.python}/sitecustomize.py"),)

    def _show_host_packages(self) -> None:
        """Bound read-only where :data:`~gradeflow.sandbox.local.HOST_HOOK` looks (:meth:`_host_packages`); none
        over a root (the root's own Python: nothing of this host's)."""
        self._view = view_folder() if self._root is None else None

    def _host_packages(self) -> tuple[tuple[str, str], ...]:
        return () if self._view is None else ((str(self._view), str(self._scratch / VIEW_NAME)),)

    def _make_python(self, folder: Path) -> Path:
        if self._root is None:
            return super()._make_python(folder)
        return make_root_environment(folder, self._root.python)

    def _environment(self, env: dict[str, str]) -> dict[str, str]:
        # The temporary folder is the private, size-limited /tmp (emptied after every command), so that
        # what a command leaves there counts against environment.disk, as in docker.
        own = {**super()._environment({}), "TMPDIR": "/tmp"}
        if self._root is not None:  # gradeflow's interpreter is not there
            path = f"{self._python / 'bin'}:/usr/local/bin:/usr/bin:/bin"
            own["PATH"] = path if self._shape is None else self._shape.path(path)
        return {**own, **env} if self._shape is None else {**own, "HOME": self._home, **env}

    def _write_accounts(self) -> tuple[tuple[str, str], ...]:
        """``/etc/passwd`` and ``/etc/group`` as the host has them plus the command user, for tools that look
        the current user up (``getpass``, ``git``, ``pip``); in a shaped run, ``/etc/hostname`` naming its host."""
        uid, gid, home, user = self._settings.uid, self._settings.gid, self._home, self._user
        gecos = user.capitalize()
        shell = "/bin/sh" if self._shape is None else "/bin/bash"
        lines = {
            "passwd": f"{user}:x:{uid}:{gid}:{gecos}:{home}:{shell}\n",
            "group": f"{user}:x:{gid}:\n",
        }
        files = []
        # A shaped run's beside the system's folders: one bound over /etc/passwd is on /etc's device, as a machine's.
        folder = self._beside or self._scratch
        for name, line in lines.items():
            host = Path("/etc") / name
            text_from = Path(f"{self._root.folder}/etc/{name}") if self._root is not None else host
            text = text_from.read_text(errors="replace") if text_from.is_file() else ""
            ours = folder / f"etc-{name}"
            ours.write_text(text + ("" if text.endswith("\n") or not text else "\n") + line)
            ours.chmod(0o644)
            files.append((str(ours), str(host)))
        if self._shape is not None:  # a machine's /etc/hostname names it (the host's would not)
            named = folder / "hostname"
            named.write_text(f"{self._shape.hostname}\n")
            named.chmod(0o644)
            files.append((str(named), "/etc/hostname"))
        return tuple(files)

    def _hand_over(self) -> None:
        """As root, give the command user the folders commands write, once after every change gradeflow made."""
        if not self._as_root:
            return
        if self._handed_over:  # the output folder alone is made afresh by gradeflow before every command
            os.chown(self.output_dir, self._settings.uid, self._settings.gid)
            return
        owner = f"{self._settings.uid}:{self._settings.gid}"
        layer = self._workspace_layer
        # The workspace's own folder, not through its overlay: a change of owner there would copy every file up.
        if layer is not None:
            layer.unmount()
        folders = (self._tree, *self._writable, *self._uppers(), *([str(layer.upper)] if layer is not None else []))
        # -P -h: links are never followed; a link a command left points nowhere gradeflow would touch.
        argv = ["chown", "-R", "-P", "-h", owner, *dict.fromkeys(folders)]
        done = subprocess.run(argv, capture_output=True, check=False)
        if done.returncode != 0:
            tail = done.stderr[-200:]
            raise SandboxUnavailable(f"isolated sandbox: cannot hand the run's folders to {owner}: {tail!r}")
        if layer is not None:
            try:
                layer.mount()
            except OSError as exc:
                raise SandboxUnavailable(f"isolated sandbox: {exc}") from None
        self._handed_over = True

    @property
    def mounts_layers(self) -> bool:
        return True

    def mount_environment(
        self, layers: dict[str, tuple[Path, ...]], fixes: dict[str, dict[str, bytes]], owner: int
    ) -> None:
        """As the local sandbox mounts them (bwrap lays the overlays); commands then run as ``owner`` (the layers'
        owner) unless the task names its user."""
        if self._settings.own_user and self._as_root:
            settings = copy.copy(self._settings)
            settings.uid = settings.gid = owner
            self._settings = settings
            self._accounts = self._write_accounts()
        super().mount_environment(layers, fixes, owner)
        self._handed_over = False

    def import_workspace(self, archive: Path) -> None:
        if self._workspace_layer is not None:  # the archive replaces the host folder itself, under no overlay
            self._workspace_layer.discard()
        super().import_workspace(archive)
        self._handed_over = False

    def import_environment(self, folder: Path) -> None:
        super().import_environment(folder)
        self._handed_over = False

    def close(self) -> None:
        """Commit the workspace's writes into the host folder, then drop the sandbox's disk and folders."""
        try:
            if self._workspace_layer is not None:
                self._workspace_layer.close()
        finally:
            if self._disk is not None:
                self._disk.close()
            if self._beside is not None:
                remove_tree(self._beside, ignore_errors=True)
            super().close()


class IsolatedSandboxFactory(SandboxFactory):
    """Opens :class:`IsolatedSandbox` instances with one task's limits, on the task's root held from the first
    sandbox (or description) on until the factory is closed (:meth:`SandboxFactory.hold`)."""

    kind: ClassVar[str] = "isolated"

    def __init__(
        self,
        environment: EnvironmentSpec | None = None,
        *,
        read_only: tuple[str, ...] = (),
        network: bool | None = None,
    ) -> None:
        """``read_only``: host folders every command also sees read-only; ``network``: overrides
        ``environment.network`` (an agent's sandbox may reach its model's API where the tests never do)."""
        environment = environment or EnvironmentSpec()
        self.settings = IsolationSettings(environment)
        self.recipe = RootRecipe.from_spec(environment.root, environment.packages)
        if network is not None:
            self.settings.network = network
        self.read_only = read_only
        self.shape: Shape | None = None

    def open(self, host_workspace: Path) -> IsolatedSandbox:
        self._check()
        self._resolve_root()
        return IsolatedSandbox(host_workspace, self.settings, self.read_only, self.shape)

    def show(self, task: TaskSpec) -> IsolatedSandboxFactory:
        """This factory with the host folders ``task`` names shown read-only (``SpecError`` for one it
        cannot show: see :mod:`gradeflow.environments.named`)."""
        visible = () if self.recipe is not None else interpreter_folders()
        factory = copy.copy(self)
        factory.settings = copy.copy(self.settings)
        factory.settings.shown = shown_folders(task, host_root=self.recipe is None, visible=visible)
        return factory

    def with_network(self) -> IsolatedSandboxFactory:
        factory = copy.copy(self)
        factory.settings = copy.copy(self.settings)
        factory.settings.network = True
        return factory

    def _resolve_root(self) -> None:
        """Build or verify the task's root once per factory and hold it while the factory is open (verified and
        held again when it was released and is gone since); ``SandboxUnavailable`` when it cannot be built."""
        if self.recipe is None:
            return
        root = self.settings.root
        if root is None or not self.hold(root.folder.parent):
            # ensure_root marks it used, so no cap removes it before it is held (RECENT).
            self.settings.root = root = ensure_root(self.recipe)
            self.hold(root.folder.parent)

    def shaped(self, shape: Shape) -> IsolatedSandboxFactory:
        """Sandboxes whose commands see ``shape``'s user (a person's uid, as root), host name, ``/home`` and
        paths, and a developer's variables."""
        factory = copy.copy(self)
        factory.shape = shape
        return factory

    def _check(self) -> None:
        problem = bwrap_problem() or (uplink_problem() if self.settings.network else None)
        if problem is not None:
            raise SandboxUnavailable(f"isolated sandbox: {problem}")

    def probe(self) -> None:
        """The disks have room, bwrap works here, the root is built, and ``true`` runs in a fresh sandbox."""
        check_free_space(cache_dir())
        self._resolve_root()
        run_true_in_fresh_sandbox(self, "isolated sandbox", "sandbox")

    def describe(self) -> SandboxDescription:
        """``SandboxUnavailable`` (with what to do instead) when bwrap cannot run here, or slirp4netns is
        missing for a sandbox with the network."""
        self._check()
        if self.recipe is not None:
            self._resolve_root()
            assert self.settings.root is not None
            root = self.settings.root
            return SandboxDescription(
                sandbox=self.kind,
                architecture=platform.machine(),
                python_version=root.python,
                python_environment=f"private per sandbox, over {self.recipe.label()} ({root.digest[:12]})",
            )
        return SandboxDescription(
            sandbox=self.kind,
            architecture=platform.machine(),
            python_version=platform.python_version(),
            python_environment=f"private per sandbox, over {sys.prefix} (view {view_digest()})",
        )
