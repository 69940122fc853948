"""Running git on private copies: the only place gradeflow shells out to git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gradeflow.errors import InfraError

__all__ = ["git", "init_snapshot_repo"]

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


def git(cwd: Path, *args: str, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """Run git with no user or system config; ``InfraError`` when git itself is missing."""
    try:
        proc = subprocess.run(
            ["git", "-c", "core.autocrlf=false", "-c", "core.symlinks=true", *args],
            cwd=cwd,
            input=input,
            capture_output=True,
            env=_ENV,
            timeout=300,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InfraError(f"git {args[0]} in {cwd} failed to run: {exc}") from exc
    if check and proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        raise InfraError(f"git {args[0]} in {cwd}: {message[-1] if message else 'failed'}")
    return proc


def init_snapshot_repo(folder: Path) -> None:
    """Make ``folder`` a one-commit repository of its current content (the pristine base)."""
    git(folder, "init", "-q", "-b", "base")
    git(folder, "add", "-A", "-f")
    git(folder, "commit", "-q", "--allow-empty", "--no-verify", "-m", "base")
