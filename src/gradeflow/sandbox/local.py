"""The local sandbox: commands run on this machine, in a private copy, for trusted code only.

Each command runs in its own process group with a scrubbed environment (``BASE_ENV``, a ``PATH``
that finds this interpreter first, a private ``HOME`` and ``TMPDIR``, plus the task's ``env``); the
timeout kills the whole group. This protects the grader's secrets from accidental leaks, not from a
hostile patch: candidate code runs with the grader's user rights. Grade untrusted submissions in the
docker sandbox.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, ClassVar

from gradeflow.errors import SandboxUnavailable
from gradeflow.sandbox.base import (
    BASE_ENV,
    CommandResult,
    Sandbox,
    SandboxDescription,
    SandboxFactory,
    cap_output,
)

__all__ = ["LocalSandbox", "LocalSandboxFactory"]


def _path_variable() -> str:
    # The interpreter running gradeflow (often a venv) comes first so `python` means the same here.
    system = "/usr/local/bin:/usr/bin:/bin"
    return f"{Path(sys.executable).parent}:{system}"


class LocalSandbox(Sandbox):
    """Runs commands in ``host_workspace`` itself; scratch folders live in a private temp dir."""

    def __init__(self, host_workspace: Path) -> None:
        self._scratch = Path(tempfile.mkdtemp(prefix="gradeflow-local-"))
        for name in ("out", "home", "tmp"):
            (self._scratch / name).mkdir()
        self.workspace = str(host_workspace)
        self.output_dir = str(self._scratch / "out")

    def _environment(self, env: dict[str, str]) -> dict[str, str]:
        return {
            **BASE_ENV,
            "PATH": _path_variable(),
            "HOME": str(self._scratch / "home"),
            "TMPDIR": str(self._scratch / "tmp"),
            **env,
        }

    def run(self, command: str, *, env: dict[str, str], timeout: float) -> CommandResult:
        # A report left by an earlier command (setup, say) must never pass for this command's report.
        shutil.rmtree(self.output_dir, ignore_errors=True)
        Path(self.output_dir).mkdir()
        started = time.perf_counter()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen(
                    command,
                    shell=True,
                    cwd=self.workspace,
                    env=self._environment(env),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
            except OSError as exc:
                raise SandboxUnavailable(f"local sandbox cannot start {command!r}: {exc}") from exc
            timed_out = False
            try:
                exit_code: int | None = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out, exit_code = True, None
            _kill_group(proc.pid)
            if timed_out:
                proc.wait()
            duration = time.perf_counter() - started
            return CommandResult(
                command=command,
                exit_code=exit_code,
                stdout=_read(out),
                stderr=_read(err),
                duration=duration,
                timed_out=timed_out,
            )

    def read_output(self, name: str, max_bytes: int) -> tuple[bytes, float] | None:
        path = Path(self.output_dir) / name
        if not path.is_file() or path.is_symlink():
            return None
        size = path.stat().st_size
        if size > max_bytes:
            raise ValueError(f"{name} is {size} bytes, over the {max_bytes}-byte cap")
        return path.read_bytes(), path.stat().st_mtime

    def close(self) -> None:
        shutil.rmtree(self._scratch, ignore_errors=True)


def _kill_group(pid: int) -> None:
    # Background processes the command left behind die with it, on success as on timeout.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read(handle: IO[bytes]) -> str:
    handle.seek(0)
    return cap_output(handle.read(_MAX_READ))


_MAX_READ = 16 * 1024 * 1024


class LocalSandboxFactory(SandboxFactory):
    """Opens :class:`LocalSandbox` instances."""

    kind: ClassVar[str] = "local"

    def open(self, host_workspace: Path) -> LocalSandbox:
        return LocalSandbox(host_workspace)

    def describe(self) -> SandboxDescription:
        return SandboxDescription(
            sandbox=self.kind, architecture=platform.machine(), python_version=platform.python_version()
        )
