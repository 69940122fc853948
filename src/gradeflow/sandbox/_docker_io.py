"""Moving bytes in and out of a sandbox container: the copied-in archive, reports read back, output capture.

Nothing here talks to the engine; :mod:`gradeflow.sandbox.docker` passes the archives and streams.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from gradeflow.sandbox.base import MAX_OUTPUT_BYTES, cap_output

__all__ = ["OutputCapture", "harness_archive", "is_regular_file", "report_bytes", "report_mtime", "workspace_archive"]

_GO_MODE_TYPE = (1 << 31) | (1 << 27) | (1 << 26) | (1 << 25) | (1 << 24) | (1 << 21) | (1 << 19)
"""Go's ``os.ModeType`` bits (dir, symlink, device, pipe, socket, char device, irregular) in a path stat."""


class OutputCapture:
    """Keeps the head and the tail of a stream of any length in bounded memory."""

    def __init__(self, limit: int = MAX_OUTPUT_BYTES) -> None:
        self._limit = limit
        self._head = bytearray()
        self._tail = bytearray()

    def add(self, chunk: bytes) -> None:
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


def workspace_archive(host_workspace: Path, uid: int, gid: int, *, workspace: str, owned: list[str]) -> IO[bytes]:
    """A tar (as an open temporary file, rewound) to extract at ``/``.

    It holds ``owned`` folders and the content of ``host_workspace`` under ``workspace``, all owned by
    ``uid:gid`` so the command user may write them; parents of ``owned`` are root's. Links are archived
    as links, never followed; sockets and devices are left out.
    """
    archive = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the caller, who closes it
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for folder in _parents(owned):
            tar.addfile(_folder(folder, 0, 0))
        for folder in owned:
            tar.addfile(_folder(folder, uid, gid))
        tar.add(host_workspace, arcname=workspace.strip("/"), filter=lambda info: _owned_by(info, uid, gid))
    archive.seek(0)
    return archive


def harness_archive(folder: str, files: dict[str, bytes]) -> IO[bytes]:
    """A tar (rewound) to extract at ``/``: ``folder`` and ``files`` in it, all root's and read-only to others."""
    archive = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the caller, who closes it
    with tarfile.open(fileobj=archive, mode="w") as tar:
        tar.addfile(_folder(folder, 0, 0))
        for name, data in files.items():
            info = _owned_by(tarfile.TarInfo(f"{folder.strip('/')}/{name}"), 0, 0)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    archive.seek(0)
    return archive


def _parents(folders: list[str]) -> list[str]:
    parents = {str(p) for f in folders for p in Path(f.strip("/")).parents if str(p) != "."}
    return sorted(parents - {f.strip("/") for f in folders}, key=len)


def _folder(name: str, uid: int, gid: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name.strip("/"))
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    return _owned_by(info, uid, gid)


def _owned_by(info: tarfile.TarInfo, uid: int, gid: int) -> tarfile.TarInfo:
    info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
    return info


def is_regular_file(stat: dict[str, Any]) -> bool:
    """Whether the engine's stat of a container path (``X-Docker-Container-Path-Stat``) is a regular file."""
    return not stat.get("linkTarget") and not int(stat.get("mode", 0)) & _GO_MODE_TYPE


def report_bytes(chunks: Iterable[bytes], max_bytes: int) -> bytes | None:
    """The single regular file in a one-file archive from ``get_archive``; ``None`` when it is not one."""
    with tarfile.open(fileobj=io.BytesIO(b"".join(_bounded(chunks, max_bytes + 64 * 1024)))) as tar:
        member = tar.next()
        if member is None or not member.isfile() or member.size > max_bytes:
            return None
        handle = tar.extractfile(member)
        return handle.read() if handle is not None else None


def _bounded(chunks: Iterable[bytes], limit: int) -> Iterator[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise ValueError(f"the archive is over {limit} bytes")
        yield chunk


def report_mtime(stat: dict[str, Any]) -> float:
    """The modification time in the engine's stat as a POSIX timestamp (same clock as the host's)."""
    return datetime.fromisoformat(str(stat["mtime"])).timestamp()
