"""A ``debian:`` root as the docker sandbox's image: imported once per root digest, found again by its tag.

The root's folder (built and verified by :func:`~gradeflow.environments.roots.ensure_root`, the one the isolated
sandbox runs on) is streamed to the engine as a tar (``docker import``: no registry, no Dockerfile), tagged
``gradeflow-root:<release>-<digest12>`` and labelled with the root's full digest. On its way in it gains what the
docker sandbox needs of an image, as ``scripts/build-image.sh`` gives its own: a ``grader`` user (1000:1000) in
``/etc/passwd`` and ``/etc/group``, and ``python`` on ``PATH`` (``/usr/local/bin/python``, a link to ``python3``).
``/dev``, ``/proc`` and ``/sys`` go in empty (the engine provides them), debootstrap's log (it names the
host folder the root was built in) not at all. The harness's site file is added on top
by :func:`~gradeflow.sandbox._docker_site.harness_site_image`, as for any image.

Imports of one root wait on its build lock (the environment store's own), so concurrent grades, in threads or
processes, import it once; the root cannot be rebuilt meanwhile. A root rebuilt since (another digest) gets a new
tag; an image whose labels do not say this root's digest and this module's recipe is imported again.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import docker.errors

from gradeflow.environments.roots import Root, locked, roots_dir, stat_digest
from gradeflow.errors import SandboxUnavailable
from gradeflow.sandbox._docker_engine import ENGINE_ERRORS, HOME_DIR

__all__ = ["ROOT_REPOSITORY", "root_image", "root_image_tag"]

ROOT_REPOSITORY = "gradeflow-root"
IMAGE_RECIPE = "2"
"""Bumped when what an import adds to a root changes, so no image made the old way is served (2: the user's home
is :data:`~gradeflow.sandbox._docker_engine.HOME_DIR`, no longer under ``/gradeflow``; debootstrap's log left out)."""
_DIGEST_LABEL = "org.gradeflow.root-digest"
_RECIPE_LABEL = "org.gradeflow.root-image"
_USER = "grader"
_UID = 1000
_EMPTIED = ("dev", "proc", "sys")
_LEFT_OUT = (("etc", "passwd"), ("etc", "group"), ("var", "log", "bootstrap.log"))
"""Left out of the tar (the accounts files go in with the user added); debootstrap's log names the folder the root
was built in, the grader's cache, which the code under test must not read."""
_CHANGES = [
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    "WORKDIR /",
    'CMD ["/bin/sh"]',
]
_CHUNK = 1024 * 1024
_IMPORT_ERRORS: tuple[type[Exception], ...] = (*ENGINE_ERRORS, OSError)


def root_image_tag(root: Root) -> str:
    """``gradeflow-root:<release>-<first 12 of the root's digest>``."""
    release = re.sub(r"[^a-z0-9_.-]+", "-", root.recipe.source.lower()).strip("-.")[:60] or "root"
    return f"{ROOT_REPOSITORY}:{release}-{root.digest[:12]}"


def root_image(client: Any, root: Root) -> tuple[str, str]:
    """``(tag, image id)`` of ``root`` on the engine, imported now when no image of its digest is there.

    ``SandboxUnavailable`` when the engine fails, or the root changed since it was verified (the next try builds
    it again)."""
    tag = root_image_tag(root)
    with locked(roots_dir() / f"{root.recipe.name}.lock"):
        found = _current(client, tag, root)
        if found is not None:
            return tag, found
        if stat_digest(root.folder) != root.digest:
            raise SandboxUnavailable(f"environment.root {root.recipe.label()}: changed before its image was made")
        repository, _, name = tag.partition(":")
        changes = [*_CHANGES, f"LABEL {_DIGEST_LABEL}={root.digest} {_RECIPE_LABEL}={IMAGE_RECIPE}"]
        try:
            client.api.import_image_from_data(_root_tar(root.folder), repository=repository, tag=name, changes=changes)
            return tag, str(client.images.get(tag).id)
        except _IMPORT_ERRORS as exc:
            raise SandboxUnavailable(f"environment.root {root.recipe.label()}: docker import failed: {exc}") from None


def _current(client: Any, tag: str, root: Root) -> str | None:
    """The id of the image ``tag`` when its labels say ``root``'s digest and this recipe; else ``None``."""
    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    except ENGINE_ERRORS as exc:
        raise SandboxUnavailable(f"docker image {tag!r} cannot be inspected: {exc}") from None
    labels = image.labels or {}
    if labels.get(_DIGEST_LABEL) == root.digest and labels.get(_RECIPE_LABEL) == IMAGE_RECIPE:
        return str(image.id)
    return None


def _root_tar(folder: Path) -> Iterator[bytes]:
    """The tar of ``folder`` with the sandbox's additions, in chunks, written by a thread as they are read."""
    read_end, write_end = os.pipe()
    failed: list[BaseException] = []

    def write() -> None:
        try:
            with os.fdopen(write_end, "wb") as out, tarfile.open(fileobj=out, mode="w|") as tar:
                _add_root(tar, folder)
        except BaseException as exc:  # handed to the reading side, which raises it
            failed.append(exc)

    writer = threading.Thread(target=write, name="gradeflow-root-tar", daemon=True)
    writer.start()
    with os.fdopen(read_end, "rb") as source:
        while chunk := source.read(_CHUNK):
            yield chunk
    writer.join()
    if failed:
        raise OSError(f"cannot archive {folder}: {failed[0]}")


def _add_root(tar: tarfile.TarFile, folder: Path) -> None:
    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = PurePosixPath(info.name).parts
        if len(parts) > 1 and parts[0] in _EMPTIED:
            return None
        return None if parts in _LEFT_OUT else info

    tar.add(folder, arcname=".", filter=keep)
    for name, line in (
        ("passwd", f"{_USER}:x:{_UID}:{_UID}:Grader:{HOME_DIR}:/bin/sh\n"),
        ("group", f"{_USER}:x:{_UID}:\n"),
    ):
        _add_text(tar, f"etc/{name}", _with_line(folder / "etc" / name, line))
    if not any(os.path.lexists(folder / p) for p in ("usr/bin/python", "usr/local/bin/python")):
        link = tarfile.TarInfo("./usr/local/bin/python")
        link.type, link.linkname, link.mode = tarfile.SYMTYPE, "/usr/bin/python3", 0o777
        tar.addfile(link)


def _with_line(path: Path, line: str) -> bytes:
    """The accounts file at ``path`` with ``line`` added, unless an entry of the same id or name is there."""
    text = path.read_text(errors="replace") if path.is_file() else ""
    name, _, rest = line.partition(":x:")
    ids = rest.split(":")[0]
    taken = any(f.split(":")[0] == name or f.split(":")[2:3] == [ids] for f in text.splitlines() if f.count(":") >= 2)
    if not taken:
        text += ("" if text.endswith("\n") or not text else "\n") + line
    return text.encode()


def _add_text(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(f"./{name}")
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))
