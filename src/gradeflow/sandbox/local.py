"""The local sandbox: commands run on this machine, in a private copy, for trusted code only.

Each command runs in its own session with a scrubbed environment (``BASE_ENV``, a private ``HOME`` and
``TMPDIR``, plus the task's ``env``). When it ends, or at its timeout, everything it started is killed,
daemons that called ``setsid`` included (a PID namespace as root, else a marker scan: see
:mod:`gradeflow.sandbox._local_procs`); its output is read through pipes, head and tail kept in memory,
so nothing it prints reaches the disk. ``python`` and
``pip`` are a private virtual environment's, made fresh for every sandbox and layered over the
interpreter running gradeflow (its packages, pytest included, are importable; what ``setup`` installs
lands in the private layer and wins over them), so no ``pip install`` lands in gradeflow's own
environment or leaks into a later grade. This protects the grader's secrets from accidental leaks, not from a
hostile patch: candidate code runs with the grader's user rights, so this sandbox is opt-in and warns on
every grade. Untrusted submissions are graded in the isolated sandbox (the default) or in docker.

An interpreter of this host outside that environment which a task's command runs by path (the project's own
venv: ``PYTHONPATH=src /opt/venvs/proj/bin/python -m pytest``) joins the harness as in the isolated sandbox:
a folder holding the harness's site file is laid read-only over its site folders, for the harnessed commands
alone, in the command's own mount namespace (root only; elsewhere such a run may not load the harness, and the
base run's failure says why and what to do).

What the task's ``setup`` built (``HOME`` and the private environment) is mounted the same way as root, from
the layers shared by every run (:meth:`LocalSandbox.mount_environment`); not root, each sandbox gets a copy.
"""

from __future__ import annotations

import os
import platform
import select
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import venv
from pathlib import Path
from typing import ClassVar

from gradeflow.config import cache_dir
from gradeflow.environments.named import interpreter_site_folders, named_interpreters
from gradeflow.errors import SandboxUnavailable
from gradeflow.models import TaskSpec
from gradeflow.sandbox._bwrap import interpreter_folders
from gradeflow.sandbox._host_packages import VIEW_NAME, view_digest, view_folder
from gradeflow.sandbox._local_procs import (
    OVERLAY_UNSAFE,
    CommandContainment,
    Containment,
    Drain,
    Feed,
    Overlay,
    check_overlay_folders,
    pid_namespace_available,
)
from gradeflow.sandbox.base import (
    BASE_ENV,
    CommandResult,
    OutputTooLarge,
    Sandbox,
    SandboxDescription,
    SandboxFactory,
    archive_layer,
    archive_roots,
    archive_tree,
    check_free_space,
    member_path,
    remove_tree,
    replace_tree,
    restore_roots,
    run_true_in_fresh_sandbox,
)
from gradeflow.sandbox.shape import Shape

__all__ = ["HARNESS_HOOK", "LOCAL_WARNING", "LocalSandbox", "LocalSandboxFactory", "write_scripts"]

LOCAL_WARNING = (
    "gradeflow: warning: the local sandbox runs the candidate's code with your rights and your files in reach; "
    "use it for trusted code only (the default, --sandbox isolated, isolates it)"
)


def _path_variable(private: Path) -> str:
    # The private environment first, then the interpreter running gradeflow (its tools), then the system.
    system = "/usr/local/bin:/usr/bin:/bin"
    return f"{private / 'bin'}:{Path(sys.executable).parent}:{system}"


_PIP = """#!{python}
import sys
from pip._internal.cli.main import main
sys.exit(main())
"""


_PYTEST = """#!{python}
import sys
from pytest import console_main
sys.exit(console_main())
"""
"""``pytest`` and ``py.test`` run in the private environment too (the host's scripts would start the host's Python)."""

HARNESS_HOOK = "import os, site, sys; site.addsitedir(os.path.join(os.path.dirname(sys.prefix), 'harness'))\n"
"""Every interpreter of the private environment treats the sandbox's harness folder (beside the environment,
wherever a copy of it is restored) as a site folder: the harness's ``.pth`` runs at start, whatever variables
the command set or removed."""


