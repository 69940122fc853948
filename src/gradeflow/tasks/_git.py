"""Running git on private copies: the only place gradeflow shells out to git.

Every call prints file names as they are (``core.quotePath=false``; callers that list names use
``-z``), and every private repository ignores the ``.gitattributes`` a tree brings: a patch that marks
its files ``binary`` or ``-diff`` would otherwise hide its lines from the diff and its line counts.
No call starts git's automatic garbage collection (``gc.auto=0``): after a commit of more loose objects
than ``gc.auto`` (6700; a Django base has more) git packs them in a process of its own that outlives the
call, and removes ``.git/objects/??`` folders while gradeflow copies the repository.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from gradeflow.errors import GitFailed

__all__ = ["git", "init_snapshot_repo", "plain_attributes"]

_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "gradeflow",
    "GIT_AUTHOR_EMAIL": "gradeflow@localhost",
    "GIT_COMMITTER_NAME": "gradeflow",
    "GIT_COMMITTER_EMAIL": "gradeflow@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LC_ALL": "C",
}
_GIT = ("git", "-c", "core.autocrlf=false", "-c", "core.symlinks=true", "-c", "core.quotePath=false", "-c", "gc.auto=0")


def git(cwd: Path, *args: str, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """Run git with no user or system config; ``GitFailed`` when git cannot start, or fails with ``check``."""
    try:
        proc = subprocess.run(
            [*_GIT, *args],
            cwd=cwd,
            input=input,
            capture_output=True,
            env=_ENV,
            timeout=300,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitFailed(f"git {args[0]} in {cwd} failed to run: {exc}") from exc
    if check and proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        raise GitFailed(f"git {args[0]} in {cwd}: {message[-1] if message else 'failed'}")
    return proc


def init_snapshot_repo(folder: Path) -> None:
    """Make ``folder`` a one-commit repository of its current content (the pristine base), its objects in one
    pack: as loose objects, a base of many files (Django's: 8,600) doubles what every copy of it copies and removes."""
    git(folder, "init", "-q", "-b", "base")
    plain_attributes(folder)
    git(folder, "add", "-A", "-f")
    git(folder, "commit", "-q", "--allow-empty", "--no-verify", "-m", "base")
    git(folder, "repack", "-a", "-d", "-q", "--window=0")  # no delta search: 3 s on a Django base, not 5


# $GIT_DIR/info/attributes outranks every .gitattributes in the tree: these lines put each attribute that
# changes what git stages or shows back to git's defaults (content sniffing for binary, bytes as they are).
_PLAIN_ATTRIBUTES = "* !diff !merge !text !eol !crlf !ident !filter !working-tree-encoding\n"


def plain_attributes(folder: Path) -> None:
    """Make the repository in ``folder`` ignore the tree's ``.gitattributes`` when it stages and diffs."""
    info = folder / ".git" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "attributes").write_text(_PLAIN_ATTRIBUTES, encoding="ascii")
