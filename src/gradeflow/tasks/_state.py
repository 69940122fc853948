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
from gradeflow.integrity.files import tree_entries

__all__ = ["data_digest", "inode_digest"]

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


def inode_digest(folder: Path, *, skip_git: bool = False) -> str:
    """The keyed digest of every entry's path, kind, mode, size, inode, modification and change times (and a
    link's target) under ``folder``, no content read: cheap enough for every use of a large cached folder.

    A write, a rename, a change of mode or owner or a file put in another's place changes an entry's change
    time, which ``utime`` cannot set back: only root can (with the clock), and root can read the key too. So
    an edit that keeps a file's size and puts its modification time back is seen as surely as reading every
    byte would see it (that took 0.13 s a grade on a 2,000-file repository; this takes about 0.01 s).
    ``skip_git``: the top-level ``.git`` left out; a folder that cannot be listed counts as such."""
    mac = hmac.new(_key(), digestmod=hashlib.sha256)
    if not folder.is_dir():
        mac.update(b"absent")
        return mac.hexdigest()
    for where, entry in tree_entries(folder, lambda rel: not (skip_git and rel == ".git")):
        if entry is None:
            mac.update(f"{where}\0unreadable\n".encode(errors="surrogateescape"))
            continue
        if skip_git and where == ".git":
            continue
        info = entry.stat(follow_symlinks=False)
        fields = (info.st_mode, info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
        mac.update(f"{where}\0{fields}\n".encode(errors="surrogateescape"))
        if stat.S_ISLNK(info.st_mode):
            mac.update(os.readlink(entry.path).encode(errors="surrogateescape"))
    return mac.hexdigest()
