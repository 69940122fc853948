"""The docker sandbox: every command of a grading step runs in one locked-down container from a pinned image.

:meth:`DockerSandboxFactory.open` creates one container per step, copies the host workspace in (nothing
of the host is mounted), and starts a keeper as its main process: root with only ``CAP_KILL``, idle
until signalled to kill the command user's processes. Each
:meth:`~DockerSandbox.run` is a ``docker exec`` as the task's user, with a scrubbed environment, in
``/workspace``:

- the container has no network but loopback (unless ``environment.network``), bounded memory (no swap),
  CPU and process count, no capability but the keeper's ``CAP_KILL``, and ``no-new-privileges``;
- ``output_dir`` (``/run/reports``) is emptied before each command, so a report read after ``run``
  was written by that command;
- when a command ends, or its timeout passes, every process of the command user is killed (background
  ones included), so nothing a command left running reaches the next one. When no process can start
  (a fork bomb filled the pids limit), the engine signals the keeper, which kills them without forking,
  and waits for the keeper to say it is done (its output: a keeper scheduled late would otherwise kill the
  next command's processes, as it did on a loaded machine); when even that fails, the engine kills the
  whole container and the command raises ``SandboxBroken``;
- ``oom_killed`` is read from the container's memory cgroup (``oom_kill`` counter), which also catches
  kills inside a ``docker exec`` that the engine's ``OOMKilled`` flag misses;
- ``cpu_throttled`` and ``cpu_seconds`` come from the container's cpu cgroup counters, read before and after
  the command (:mod:`gradeflow.sandbox._docker_cpu`: a file read or two where this host has the container's
  cgroup, else the engine's stats; ``False``/``None`` where neither answers).

Engine failures raise ``SandboxUnavailable``, which the Prefect tasks retry and the flow turns into an
inconclusive grade unless :meth:`DockerSandboxFactory.probe` shows that a fresh container works (then the
candidate broke its own). :meth:`DockerSandbox.close` removes the container; containers carry the label
:data:`SANDBOX_LABEL`.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import re
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any, ClassVar

import docker
import docker.errors

from gradeflow.config import cache_dir
from gradeflow.errors import SandboxBroken, SandboxUnavailable, SpecError
from gradeflow.models import EnvironmentSpec
from gradeflow.sandbox._docker_cpu import CpuMeter, command_cpu, cpu_meter
from gradeflow.sandbox._docker_disk import DF_COMMAND, disk_events, folders_full, start_watcher
from gradeflow.sandbox._docker_engine import (
    DEFAULT_IMAGE,
    ENGINE_ERRORS,
    HARNESS_DIR,
    HOME_DIR,
    OUTPUT_DIR,
    OWNER_LABEL,
    SANDBOX_LABEL,
    WORKSPACE,
    DockerSettings,
    connect,
    probe_image,
    remove_container,
    resolve_image,
)
from gradeflow.sandbox._docker_exec import finish, run_exec
from gradeflow.sandbox._docker_files import get_file, get_tree, put_tree
from gradeflow.sandbox._docker_io import harness_archive, owned_copy, tree_archive
from gradeflow.sandbox._docker_layers import HomeUpper, engine_sees_host
from gradeflow.sandbox._docker_site import harness_site_image
from gradeflow.sandbox.base import (
    BASE_ENV,
    CommandResult,
    Sandbox,
    SandboxDescription,
    SandboxFactory,
    check_free_space,
    run_true_in_fresh_sandbox,
)
from gradeflow.sandbox.shape import Shape

__all__ = [
    "DEFAULT_IMAGE",
    "OWNER_LABEL",
    "SANDBOX_LABEL",
    "DockerSandbox",
    "DockerSandboxFactory",
    "DockerSettings",
]

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The container's main process (under docker-init, which forwards signals to it): root with only CAP_KILL,
# idle until the engine sends it SIGUSR1, then it kills every process of the command user, round after
# round until none is left, and writes how many times it has done so to its output (the container's log,
# which the engine reads without starting a process). A signal needs no new process, so this works when a
# fork bomb has taken every pid the limit allows and no exec can start.
_KEEPER_CODE = """
import os, signal, sys
uid = int(sys.argv[1])
done = 0
def reap(*_):
    global done
    for _ in range(200):
        found = False
        for name in os.listdir("/proc"):
            try:
                if name.isdigit() and int(name) != os.getpid() and os.stat("/proc/" + name).st_uid == uid:
                    os.kill(int(name), signal.SIGKILL)
                    found = True
            except OSError:
                pass
        if not found:
            break
    done += 1
    os.write(1, b"reaped %d\\n" % done)
