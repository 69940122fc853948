"""The tars a sandbox container receives: the workspace, the harness, a tree exported by another container.

Nothing here talks to the engine; :mod:`gradeflow.sandbox._docker_files` streams the archives in.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import IO

__all__ = ["harness_archive", "owned_copy", "tree_archive"]


def tree_archive(root: Path) -> IO[bytes]:
    """A tar (as an open temporary file, rewound) of ``root``'s content, names relative to it.

    Links are archived as links, never followed; sockets and devices are left out. Ownership is set
    by the user who extracts it.
    """
    archive = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the caller, who closes it
    with tarfile.open(fileobj=archive, mode="w") as tar:
        tar.add(root, arcname=".")
    archive.seek(0)
    return archive


def harness_archive(files: dict[str, bytes]) -> IO[bytes]:
    """A tar (rewound) of ``files`` by name, all root's and read-only to others."""
    archive = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the caller, who closes it
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name, data in files.items():
            info = _owned_by(tarfile.TarInfo(name), 0, 0)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    archive.seek(0)
    return archive


def owned_copy(source: Path, uid: int, gid: int) -> IO[bytes]:
    """A copy (rewound) of the tar ``source``, every member owned by ``uid:gid`` with plain permissions.

    Members that are not files, folders or links, and names that are absolute or climb out with
    ``..``, are left out: the source may come from a container a candidate's commands wrote to.
    """
    archive = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the caller, who closes it
    with tarfile.open(source) as src, tarfile.open(fileobj=archive, mode="w") as dst:
        for member in src:
            name = PurePosixPath(member.name)
            if name.is_absolute() or ".." in name.parts or member.type not in _COPIED_TYPES:
                continue
            member.mode &= 0o777
            dst.addfile(_owned_by(member, uid, gid), src.extractfile(member) if member.isfile() else None)
    archive.seek(0)
    return archive


_COPIED_TYPES = (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE)


def _owned_by(info: tarfile.TarInfo, uid: int, gid: int) -> tarfile.TarInfo:
    info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
    return info