HOST_HOOK = (
    f"import os, sys; p = os.path.join(os.path.dirname(sys.prefix), {VIEW_NAME!r}); "
    "os.path.isdir(p) and p not in sys.path and sys.path.append(p)\n"
)
"""Every interpreter of the private environment puts the view of gradeflow's site folder beside the environment (a
link to it, or a read-only mount of it: :meth:`LocalSandbox._show_host_packages`) last on its path, as a path line
of a ``.pth`` file would: wherever a copy of the environment is restored, and naming no path setup ran with."""


def make_private_environment(folder: Path) -> Path:
    """A virtual environment at ``folder`` over this interpreter's packages; installs go into ``folder``.

    Made without pip of its own (a few milliseconds): a ``.pth`` file puts a view of gradeflow's site-packages
    (everything but gradeflow and what only it needs: :mod:`gradeflow.sandbox._host_packages`), shown beside
    the environment (:data:`HOST_HOOK`), behind the private one, so ``python -m pip`` and the ``pip`` script run
    the host's pip with the private environment as their prefix (``pytest`` alike); another runs
    :data:`HARNESS_HOOK`.
    """
    venv.EnvBuilder(with_pip=False, symlinks=True, clear=True).create(folder)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(folder), "platbase": str(folder)}))
    purelib.mkdir(parents=True, exist_ok=True)
    (purelib / "_host.pth").write_text(HOST_HOOK)
    (purelib / "_hook.pth").write_text(HARNESS_HOOK)
    write_scripts(folder)
    return folder


def write_scripts(folder: Path) -> None:
    """``pip``, ``pytest`` and ``py.test`` in the environment at ``folder``, run by its own interpreter."""
    for name, text in (("pip", _PIP), ("pytest", _PYTEST), ("py.test", _PYTEST)):
        script = folder / "bin" / name
        script.write_text(text.format(python=folder / "bin" / "python"))
        script.chmod(0o755)