signal.signal(signal.SIGUSR1, reap)
os.write(1, b"reaped 0\\n")
while True:
    signal.pause()
"""
# An image without Python keeps an idle main process instead; the reaper's own rounds then stand alone.
_KEEPER_START = 'command -v python3 >/dev/null && exec python3 -c "$0" "$1"; exec sleep infinity'
_REAP_TRIES = 8
_REAP_PAUSE = 0.25
_KEEPER_WAIT = 10.0
"""Seconds :func:`keeper_reap` waits for the keeper to say it has finished a round."""
_KEEPER_SAID = re.compile(rb"reaped (\d+)\n")
# Empty the output folder (the command user owns everything in it), enter the workspace, run the command.
_PREPARE = (
    'find "$1" -mindepth 1 -delete 2>/dev/null || { chmod -R u+rwX "$1" && find "$1" -mindepth 1 -delete; } '
    '|| { echo "gradeflow: cannot empty $1" >&2; exit 125; }; cd "$2" || exit 125; exec sh -c "$3"'
)
# Kill every process of the command user (kill -1 spares the caller and PID 1) until none is left (a
# process forking while the others die survives one round), then read the OOM counter and the disk's state.
_REAP = (
    "i=0; while kill -9 -1 2>/dev/null && [ $i -lt 50 ]; do i=$((i+1)); done; "
    f"cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null; {DF_COMMAND}; exit 0"
)
_OOM_KILL = re.compile(rb"^oom_kill (\d+)$", re.MULTILINE)
_IMPORT_ERRORS: tuple[type[Exception], ...] = (*ENGINE_ERRORS, OSError, tarfile.TarError)
ENGINE_WAIT = 10.0
"""Seconds a factory waits for the engine to answer before ``SandboxUnavailable``."""


def _main_process_said(container: Any) -> str:
    """The last lines the container's main process wrote (why a keeper that exited at once did), for an error."""
    try:
        tail = container.logs(stdout=True, stderr=True, tail=3).decode(errors="replace").strip()
    except ENGINE_ERRORS:
        return ""
    return (
        f" (its main process said: {tail[-300:]!r})"
        if tail and not _KEEPER_SAID.fullmatch(tail.encode() + b"\n")
        else ""
    )


def keeper_reap(container: Any, finished: int) -> int:
    """Signal the keeper to kill the command user's processes and wait (up to :data:`_KEEPER_WAIT`) until it says
    it finished a round past ``finished``: the count it last said, which is returned. Returns at once when the
    keeper cannot be signalled or says nothing (an image without Python keeps ``sleep``, which never answers).

    Waiting matters: the keeper takes the signal when it is next scheduled, and a round begun after the next
    command started would kill that command's processes (seen on a loaded machine as a pytest killed mid-run).
    """
    try:
        container.kill(signal="SIGUSR1")
    except ENGINE_ERRORS:
        return finished
    deadline = time.monotonic() + _KEEPER_WAIT
    while True:
        try:
            said = _KEEPER_SAID.findall(container.logs(stdout=True, stderr=False, tail=2))
        except ENGINE_ERRORS:
            return finished
        if not said or int(said[-1]) > finished or time.monotonic() > deadline:
            return int(said[-1]) if said else finished
        time.sleep(0.02)


