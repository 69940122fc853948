"""The docker sandbox's settings and its link to the engine: connecting, resolving and probing the image."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors
import requests
import structlog

from gradeflow.errors import SandboxUnavailable, SpecError
from gradeflow.models import EnvironmentSpec
from gradeflow.sandbox.base import DEFAULT_DISK, default_disk, numeric_user

__all__ = [
    "DEFAULT_IMAGE",
    "ENGINE_ERRORS",
    "OWNER_LABEL",
    "SANDBOX_LABEL",
    "DockerSettings",
    "connect",
    "probe_image",
    "remove_container",
    "resolve_image",
]

DEFAULT_IMAGE = "gradeflow-python:bookworm"
"""The image used when ``environment.image`` is not set; ``scripts/build-image.sh`` builds it."""
SANDBOX_LABEL = "org.gradeflow.sandbox"
"""Label on every container gradeflow creates (``docker ps -a --filter label=org.gradeflow.sandbox``)."""
OWNER_LABEL = "org.gradeflow.pid"
"""Label holding the id of the process that created the container (to find what a killed grader left)."""
ENGINE_ERRORS: tuple[type[Exception], ...] = (
    docker.errors.DockerException,
    requests.exceptions.RequestException,
)
"""What a failing or unreachable engine raises through the SDK."""
API_TIMEOUT = 60
WORKSPACE = "/workspace"
# The container's own folders, named as a developer's machine might have them: nothing the code under test sees says
# gradeflow (tests/sandbox/test_docker_plain.py). HOME is the home /etc/passwd gives the images' user (grader).
OUTPUT_DIR = "/run/reports"
HOME_DIR = "/home/grader"
HARNESS_DIR = "/opt/pylib"
WATCH_DIR = "/run/disk"
WRITABLE = (WORKSPACE, OUTPUT_DIR, HOME_DIR, "/tmp", "/var/tmp")
"""The folders a command may write, each a tmpfs of ``environment.disk`` bytes."""
_HARNESS_BYTES = 16 * 1024 * 1024
_WATCH_BYTES = 64 * 1024
_NOBODY = 65534
_PROBE = "import json, platform; print(json.dumps([platform.machine(), platform.python_version()]))"
_probed: dict[str, tuple[str, str]] = {}
_probe_lock = threading.Lock()
_log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class DockerSettings:
    """Container limits and identity, from a task's ``environment``."""

    image: str
    network: bool
    memory: int
    """Bytes of memory (swap included: no swap beyond it)."""
    nano_cpus: int
    pids: int
    uid: int
    gid: int
    disk: int = DEFAULT_DISK
    """Bytes each writable tmpfs folder may hold (``environment.disk``), below ``memory``."""

    @classmethod
    def from_environment(cls, environment: EnvironmentSpec) -> DockerSettings:
        """The settings for ``environment``; ``SpecError`` for a non-numeric user or a bad memory size."""
        try:
            memory = int(docker.utils.parse_bytes(environment.memory))
        except docker.errors.DockerException as exc:
            raise SpecError(f"environment.memory: {environment.memory!r} is not a size like '2g' ({exc})") from None
        disk = _disk(environment, memory)
        uid, gid = numeric_user(environment, "docker")
        return cls(
            image=environment.image or _root_image(environment.root) or DEFAULT_IMAGE,
            network=environment.network,
            memory=memory,
            nano_cpus=int(environment.cpus * 1e9),
            pids=environment.pids,
            uid=uid,
            gid=gid,
            disk=disk,
        )

    @property
    def user(self) -> str:
        """The ``uid:gid`` every command runs as."""
        return f"{self.uid}:{self.gid}"

    @property
    def keeper_user(self) -> str:
        """Another user for the disk watcher, so that commands cannot kill it."""
        other = _NOBODY if self.uid != _NOBODY else _NOBODY - 1
        return f"{other}:{other}"

    def container_options(self) -> dict[str, Any]:
        """Keyword arguments of ``containers.create`` that enforce the limits and drop every privilege."""
        return {
            "network_mode": "bridge" if self.network else "none",
            "mem_limit": self.memory,
            "memswap_limit": self.memory,
            "nano_cpus": self.nano_cpus,
            "pids_limit": self.pids,
            "cap_drop": ["ALL"],
            # Only the root-owned keeper can use it (commands run as another user with no-new-privileges):
            # it lets the keeper kill a fork bomb's processes when no exec can start.
            "cap_add": ["KILL"],
            "security_opt": ["no-new-privileges"],
            "labels": {SANDBOX_LABEL: "docker", OWNER_LABEL: str(os.getpid())},
            "init": True,
            "read_only": True,
            "tmpfs": self.tmpfs(),
        }

    def tmpfs(self) -> dict[str, str]:
        """The container's only writable folders: tmpfs mounts of at most :attr:`disk` bytes each.

        overlay2 on ext4 has no per-container quota, so a write to the image's file system would land on
        the host's disk unbounded: the root file system is read-only instead. The harness folder is
        root's; the watch folder belongs to the keeper, whose watcher records when a folder filled up.
        """
        owned = f"size={self.disk},uid={self.uid},gid={self.gid},mode=0755,exec"
        shared = f"size={self.disk},mode=1777,exec"
        keeper = self.keeper_user.split(":")[0]
        return {
            WORKSPACE: owned,
            OUTPUT_DIR: owned,
            HOME_DIR: owned,
            "/tmp": shared,
            "/var/tmp": shared,
            HARNESS_DIR: f"size={_HARNESS_BYTES},mode=0755",
            WATCH_DIR: f"size={_WATCH_BYTES},uid={keeper},gid={keeper},mode=0755",
        }