class LocalSandbox(Sandbox):
    """Runs commands in ``host_workspace`` itself; scratch folders live in a private temp dir."""

    kind: ClassVar[str] = "local"

    def __init__(
        self,
        host_workspace: Path,
        *,
        pid_namespace: bool | None = None,
        shape: Shape | None = None,
        interpreters: tuple[str, ...] = (),
    ) -> None:
        """``pid_namespace``: run commands in a PID namespace (``None``: when this machine allows it); ``shape``:
        the variables as a developer's shell has them (see :mod:`gradeflow.sandbox.shape`); ``interpreters``:
        Python prefixes outside the private environment whose interpreters join the harness (in a namespace)."""
        self._shape = shape
        self._interpreters = interpreters
        self._harnessed = False
        """A harness (or recorder) was installed: its commands get the overlays of :attr:`_interpreters`."""
        self._pid_namespace = pid_namespace_available() if pid_namespace is None else pid_namespace
        self._layers: list[Overlay] = []
        """The environment's roots mounted from shared layers (:meth:`mount_environment`), in every command."""
        self._scratch = self._make_scratch()
        for name in ("out", "home", "tmp", "harness"):
            (self._scratch / name).mkdir()
        self._show_host_packages()
        self._python = self._make_python(self._scratch / "env")
        self._saved: Path | None = None
        self._tree = str(host_workspace)
        """The tree on the host (commands see it at :attr:`workspace`, the same path here)."""
        self.workspace = str(host_workspace)
        self.output_dir = str(self._scratch / "out")

    def _make_scratch(self) -> Path:
        """A fresh private folder for the sandbox's own folders (output, ``HOME``, ``TMPDIR``, the environment)."""
        return Path(tempfile.mkdtemp())  # named as any: commands see its path (HOME, the environment)

    def _show_host_packages(self) -> None:
        """The view of gradeflow's site folder beside the private environment, where :data:`HOST_HOOK` finds it
        (:attr:`_view`, looked up once per sandbox)."""
        self._view: Path | None = view_folder()
        (self._scratch / VIEW_NAME).symlink_to(self._view)

    def _make_python(self, folder: Path) -> Path:
        """The sandbox's private Python environment at ``folder``."""
        return make_private_environment(folder)

    def _environment(self, env: dict[str, str]) -> dict[str, str]:
        own = {
            **BASE_ENV,
            "PATH": _path_variable(self._python),
            "VIRTUAL_ENV": str(self._python),
            "HOME": str(self._scratch / "home"),
            "TMPDIR": str(self._scratch / "tmp"),
        }
        return {**own, **env} if self._shape is None else self._shape.variables(own, env)

    def run(self, command: str, *, env: dict[str, str], timeout: float, stdin: bytes | None = None) -> CommandResult:
        # A report left by an earlier command (setup, say) must never pass for this command's report.
        remove_tree(Path(self.output_dir), ignore_errors=True)
        Path(self.output_dir).mkdir()
        contain = self._containment(timeout)
        started = time.perf_counter()
        try:
            proc = subprocess.Popen(
                contain.argv(command),
                cwd=self._tree,
                env=contain.environment(self._environment(env)),
                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=contain.pass_fds,
            )
        except OSError as exc:
            raise SandboxUnavailable(f"{self.kind} sandbox cannot start {command!r}: {exc}") from exc
        finally:
            contain.started()
        assert proc.stdout is not None and proc.stderr is not None
        contain.watch(proc.pid)
        if stdin is not None:
            assert proc.stdin is not None
            Feed(proc.stdin, stdin).start()
        out, err = Drain(proc.stdout), Drain(proc.stderr)
        out.start()
        err.start()
        exit_code = _wait(proc, timeout)
        timed_out = exit_code is None
        duration = time.perf_counter() - started
        contain.kill_all(proc.pid)
        if timed_out:
            proc.wait()
            duration = time.perf_counter() - started
        stdout, stderr = out.finish(_OUTPUT_GRACE), err.finish(_OUTPUT_GRACE)
        try:
            contain.check_started(command, stderr.text())
            oom_killed = contain.oom_killed()
            cpu_throttled, cpu_seconds = contain.cpu_throttled(exit_code), contain.cpu_seconds()
        finally:
            contain.close()
        return CommandResult(
            command=command,
            exit_code=exit_code,
            stdout=stdout.text(),
            stderr=stderr.text(),
            duration=duration,
            timed_out=timed_out,
            disk_full=contain.disk_full(exit_code),
            oom_killed=oom_killed,
            cpu_throttled=cpu_throttled,
            cpu_seconds=cpu_seconds,
            stdout_bytes=stdout.total,
        )

    def _containment(self, timeout: float) -> CommandContainment:
        """How the next command (of at most ``timeout`` seconds) is started and its processes ended (the isolated
        sandbox wraps it in bwrap)."""
        del timeout
        overlays = list(self._layers)
        if self._harnessed and self._pid_namespace and self._interpreters:
            layer = str(self._harness_site_layer())
            sites = (site for prefix in self._interpreters for site in interpreter_site_folders(prefix))
            # A folder whose path holds a character the overlay's options use cannot be laid.
            overlays += [(site, (site, layer), None) for site in sites if not set(site) & OVERLAY_UNSAFE]
        return Containment(self._pid_namespace, tuple(overlays))

    def _harness_site_layer(self) -> Path:
        """A folder holding one site file that makes the sandbox's harness folder a site folder, laid over an
        outside interpreter's site folders so that interpreter starts the harness as the private one does."""
        layer = self._scratch / "site"
        if not layer.is_dir():
            layer.mkdir()
            hook = f"import site; site.addsitedir({str(self._scratch / 'harness')!r})\n"
            (layer / "_hook.pth").write_text(hook)
        return layer

    def runs_on(self, tree: Path) -> bool:
        return Path(self._tree) == tree

    def read_output(self, name: str, max_bytes: int) -> tuple[bytes, float] | None:
        path = Path(self.output_dir) / name
        if not path.is_file() or path.is_symlink():
            return None
        size = path.stat().st_size
        if size > max_bytes:
            raise OutputTooLarge(f"{name} is {size} bytes, over the {max_bytes}-byte cap")
        return path.read_bytes(), path.stat().st_mtime

    def install_harness(self, files: dict[str, bytes]) -> str:
        folder = self._scratch / "harness"
        remove_tree(folder, ignore_errors=True)
        folder.mkdir()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        self._harnessed = True
        return str(folder)

    def environment_roots(self) -> dict[str, str]:
        return {name: str(self._scratch / name) for name in ("env", "home")}

    def shown_folders(self) -> dict[str, str]:
        return {} if self._view is None else {VIEW_NAME: str(self._scratch / VIEW_NAME)}

    @property
    def mounts_layers(self) -> bool:
        """As root, where every command has a mount namespace of its own: see :meth:`mount_environment`."""
        return self._pid_namespace

    @property
    def stacks_layers(self) -> bool:
        """As root (a layer's whiteouts are device files, its opaque folders carry a ``trusted`` attribute)."""
        return self.mounts_layers and os.geteuid() == 0

    def mount_environment(
        self, layers: dict[str, tuple[Path, ...]], fixes: dict[str, dict[str, bytes]], owner: int
    ) -> None:
        """Show each environment root (``env``, ``home``) as an overlay in every command's mount namespace: the
        shared read-only ``layers[name]`` (the later on top), over them the ``fixes`` (member → content: setup's
        files that named its paths, rewritten to this sandbox's), and the commands' writes in a layer of this
        sandbox's own, kept across its commands and gone with it. The layers themselves are never written."""
        del owner  # the local sandbox's commands run as gradeflow's user (root), who reads every layer
        roots = self.environment_roots()
        for name, stack in layers.items():
            lowers = [str(layer) for layer in stack]
            if fixes.get(name):
                fixed = self._scratch / f"{name}-fixed"
                for member, data in fixes[name].items():
                    target = fixed / member_path(member)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                _like_layers(fixed, stack)
                lowers.append(str(fixed))
            upper = self._scratch / f"{name}-upper"
            check_overlay_folders(self.kind, (*lowers, str(upper), roots[name]))
            upper.mkdir()
            (self._scratch / f"{name}-upper-work").mkdir()
            self._layers.append((roots[name], tuple(lowers), str(upper)))

    def _uppers(self) -> list[str]:
        return [upper for _, _, upper in self._layers if upper is not None]

    def _empty_uppers(self) -> None:
        """The commands' writes over the mounted environment thrown away (the shared layers show again)."""
        for upper in self._uppers():
            for folder in (Path(upper), Path(upper + "-work")):
                remove_tree(folder, ignore_errors=True)
                folder.mkdir()

    def export_environment(self, folder: Path) -> None:
        """The roots as archives; with layers mounted, what the commands wrote over them (each root's upper
        layer, :func:`~gradeflow.sandbox.base.archive_layer`), the layers themselves being shared."""
        if not self._layers:
            archive_roots(self.environment_roots(), folder)
            return
        names = {target: name for name, target in self.environment_roots().items()}
        for target, _, upper in self._layers:
            if target in names and upper is not None:
                archive_layer(Path(upper), folder / f"{names[target]}.tar")

    def import_environment(self, folder: Path) -> None:
        restore_roots(self.environment_roots(), folder)

    def export_workspace(self, archive: Path, max_bytes: int | None = None) -> None:
        archive_tree(Path(self._tree), archive, max_bytes)
        if self._layers:  # the environment is the shared layers plus this sandbox's writes, which an import drops
            return
        # Not beside HOME, where a command would find it by a relative path.
        if self._saved is None:
            self._saved = Path(tempfile.mkdtemp(prefix="gradeflow-saved-"))
        saved = self._saved
        for name in ("home", "env"):
            remove_tree(saved / name)
            shutil.copytree(self._scratch / name, saved / name, symlinks=True)

    def import_workspace(self, archive: Path) -> None:
        # In place: an editable install made by setup names the workspace's and the environment's paths.
        replace_tree(Path(self._tree), archive)
        if self._layers:
            self._empty_uppers()
        elif self._saved is not None:
            for name in ("home", "env"):
                remove_tree(self._scratch / name)
                shutil.copytree(self._saved / name, self._scratch / name, symlinks=True)
        remove_tree(self._scratch / "tmp")
        (self._scratch / "tmp").mkdir()

    def close(self) -> None:
        remove_tree(self._scratch, ignore_errors=True)
        if self._saved is not None:
            remove_tree(self._saved, ignore_errors=True)


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    """The exit status, or ``None`` at the timeout. Waits on a pidfd where there is one: ``Popen.wait``
    with a timeout polls with sleeps of up to 50 ms, which every command would pay on average by half."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        ready = poller.poll(max(0, int(timeout * 1000)))
    finally:
        os.close(pidfd)
    return proc.wait() if ready else None


_OUTPUT_GRACE = 5.0
"""Seconds to wait for the output pipes to close once everything the command started was killed."""


class LocalSandboxFactory(SandboxFactory):
    """Opens :class:`LocalSandbox` instances; ``pid_namespace`` as for :class:`LocalSandbox`."""

    kind: ClassVar[str] = "local"

    def __init__(
        self, *, pid_namespace: bool | None = None, shape: Shape | None = None, interpreters: tuple[str, ...] = ()
    ) -> None:
        """``interpreters``: as for :class:`LocalSandbox` (:meth:`show` finds a task's)."""
        self.pid_namespace = pid_namespace
        self.shape = shape
        self.interpreters = interpreters

    def open(self, host_workspace: Path) -> LocalSandbox:
        return LocalSandbox(
            host_workspace, pid_namespace=self.pid_namespace, shape=self.shape, interpreters=self.interpreters
        )

    def shaped(self, shape: Shape) -> LocalSandboxFactory:
        """Sandboxes whose commands get a developer's variables; the paths, user and host stay this machine's."""
        return LocalSandboxFactory(pid_namespace=self.pid_namespace, shape=shape, interpreters=self.interpreters)

    def show(self, task: TaskSpec) -> LocalSandboxFactory:
        """This factory, joining to the harness the interpreters outside gradeflow's own that ``task``'s commands
        run by path (:func:`~gradeflow.environments.named.named_interpreters`)."""
        interpreters = named_interpreters(task, visible=interpreter_folders())
        return LocalSandboxFactory(pid_namespace=self.pid_namespace, shape=self.shape, interpreters=interpreters)

    def probe(self) -> None:
        """The disks under gradeflow's home and the temp folder have room, and ``true`` runs in a fresh sandbox."""
        check_free_space(cache_dir())
        run_true_in_fresh_sandbox(self, "local sandbox", "sandbox")

    def describe(self) -> SandboxDescription:
        """The facts; also one warning line on stderr (called once per grade): nothing here isolates the code."""
        print(LOCAL_WARNING, file=sys.stderr, flush=True)
        return SandboxDescription(
            sandbox=self.kind,
            architecture=platform.machine(),
            python_version=platform.python_version(),
            python_environment=f"private per sandbox, over {sys.prefix} (view {view_digest()})",
        )


def _like_layers(fixed: Path, stack: tuple[Path, ...]) -> None:
    """Give each file and folder of ``fixed`` the mode and owner of the same path in the topmost of ``stack``: an
    overlay shows a folder with the attributes of its topmost layer, so a folder made here as root (``bin``, holding
    a rewritten script) would keep the layers' owner from writing into it (``pip install`` of a console script)."""
    for current, dirs, files in os.walk(fixed):
        for entry in (*dirs, *files):
            path = Path(current) / entry
            rel = path.relative_to(fixed)
            top = next((layer / rel for layer in reversed(stack) if os.path.lexists(layer / rel)), None)
            if top is None:
                continue
            info = top.lstat()
            path.chmod(info.st_mode & 0o7777)
            if os.geteuid() == 0:
                os.lchown(path, info.st_uid, info.st_gid)
