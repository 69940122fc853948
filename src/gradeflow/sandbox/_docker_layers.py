"""A container's ``HOME`` over what the task's ``setup`` built there, shared, without a copy per container.

The engine mounts an overlay for the container (a volume of its ``local`` driver with ``type=overlay``): the
environment's ``home`` layer (unpacked once per baseline on this host, read-only, never written) under the
commands' writes, which land in a tmpfs of ``environment.disk`` bytes gradeflow mounts on the host for that
container alone (:class:`HomeUpper`), so ``HOME`` stays bounded as the tmpfs it replaces was, and the disk
watcher's ``statvfs`` reads that tmpfs's room.

Both need the engine on this machine (the layer and the tmpfs are host folders) and gradeflow as root (to mount
the tmpfs): :func:`engine_sees_host` asks the engine once per engine address, by creating (never starting) a
container that binds a fresh folder of this host, which an engine elsewhere cannot find. Where either is
missing, ``HOME`` is copied into each container as before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from docker.types import DriverConfig, Mount

from gradeflow.errors import SandboxUnavailable
from gradeflow.sandbox._docker_engine import ENGINE_ERRORS, SANDBOX_LABEL, remove_container
from gradeflow.sandbox._local_procs import check_overlay_folders, overlay_options

__all__ = ["HomeUpper", "engine_sees_host"]

_PROBE_TARGET = "/gradeflow-probe"
_lock = threading.Lock()
_seen: dict[str, bool] = {}


def engine_sees_host(client: Any, image_id: str) -> bool:
    """Whether the engine runs on this machine (it finds a folder just made here) and gradeflow can mount a
    tmpfs (root); asked once per engine address and remembered for the process."""
    key = str(client.api.base_url)
    with _lock:
        if key not in _seen:
            _seen[key] = os.geteuid() == 0 and _mounts_here() and _binds_here(client, image_id)
        return _seen[key]


def _mounts_here() -> bool:
    """Whether this process may mount a tmpfs (root in a container without the right to mount may not)."""
    try:
        HomeUpper(1 << 20, os.getuid(), os.getgid()).close()
    except (SandboxUnavailable, OSError):
        return False
    return True


def _binds_here(client: Any, image_id: str) -> bool:
    with tempfile.TemporaryDirectory(prefix="gradeflow-engine-probe-") as folder:
        mount = Mount(_PROBE_TARGET, folder, type="bind", read_only=True)
        try:
            container = client.containers.create(
                image_id, ["true"], mounts=[mount], labels={SANDBOX_LABEL: "probe"}, network_mode="none"
            )
        except ENGINE_ERRORS:
            return False
        remove_container(container)
        return True


class HomeUpper:
    """A tmpfs of ``size`` bytes on this host holding one container's writes over the ``home`` layer."""

    def __init__(self, size: int, uid: int, gid: int) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="gradeflow-home-upper-"))
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "gradeflow-home", str(self.folder)],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            self.folder.rmdir()
            tail = done.stderr.decode(errors="replace").strip()[-200:]
            raise SandboxUnavailable(f"docker sandbox: cannot mount a tmpfs for HOME's writes: {tail}")
        self.upper = self.folder / "upper"
        self.upper.mkdir(mode=0o755)
        os.chown(self.upper, uid, gid)
        (self.folder / "upper-work").mkdir(mode=0o700)

    def mount(self, target: str, layer: Path) -> Mount:
        """The engine's overlay at ``target``: ``layer`` under this tmpfs's writes."""
        check_overlay_folders("docker", (str(layer), str(self.upper)))
        options = {"type": "overlay", "device": "overlay", "o": overlay_options((str(layer),), str(self.upper))}
        return Mount(target, None, type="volume", driver_config=DriverConfig("local", options))

    def close(self) -> None:
        """Unmount and remove the tmpfs (its container removed first). Idempotent."""
        if self.folder.is_dir():
            subprocess.run(["umount", "-l", str(self.folder)], capture_output=True, check=False)
            shutil.rmtree(self.folder, ignore_errors=True)
