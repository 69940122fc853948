"""The docker sandbox: every command of a grading step runs in one locked-down container from a pinned image.

:meth:`DockerSandboxFactory.open` creates one container per step, copies the host workspace in (nothing
of the host is mounted), and starts an idle main process owned by another user. Each
:meth:`~DockerSandbox.run` is a ``docker exec`` as the task's user, with a scrubbed environment, in
``/workspace``:

- the container has no network but loopback (unless ``environment.network``), bounded memory (no swap),
  CPU and process count, no capabilities and ``no-new-privileges``;
- ``output_dir`` (``/gradeflow/out``) is emptied before each command, so a report read after ``run``
  was written by that command;
- when a command ends, or its timeout passes, every process of the command user is killed (background
  ones included), so nothing a command left running reaches the next one;
- ``oom_killed`` is read from the container's memory cgroup (``oom_kill`` counter), which also catches
  kills inside a ``docker exec`` that the engine's ``OOMKilled`` flag misses.

Engine failures raise ``SandboxUnavailable``, which the Prefect tasks retry and the flow turns into an
inconclusive grade. :meth:`DockerSandbox.close` removes the container; containers carry the label
:data:`SANDBOX_LABEL`.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any, ClassVar

import docker.errors

from gradeflow.errors import SandboxUnavailable
from gradeflow.models import EnvironmentSpec
from gradeflow.sandbox._docker_engine import (
    DEFAULT_IMAGE,
    ENGINE_ERRORS,
    OWNER_LABEL,
    SANDBOX_LABEL,
    DockerSettings,
    connect,
    probe_image,
    remove_container,
    resolve_image,
)
from gradeflow.sandbox._docker_exec import finish, run_exec
from gradeflow.sandbox._docker_io import harness_archive, is_regular_file, report_bytes, report_mtime, workspace_archive
from gradeflow.sandbox.base import BASE_ENV, CommandResult, Sandbox, SandboxDescription, SandboxFactory

__all__ = [
    "DEFAULT_IMAGE",
    "OWNER_LABEL",
    "SANDBOX_LABEL",
    "DockerSandbox",
    "DockerSandboxFactory",
    "DockerSettings",
]

WORKSPACE = "/workspace"
OUTPUT_DIR = "/gradeflow/out"
HOME_DIR = "/gradeflow/home"
HARNESS_DIR = "/gradeflow/harness"
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_KEEPER = ["sleep", "infinity"]
# Empty the output folder (the command user owns everything in it), enter the workspace, run the command.
_PREPARE = (
    'find "$1" -mindepth 1 -delete 2>/dev/null || { chmod -R u+rwX "$1" && find "$1" -mindepth 1 -delete; } '
    '|| { echo "gradeflow: cannot empty $1" >&2; exit 125; }; cd "$2" || exit 125; exec sh -c "$3"'
)
# Kill every process of the command user (kill -1 spares the caller and PID 1), then read the OOM counter.
_REAP = (
    "kill -9 -1 2>/dev/null; cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events "
    "2>/dev/null; exit 0"
)
_OOM_KILL = re.compile(rb"^oom_kill (\d+)$", re.MULTILINE)
ENGINE_WAIT = 10.0
"""Seconds a factory waits for the engine to answer before ``SandboxUnavailable``."""


class DockerSandbox(Sandbox):
    """One container over a copy of a host workspace; use it as a context manager or call :meth:`close`."""

    workspace = WORKSPACE
    output_dir = OUTPUT_DIR

    def __init__(self, client: Any, settings: DockerSettings, image_id: str, host_workspace: Path) -> None:
        self._client = client
        self._settings = settings
        self._oom_kills = 0
        self._container: Any = self._create(image_id, host_workspace)

    def _create(self, image_id: str, host_workspace: Path) -> Any:
        try:
            container = self._client.containers.create(
                image_id, _KEEPER, user=self._settings.keeper_user, **self._settings.container_options()
            )
        except ENGINE_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot create a container of {image_id[:19]}: {exc}") from None
        settings = self._settings
        try:
            with workspace_archive(
                host_workspace, settings.uid, settings.gid, workspace=WORKSPACE, owned=[WORKSPACE, OUTPUT_DIR, HOME_DIR]
            ) as archive:
                if not container.put_archive("/", archive):
                    raise SandboxUnavailable("the engine refused the workspace archive")
            container.start()
        except BaseException as exc:
            remove_container(container)
            if isinstance(exc, (*ENGINE_ERRORS, OSError)):
                raise SandboxUnavailable(f"docker sandbox: cannot start over {host_workspace}: {exc}") from None
            raise
        return container

    def _live(self) -> Any:
        if self._container is None:
            raise SandboxUnavailable("docker sandbox: used after close()")
        return self._container

    def run(self, command: str, *, env: dict[str, str], timeout: float) -> CommandResult:
        """Run ``command`` with ``sh -c`` in ``/workspace``; see the module docstring for what is enforced."""
        container = self._live()
        argv = ["sh", "-c", _PREPARE, "gradeflow", OUTPUT_DIR, WORKSPACE, command]
        environment = {**BASE_ENV, "PATH": _PATH, "HOME": HOME_DIR, "TMPDIR": "/tmp", **env}
        try:
            pending, reader = run_exec(
                self._client.api, container.id, argv, user=self._settings.user, env=environment, timeout=timeout
            )
            oom_killed = self._reap(container)
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
        )

    def _reap(self, container: Any) -> bool:
        """Kill what the last command left running; whether the memory cgroup killed a process meanwhile."""
        exit_code, output = container.exec_run(["sh", "-c", _REAP], user=self._settings.user)
        found = _OOM_KILL.search(output or b"")
        if exit_code != 0 or found is None:
            raise SandboxUnavailable(
                f"docker sandbox: cannot clean up after a command (exit {exit_code}): {(output or b'')[-200:]!r}"
            )
        kills = int(found.group(1))
        oom_killed, self._oom_kills = kills > self._oom_kills, kills
        return oom_killed

    def read_output(self, name: str, max_bytes: int) -> tuple[bytes, float] | None:
        """The bytes and mtime of a regular file ``output_dir/name``; links and folders count as absent."""
        container = self._live()
        try:
            chunks, stat = container.get_archive(self.output_path(name))
            if not is_regular_file(stat):
                return None
            if int(stat["size"]) > max_bytes:
                raise ValueError(f"{name} is {stat['size']} bytes, over the {max_bytes}-byte cap")
            data = report_bytes(chunks, max_bytes)
        except docker.errors.NotFound:
            return None
        except ENGINE_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot read {self.output_path(name)}: {exc}") from None
        return None if data is None else (data, report_mtime(stat))

    def install_harness(self, files: dict[str, bytes]) -> str:
        """Copy ``files`` into ``/gradeflow/harness``, owned by root: commands read them, never change them."""
        container = self._live()
        try:
            with harness_archive(HARNESS_DIR, files) as archive:
                if not container.put_archive("/", archive):
                    raise SandboxUnavailable("the engine refused the harness archive")
        except ENGINE_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot copy the harness in: {exc}") from None
        return HARNESS_DIR

    def close(self) -> None:
        """Remove the container and everything in it. Idempotent; a failed removal is logged."""
        container, self._container = self._container, None
        if container is not None:
            remove_container(container)


class DockerSandboxFactory(SandboxFactory):
    """Opens :class:`DockerSandbox` instances from one image, resolved to its id once per factory.

    Creating a factory checks the settings only (``SpecError`` for a bad user or memory size); the
    engine is first contacted by :meth:`describe` or :meth:`open`.
    """

    kind: ClassVar[str] = "docker"

    def __init__(self, environment: EnvironmentSpec | None = None, *, engine_wait: float = ENGINE_WAIT) -> None:
        self.settings = DockerSettings.from_environment(environment or EnvironmentSpec(sandbox="docker"))
        self.engine_wait = engine_wait
        self._client: Any = None
        self._image_id: str | None = None
        self._lock = threading.Lock()

    def _connected(self) -> tuple[Any, str]:
        with self._lock:
            if self._client is None:
                self._client = connect(self.engine_wait)
            if self._image_id is None:
                self._image_id = resolve_image(self._client, self.settings.image)
            return self._client, self._image_id

    def open(self, host_workspace: Path) -> DockerSandbox:
        client, image_id = self._connected()
        return DockerSandbox(client, self.settings, image_id, host_workspace)

    def describe(self) -> SandboxDescription:
        """The image name and id, and the architecture and Python version inside it."""
        client, image_id = self._connected()
        machine, python_version = probe_image(client, image_id, self.settings)
        return SandboxDescription(
            sandbox=self.kind,
            image=self.settings.image,
            image_id=image_id,
            architecture=machine,
            python_version=python_version,
        )