def _disk(environment: EnvironmentSpec, memory: int) -> int:
    """Bytes of ``environment.disk`` (default :data:`DEFAULT_DISK` or half of memory); below ``memory``."""
    if environment.disk is None:
        return default_disk(memory)
    try:
        disk = int(docker.utils.parse_bytes(environment.disk))
    except docker.errors.DockerException as exc:
        raise SpecError(f"environment.disk: {environment.disk!r} is not a size like '1g' ({exc})") from None
    if disk >= memory:
        raise SpecError(
            f"environment.disk: {environment.disk!r} must be below environment.memory ({environment.memory!r}): "
            "the container's files live in memory (tmpfs), so a full disk would be an out-of-memory kill"
        )
    return disk


def connect(wait: float) -> Any:
    """A client of the engine named by ``DOCKER_HOST`` (or the default socket), waiting up to ``wait`` s.

    The API version is negotiated with the engine. ``SandboxUnavailable`` when no engine answers in time.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            client = docker.from_env(timeout=API_TIMEOUT)
            client.ping()
            return client
        except ENGINE_ERRORS as exc:
            if time.monotonic() >= deadline:
                where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
                raise SandboxUnavailable(
                    f"docker engine at {where} did not answer within {wait:.0f} s ({exc}); "
                    "start one (scripts/start-dockerd.sh) or grade with --sandbox local"
                ) from None
            time.sleep(0.5)


def resolve_image(client: Any, image: str) -> str:
    """The id (``sha256:...``) of ``image`` on the engine; ``SandboxUnavailable`` when it is not there."""
    try:
        return str(client.images.get(image).id)
    except docker.errors.ImageNotFound:
        raise SandboxUnavailable(
            f"docker image {image!r} is not on this engine: build it with scripts/build-image.sh "
            f"(makes {DEFAULT_IMAGE}) or set environment.image to an image you have"
        ) from None
    except ENGINE_ERRORS as exc:
        raise SandboxUnavailable(f"docker image {image!r} cannot be inspected: {exc}") from None


def probe_image(client: Any, image_id: str, settings: DockerSettings) -> tuple[str, str]:
    """(architecture, python version) inside the image, asked once per image id in this process.

    An image id names immutable content, so the answer never goes stale. ``SandboxUnavailable`` when the
    probe cannot run or the image has no ``python3``.
    """
    with _probe_lock:
        if image_id not in _probed:
            _probed[image_id] = _run_probe(client, image_id, settings)
        return _probed[image_id]


def _run_probe(client: Any, image_id: str, settings: DockerSettings) -> tuple[str, str]:
    container = None
    try:
        container = client.containers.create(
            image_id,
            ["python3", "-c", _PROBE],
            user=settings.user,
            **{**settings.container_options(), "network_mode": "none"},
        )
        container.start()
        status = container.wait(timeout=API_TIMEOUT)["StatusCode"]
        output = bytes(container.logs(stdout=True, stderr=True)).decode(errors="replace")
    except ENGINE_ERRORS as exc:
        raise SandboxUnavailable(f"docker image {settings.image!r} cannot be probed: {exc}") from None
    finally:
        if container is not None:
            remove_container(container)
    try:
        if status != 0:
            raise ValueError(f"exit code {status}")
        machine, version = json.loads(output.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise SandboxUnavailable(
            f"docker image {settings.image!r} cannot run python3 as {settings.user} ({exc}): {output[-300:]!r}"
        ) from None
    return str(machine), str(version)


def remove_container(container: Any) -> None:
    """Force-remove ``container`` (and its anonymous volumes); a failure is logged, never raised."""
    try:
        container.remove(force=True, v=True)
    except docker.errors.NotFound:
        pass
    except ENGINE_ERRORS as exc:
        _log.warning(
            "docker-container-not-removed",
            container=str(container.id)[:12],
            error=str(exc),
            hint=f"docker rm -f $(docker ps -aq --filter label={SANDBOX_LABEL})",
        )


def _root_image(root: str) -> str | None:
    """The image ``environment.root`` names (``docker:<image>``), which the docker sandbox runs itself."""
    return root.removeprefix("docker:") if root.startswith("docker:") else None
