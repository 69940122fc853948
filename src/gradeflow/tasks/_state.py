"""Digests of gradeflow's own cached state, so that nothing cached is trusted without a check.

What a baseline reuses across grades (the pristine base, the task's environment folder, the base run's
evidence) is digested when it is built and checked before every use (:func:`changed_state`). The
digests are keyed (HMAC-SHA256) with a secret kept in ``$GRADEFLOW_HOME`` readable by its owner only:
whoever can rewrite a cached file but not read that key cannot forge a matching digest.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import threading
from pathlib import Path

from gradeflow.config import cache_dir

__all__ = ["data_digest", "folder_digest", "folder_digest_excluding_git"]

_KEY_FILE = ".state-key"
_keys: dict[Path, bytes] = {}


def _key() -> bytes:
    """This home's key, made once: written whole to a file of its own, then linked into place (``link`` fails
    when a key is already there), so no reader, in this process or another, ever sees a key half written."""
    home = cache_dir()
    if home not in _keys:
        path = home / _KEY_FILE
        if not path.exists():
            home.mkdir(parents=True, exist_ok=True)
            draft = home / f"{_KEY_FILE}.{os.getpid()}.{threading.get_ident()}"
            fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(secrets.token_bytes(32))
            try:
                os.link(draft, path)
            except FileExistsError:
                pass
            finally:
                draft.unlink()
        _keys[home] = path.read_bytes()
    return _keys[home]


def data_digest(data: bytes) -> str:
    """The keyed digest of ``data``."""
    return hmac.new(_key(), data, hashlib.sha256).hexdigest()


def folder_digest(folder: Path) -> str:
    """The keyed digest of every entry under ``folder`` (path, kind, mode's exec bit, content or link target).

    Links are not followed; an absent folder has a digest of its own (it never matches a built one).
    """
    return _digest(folder, skip_git=False)


def folder_digest_excluding_git(folder: Path) -> str:
    """:func:`folder_digest` with the top-level ``.git`` left out."""
    return _digest(folder, skip_git=True)


def _digest(folder: Path, *, skip_git: bool) -> str:
    mac = hmac.new(_key(), digestmod=hashlib.sha256)
    if not folder.is_dir():
        mac.update(b"absent")
        return mac.hexdigest()
    for current, dirs, files in os.walk(folder):
        if skip_git and current == str(folder) and ".git" in dirs:
            dirs.remove(".git")
        dirs.sort()
        base = Path(current)
        for name in sorted([*dirs, *files]):
            path = base / name
            info = path.lstat()
            mac.update(f"{path.relative_to(folder).as_posix()}\0{stat.S_IFMT(info.st_mode)}\0".encode())
            if stat.S_ISLNK(info.st_mode):
                mac.update(os.readlink(path).encode(errors="surrogateescape"))
            elif stat.S_ISREG(info.st_mode):
                mac.update(b"x" if info.st_mode & 0o111 else b"-")
                mac.update(hashlib.sha256(path.read_bytes()).digest())
    return mac.hexdigest()
