"""The image a docker sandbox runs: the task's image plus one ``.pth`` that makes the harness folder a site folder.

Every interpreter of the image (``python``, ``python3 -I``, one a script starts with an emptied environment)
then runs the harness folder's ``.pth`` at start, as the isolated and local sandboxes' private environment
does (see :mod:`gradeflow.integrity.boot`): the harness joins pytest without riding on variables a command
can overwrite. The layer is made once per image on the engine (a stopped container of the image asked for
its site folder, the file copied into it, the container committed) and found again by its tag.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from typing import Any

import docker.errors

from gradeflow.errors import SandboxUnavailable
from gradeflow.sandbox._docker_engine import API_TIMEOUT, ENGINE_ERRORS, HARNESS_DIR, SANDBOX_LABEL, remove_container

__all__ = ["HOOK_FILE", "harness_site_image"]

HOOK_FILE = "pylib.pth"
"""Named as an administrator's ``.pth`` for ``/opt/pylib`` might be: the code under test sees the file."""
_HOOK = f"import site; site.addsitedir({HARNESS_DIR!r})\n".encode()
_REPOSITORY = "gradeflow-harness-site"
_SITE = "import site; print(site.getsitepackages()[0])"


def harness_site_image(client: Any, image_id: str, image: str) -> str:
    """The id of ``image_id`` with :data:`HOOK_FILE` in its interpreter's first site folder, made when missing.

    ``SandboxUnavailable`` when the engine fails or the image's ``python3`` names no site folder.
    """
    tag = f"{_REPOSITORY}:{image_id.split(':')[-1][:16]}-{_hook_digest()}"
    try:
        return str(client.images.get(tag).id)
    except docker.errors.ImageNotFound:
        pass
    except ENGINE_ERRORS as exc:
        raise SandboxUnavailable(f"docker image {tag!r} cannot be inspected: {exc}") from None
    container = None
    try:
        container = client.containers.create(
            image_id, ["python3", "-c", _SITE], user="0:0", network_mode="none", labels={SANDBOX_LABEL: "docker"}
        )
        container.start()
        status = container.wait(timeout=API_TIMEOUT)["StatusCode"]
        site = bytes(container.logs(stdout=True, stderr=False)).decode(errors="replace").strip()
        if status != 0 or not site.startswith("/"):
            raise SandboxUnavailable(f"docker image {image!r}: python3 names no site folder (exit {status}): {site!r}")
        container.put_archive(site, _hook_archive())
        repository, _, name = tag.partition(":")
        return str(container.commit(repository=repository, tag=name).id)
    except ENGINE_ERRORS as exc:
        raise SandboxUnavailable(f"docker image {image!r}: cannot add the harness's site file: {exc}") from None
    finally:
        if container is not None:
            remove_container(container)


def _hook_digest() -> str:
    """The file's name and content, so that an image made with another name or content is not served."""
    return hashlib.sha256(HOOK_FILE.encode() + b"\0" + _HOOK).hexdigest()[:8]


def _hook_archive() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(HOOK_FILE)
        info.size, info.mode = len(_HOOK), 0o644
        tar.addfile(info, io.BytesIO(_HOOK))
    return buffer.getvalue()