class DockerSandbox(Sandbox):
    """One container over a copy of a host workspace; use it as a context manager or call :meth:`close`."""

    workspace = WORKSPACE
    output_dir = OUTPUT_DIR

    def __init__(
        self, client: Any, settings: DockerSettings, image_id: str, host_workspace: Path, shape: Shape | None = None
    ) -> None:
        """``shape``: the container's host name and the commands' variables a developer's (see
        :mod:`gradeflow.sandbox.shape`); the user and paths stay the image's."""
        self._shape = shape
        self._client = client
        self._settings = settings
        self._oom_kills = 0
        self._disk_events = 0
        self._keeper_reaps = 0
        """How many rounds the keeper has said it finished (:func:`keeper_reap`)."""
        self._no_room: str | None = None
        """Why the workspace did not fit in ``environment.disk``; then every command is ``disk_full``."""
        self._broken: str | None = None
        self._image_id = image_id
        self._host_workspace = host_workspace
        self._saved_home: Path | None = None
        self._home_layer: Path | None = None
        """The host folder under ``HOME`` (``None``: ``HOME`` is a tmpfs): :meth:`mount_environment`."""
        self._home_upper: HomeUpper | None = None
        self._container: Any = self._create(image_id, host_workspace)

    def _create(self, image_id: str, host_workspace: Path) -> Any:
        try:
            container = self._client.containers.create(
                image_id,
                ["sh", "-c", _KEEPER_START, _KEEPER_CODE, str(self._settings.uid)],
                user="0:0",
                **self._container_options(),
                **({} if self._shape is None else {"hostname": self._shape.hostname}),
            )
        except ENGINE_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot create a container of {image_id[:19]}: {exc}") from None
        try:
            container.start()
            start_watcher(self._client.api, container.id, self._settings.keeper_user)
            with tree_archive(host_workspace) as archive:
                self._put(container, WORKSPACE, archive)
            self._meter: CpuMeter = cpu_meter(self._client.api, container.id)
        except BaseException as exc:
            said = _main_process_said(container)
            remove_container(container)
            if isinstance(exc, (*ENGINE_ERRORS, OSError)):
                raise SandboxUnavailable(f"docker sandbox: cannot start over {host_workspace}: {exc}{said}") from None
            raise
        return container

    def _container_options(self) -> dict[str, Any]:
        """Keyword arguments of ``containers.create`` beyond the image, the command and the user: with a ``home``
        layer, ``HOME`` is the engine's overlay of it under a fresh tmpfs of this container's own."""
        options = self._settings.container_options()
        if self._home_layer is None:
            return options
        self._drop_home_upper()
        self._home_upper = HomeUpper(self._settings.disk, self._settings.uid, self._settings.gid)
        options["tmpfs"] = {k: v for k, v in options["tmpfs"].items() if k != HOME_DIR}
        options["mounts"] = [self._home_upper.mount(HOME_DIR, self._home_layer)]
        return options

    def _drop_home_upper(self) -> None:
        upper, self._home_upper = self._home_upper, None
        if upper is not None:
            upper.close()

    def _path(self) -> str:
        """``PATH`` of every command (the task's ``env`` may override it)."""
        return _PATH

    def _put(self, container: Any, folder: str, archive: IO[bytes], *, clear: bool = False) -> None:
        """Extract ``archive`` into ``folder`` (emptied first with ``clear``) as the command user; a tree
        that does not fit is remembered."""
        if not put_tree(self._client.api, container.id, folder, archive, user=self._settings.user, clear=clear):
            self._no_room = (
                f"gradeflow: the files for {folder} do not fit in environment.disk ({self._settings.disk} bytes)"
            )

    def _live(self) -> Any:
        if self._container is None:
            raise SandboxUnavailable("docker sandbox: used after close()")
        return self._container

    def run(self, command: str, *, env: dict[str, str], timeout: float, stdin: bytes | None = None) -> CommandResult:
        """Run ``command`` with ``sh -c`` in ``/workspace``; see the module docstring for what is enforced.

        ``SandboxBroken`` when the processes a command left cannot be reaped: the container is killed,
        and every later command of this sandbox raises the same.
        """
        container = self._live()
        if self._broken is not None:
            raise SandboxBroken(self._broken)
        if self._no_room is not None:
            return CommandResult(command=command, exit_code=125, stderr=self._no_room, disk_full=True)
        argv = ["sh", "-c", _PREPARE, "sh", OUTPUT_DIR, WORKSPACE, command]
        own = {**BASE_ENV, "PATH": self._path(), "HOME": HOME_DIR, "TMPDIR": "/tmp"}
        environment = {**own, **env} if self._shape is None else self._shape.variables(own, env)
        try:
            before = self._meter.read()
            pending, reader = run_exec(
                self._client.api,
                container.id,
                argv,
                user=self._settings.user,
                env=environment,
                timeout=timeout,
                stdin=stdin,
            )
            cpu_throttled, cpu_seconds = command_cpu(before, self._meter.read())
            oom_killed, disk_full = self._reap(container, command)
            outcome = finish(pending, reader)
        except ENGINE_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot run {command!r}: {exc}") from None
        return CommandResult(
            command=command,
            exit_code=outcome.exit_code,
            stdout=outcome.stdout,
            stderr=outcome.stderr,
            duration=outcome.duration,
            timed_out=outcome.timed_out,
            oom_killed=oom_killed,
            disk_full=disk_full,
            cpu_throttled=cpu_throttled,
            cpu_seconds=cpu_seconds,
            stdout_bytes=outcome.stdout_bytes,
        )

    def _reap(self, container: Any, command: str) -> tuple[bool, bool]:
        """Kill what the last command left running; whether memory ran out meanwhile, and whether disk did.

        When the reaper cannot start (a fork bomb holds every pid), the keeper is signalled to kill the
        command user's processes and the reaper is tried again. When it still fails, the engine kills the
        whole container from outside and ``SandboxBroken`` is raised.
        """
        exit_code, output, found = self._reaper_output(container)
        if exit_code != 0 or found is None:
            tail = (output or b"").decode(errors="replace").strip()[-160:]
            self._broken = (
                f"docker sandbox: the processes {command!r} left behind could not be reaped "
                f"(exit {exit_code}: {tail!r}); the container was killed"
            )
            with contextlib.suppress(*ENGINE_ERRORS):
                container.kill()
            raise SandboxBroken(self._broken)
        kills = int(found.group(1))
        oom_killed, self._oom_kills = kills > self._oom_kills, kills
        events = disk_events(output)
        filled = events is not None and events > self._disk_events
        self._disk_events = events if events is not None else self._disk_events
        return oom_killed, filled or bool(folders_full(output))

    def _reaper_output(self, container: Any) -> tuple[int | None, bytes, re.Match[bytes] | None]:
        """The reaper's exit code, output and OOM counter line, after up to :data:`_REAP_TRIES` tries."""
        exit_code: int | None = None
        output = b""
        for attempt in range(_REAP_TRIES):
            if attempt:  # the reaper could not start, or not kill them all: the keeper kills them
                self._keeper_reaps = keeper_reap(container, self._keeper_reaps)
                time.sleep(_REAP_PAUSE * attempt)
            try:
                exit_code, output = container.exec_run(["sh", "-c", _REAP], user=self._settings.user)
            except docker.errors.APIError as exc:  # the engine answered: the container refused the exec
                exit_code, output = None, str(exc).encode(errors="replace")
            found = _OOM_KILL.search(output or b"")
            if exit_code == 0 and found is not None:
                return exit_code, output, found
        return exit_code, output or b"", None

    def read_output(self, name: str, max_bytes: int) -> tuple[bytes, float] | None:
        """The bytes and mtime of a regular file ``output_dir/name``; links and folders count as absent."""
        container = self._live()
        try:
            return get_file(self._client.api, container.id, self.output_path(name), max_bytes, user=self._settings.user)
        except ENGINE_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot read {self.output_path(name)}: {exc}") from None

    def install_harness(self, files: dict[str, bytes]) -> str:
        """Copy ``files`` into ``/opt/pylib``, owned by root: commands read them, never change them."""
        container = self._live()
        try:
            with harness_archive(files) as archive:
                if not put_tree(self._client.api, container.id, HARNESS_DIR, archive, user="0:0", clear=True):
                    raise SandboxUnavailable(f"docker sandbox: the harness does not fit in {HARNESS_DIR}")
        except ENGINE_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot copy the harness in: {exc}") from None
        return HARNESS_DIR

    def environment_roots(self) -> dict[str, str]:
        return {"home": HOME_DIR}

    def export_environment(self, folder: Path) -> None:
        container = self._live()
        try:
            with (folder / "home.tar").open("wb") as out:
                get_tree(self._client.api, container.id, HOME_DIR, out, user=self._settings.user)
        except ENGINE_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot copy {HOME_DIR} out: {exc}") from None

    def import_environment(self, folder: Path) -> None:
        if not (folder / "home.tar").is_file():
            return
        container = self._live()
        try:
            with owned_copy(folder / "home.tar", self._settings.uid, self._settings.gid) as tree:
                self._put(container, HOME_DIR, tree, clear=True)
        except _IMPORT_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot copy {HOME_DIR} in: {exc}") from None

    @property
    def mounts_layers(self) -> bool:
        """Where the engine runs on this machine and gradeflow is root (:mod:`gradeflow.sandbox._docker_layers`)."""
        return engine_sees_host(self._client, self._image_id)

    def layer_owner(self, drawn: int) -> int:
        """The command user: ``HOME``'s layer lies under its writes, in folders it must be able to write."""
        del drawn
        return self._settings.uid

    def mount_environment(
        self, layers: dict[str, tuple[Path, ...]], fixes: dict[str, dict[str, bytes]], owner: int
    ) -> None:
        """A new container whose ``HOME`` shows ``layers['home']`` (shared, read-only, never copied) under the
        commands' writes, in a tmpfs of ``environment.disk`` bytes of its own. The container's paths are those
        setup ran with, so nothing needs rewriting (``fixes``); one layer per root (no :attr:`stacks_layers`)."""
        del owner  # the layers belong to the command user (layer_owner), as setup's files did
        if any(fixes.values()) or any(len(stack) != 1 for stack in layers.values()):
            raise SandboxUnavailable("docker sandbox: setup's environment names paths this container does not have")
        self._home_layer = layers["home"][0] if "home" in layers else None
        self._made_again()

    def _made_again(self) -> None:
        """The container replaced by a fresh one over the workspace it started with (see the subclasses)."""
        old, self._container = self._container, None
        if old is not None:
            remove_container(old)
        self._container = self._create(self._image_id, self._host_workspace)

    def export_workspace(self, archive: Path, max_bytes: int | None = None) -> None:
        """Copy ``/workspace`` out to ``archive``, and ``HOME`` (unless mounted from the environment's layer:
        :meth:`import_workspace` drops the writes over it) to a host file kept for :meth:`import_workspace`."""
        container = self._live()
        parts = [(WORKSPACE, archive)]
        if self._home_layer is None:
            if self._saved_home is None:
                handle, name = tempfile.mkstemp(prefix="gradeflow-home-", suffix=".tar")
                os.close(handle)
                self._saved_home = Path(name)
            parts.append((HOME_DIR, self._saved_home))
        try:
            for source, target in parts:
                with target.open("wb") as out:
                    get_tree(self._client.api, container.id, source, out, user=self._settings.user, max_bytes=max_bytes)
        except ENGINE_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot copy the workspace out: {exc}") from None

    def import_workspace(self, archive: Path) -> None:
        """Replace the container by a fresh one: ``archive`` in ``/workspace``, ``HOME`` as last exported."""
        old, self._container = self._container, None
        if old is not None:
            remove_container(old)
        self._oom_kills = self._disk_events = self._keeper_reaps = 0
        self._no_room = None
        with tempfile.TemporaryDirectory(prefix="gradeflow-empty-") as empty:
            self._container = self._create(self._image_id, Path(empty))
        parts = [(WORKSPACE, archive)]
        if self._saved_home is not None and self._home_layer is None:
            parts.append((HOME_DIR, self._saved_home))
        try:
            for folder, source in parts:
                with owned_copy(source, self._settings.uid, self._settings.gid) as tree:
                    self._put(self._container, folder, tree)
        except _IMPORT_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot copy the workspace in: {exc}") from None

    def close(self) -> None:
        """Remove the container and everything in it. Idempotent; a failed removal is logged."""
        container, self._container = self._container, None
        if container is not None:
            remove_container(container)
        self._drop_home_upper()
        if self._saved_home is not None:
            self._saved_home.unlink(missing_ok=True)


