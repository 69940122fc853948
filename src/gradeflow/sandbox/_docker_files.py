"""Files in and out of a sandbox container through ``docker exec``, never through the engine's archive API.

The container's root file system is read-only and every folder a command may write is a size-bounded
tmpfs mount, which the engine's archive endpoints (``put_archive``/``get_archive``, ``docker cp``)
neither write to nor see. So a tree goes in as a tar on the stdin of a ``python3`` inside the container,
running as the user who is to own it, and a file or a tree comes out on the stdout of one. Only
``python3`` is needed in the image (docs/concepts/sandboxes.md's requirement already).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import IO, Any

from docker.utils.socket import frames_iter

from gradeflow.errors import SandboxUnavailable
from gradeflow.sandbox._docker_exec import exit_code
from gradeflow.sandbox.base import CappedWriter, OutputTooLarge

__all__ = ["NO_SPACE", "get_file", "get_tree", "put_tree"]

NO_SPACE = 28
"""The exit code of :data:`_EXTRACT` when the destination ran out of space (``ENOSPC``)."""
_ABSENT = 3
_TOO_LARGE = 4
_CHUNK = 1024 * 1024
_EXIT_WAIT = 10.0
_EXTRACT = """
import errno, os, shutil, sys, tarfile
dest, clear = sys.argv[1], sys.argv[2] == "1"
try:
    if clear:
        for name in os.listdir(dest):
            path = os.path.join(dest, name)
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
    trusted = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
    with tarfile.open(fileobj=sys.stdin.buffer, mode="r|") as tar:
        tar.extractall(dest, **trusted)
except OSError as exc:
    print(exc, file=sys.stderr)
    sys.exit(28 if exc.errno in (errno.ENOSPC, errno.EDQUOT) else 1)
"""
_READ = """
import os, stat, sys
path, cap = sys.argv[1], int(sys.argv[2])
try:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
except OSError:
    sys.exit(3)
info = os.fstat(fd)
if not stat.S_ISREG(info.st_mode):
    sys.exit(3)
if info.st_size > cap:
    print(info.st_size)
    sys.exit(4)
out = sys.stdout.buffer
out.write(b"%d %r\\n" % (info.st_size, info.st_mtime))
left = cap + 1
while left > 0:
    chunk = os.read(fd, min(left, 1 << 20))
    if not chunk:
        break
    out.write(chunk)
    left -= len(chunk)
"""
_PACK = """
import sys, tarfile
with tarfile.open(fileobj=sys.stdout.buffer, mode="w|") as tar:
    tar.add(sys.argv[1], arcname=sys.argv[2])
"""


def put_tree(api: Any, container_id: str, folder: str, archive: IO[bytes], *, user: str, clear: bool = False) -> bool:
    """Extract the tar ``archive`` into ``folder`` as ``user``; ``False`` when ``folder`` ran out of space.

    ``clear`` empties ``folder`` first. Raises ``SandboxUnavailable`` for any other failure; engine
    errors propagate.
    """
    argv = ["python3", "-c", _EXTRACT, folder, "1" if clear else "0"]
    exec_id = api.exec_create(container_id, argv, user=user, stdin=True, stdout=True, stderr=True)["Id"]
    sock = api.exec_start(exec_id, socket=True)
    raw = getattr(sock, "_sock", sock)
    # The writer runs beside the reader: an extractor that stops early (out of space) stops reading its
    # stdin, and a lone writer would block until the socket's timeout.
    writer = threading.Thread(target=_send, args=(raw, archive), daemon=True, name="gradeflow-docker-put")
    writer.start()
    try:
        output = b"".join(data for _, data in frames_iter(sock, tty=False))
    finally:
        with contextlib.suppress(OSError):
            raw.shutdown(socket.SHUT_RDWR)
        writer.join(_EXIT_WAIT)
        with contextlib.suppress(OSError):
            sock.close()
    code = exit_code(api, exec_id, _EXIT_WAIT)
    if code == NO_SPACE:
        return False
    if code != 0:
        raise SandboxUnavailable(f"docker sandbox: cannot copy files into {folder} (exit {code}): {output[-200:]!r}")
    return True


def _send(raw: socket.socket, archive: IO[bytes]) -> None:
    with contextlib.suppress(OSError):
        while chunk := archive.read(_CHUNK):
            raw.sendall(chunk)
        raw.shutdown(socket.SHUT_WR)


def get_file(api: Any, container_id: str, path: str, max_bytes: int, *, user: str) -> tuple[bytes, float] | None:
    """The bytes and mtime of the regular file ``path``; ``None`` when absent or not a regular file.

    Links are never followed. ``OutputTooLarge`` when the file is over ``max_bytes``.
    """
    exec_id = api.exec_create(container_id, ["python3", "-c", _READ, path, str(max_bytes)], user=user)["Id"]
    data = bytearray()
    for out, _ in api.exec_start(exec_id, stream=True, demux=True):
        if out:
            data += out
            if len(data) > max_bytes + 4096:
                raise OutputTooLarge(f"{path} is over the {max_bytes}-byte cap")
    code = exit_code(api, exec_id, _EXIT_WAIT)
    if code == _ABSENT:
        return None
    if code == _TOO_LARGE:
        raise OutputTooLarge(
            f"{path} is {bytes(data).strip().decode(errors='replace')} bytes, over the {max_bytes}-byte cap"
        )
    header, _, content = bytes(data).partition(b"\n")
    try:
        size, mtime = header.split(b" ")
        if code != 0 or int(size) != len(content):
            raise ValueError(f"exit {code}, {len(content)} bytes read")
        return content, float(mtime)
    except ValueError as exc:
        raise SandboxUnavailable(f"docker sandbox: cannot read {path}: {exc}") from None


def get_tree(
    api: Any,
    container_id: str,
    folder: str,
    out: IO[bytes],
    *,
    user: str,
    arcname: str = ".",
    max_bytes: int | None = None,
) -> None:
    """Write ``folder`` as a tar (names under ``arcname``) to ``out``; ``SandboxUnavailable`` on failure,
    ``OutputTooLarge`` (the stream closed, ``out`` left short) once it would pass ``max_bytes``."""
    exec_id = api.exec_create(container_id, ["python3", "-c", _PACK, folder, arcname], user=user)["Id"]
    errors = bytearray()
    sink = out if max_bytes is None else CappedWriter(out, max_bytes, folder)
    stream = api.exec_start(exec_id, stream=True, demux=True)
    try:
        for chunk, err in stream:
            if chunk:
                sink.write(chunk)
            if err:
                errors += err[-200:]
    except OutputTooLarge:
        with contextlib.suppress(Exception):
            stream.close()  # the packer in the container then stops on a closed pipe
        raise
    code = exit_code(api, exec_id, _EXIT_WAIT)
    if code != 0:
        raise SandboxUnavailable(f"docker sandbox: cannot copy {folder} out (exit {code}): {bytes(errors)[-200:]!r}")