class DockerSandboxFactory(SandboxFactory):
    """Opens :class:`DockerSandbox` instances from one image, resolved to its id once per factory (a ``debian:``
    root's image: :class:`~gradeflow.sandbox._docker_on_root.DockerRootSandboxFactory`).

    Creating a factory checks the settings only (``SpecError`` for a bad user or memory size); the
    engine is first contacted by :meth:`describe` or :meth:`open`.
    """

    kind: ClassVar[str] = "docker"

    def __init__(self, environment: EnvironmentSpec | None = None, *, engine_wait: float = ENGINE_WAIT) -> None:
        environment = environment or EnvironmentSpec(sandbox="docker")
        if environment.root.startswith("debian:") and not self.runs_roots:
            raise SpecError(f"environment.root {environment.root}: make the docker sandbox with sandbox_factory")
        self.settings = DockerSettings.from_environment(environment)
        self.engine_wait = engine_wait
        self._client: Any = None
        self._image_id: str | None = None
        self._image_name = self.settings.image
        """The image's name as the fingerprint records it."""
        self._run_image: str | None = None
        self._lock = threading.Lock()
        self.shape: Shape | None = None

    runs_roots: ClassVar[bool] = False
    """Whether the factory runs a ``debian:`` root's image (:mod:`gradeflow.sandbox._docker_on_root`)."""

    def _connected(self) -> tuple[Any, str]:
        with self._lock:
            if self._client is None:
                self._client = connect(self.engine_wait)
            image_id = self._resolve_image(self._client)
            if image_id != self._image_id:
                self._image_id, self._run_image = image_id, None
            return self._client, image_id

    def _resolve_image(self, client: Any) -> str:
        """The id of the image the containers run (called under the factory's lock)."""
        return self._image_id or resolve_image(client, self.settings.image)

    def _sandbox(self, client: Any, image_id: str, host_workspace: Path) -> DockerSandbox:
        return DockerSandbox(client, self.settings, image_id, host_workspace, self.shape)

    def open(self, host_workspace: Path) -> DockerSandbox:
        """A sandbox over a copy of ``host_workspace``, its container of the image with the harness's site file
        (see :mod:`gradeflow.sandbox._docker_site`)."""
        client, image_id = self._connected()
        with self._lock:
            if self._run_image is None:
                self._run_image = harness_site_image(client, image_id, self._image_name)
            run_image = self._run_image
        return self._sandbox(client, run_image, host_workspace)

    def with_network(self) -> DockerSandboxFactory:
        factory = copy.copy(self)
        factory.settings = dataclasses.replace(self.settings, network=True)
        factory._lock = threading.Lock()
        return factory

    def shaped(self, shape: Shape) -> DockerSandboxFactory:
        """Sandboxes whose containers have ``shape``'s host name and whose commands a developer's variables."""
        factory = copy.copy(self)
        factory.shape = shape
        return factory

    def probe(self) -> None:
        """The engine answers a ping, a fresh container of the image runs ``true``, the host disks have room."""
        check_free_space(cache_dir())
        client, _ = self._connected()
        try:
            client.ping()
        except ENGINE_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: the engine does not answer a ping: {exc}") from None
        run_true_in_fresh_sandbox(self, "docker sandbox", "container")

    def check_limits(self, where: str) -> None:
        """``environment.cpus`` at most the engine's CPUs, when the engine answers within a few seconds."""
        unanswered: tuple[type[Exception], ...] = (*ENGINE_ERRORS, KeyError, ValueError)
        try:
            client = docker.from_env(timeout=5)
            try:
                available = int(client.info()["NCPU"])
            finally:
                client.close()
        except unanswered:
            return
        cpus = self.settings.nano_cpus / 1e9
        if cpus > available:
            raise SpecError(
                f"environment.cpus: {cpus:g} is more than the {available} CPUs of the docker engine ({where})"
            )

    def describe(self) -> SandboxDescription:
        """The image name and id, and the architecture and Python version inside it."""
        client, image_id = self._connected()
        machine, python_version = probe_image(client, image_id, self.settings)
        return SandboxDescription(
            sandbox=self.kind,
            image=self._image_name,
            image_id=image_id,
            architecture=machine,
            python_version=python_version,
        )
