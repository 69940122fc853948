"""The local sandbox: commands run on this machine, in a private copy, for trusted code only.

Each command runs in its own process group with a scrubbed environment (``BASE_ENV``, a private
``HOME`` and ``TMPDIR``, plus the task's ``env``); the timeout kills the whole group. ``python`` and
``pip`` are a private virtual environment's, made fresh for every sandbox and layered over the
interpreter running gradeflow (its packages, pytest included, are importable; what ``setup`` installs
lands in the private layer and wins over them), so no ``pip install`` lands in gradeflow's own
environment or leaks into a later grade. This protects the grader's secrets from accidental leaks, not from a
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
import sysconfig
import tempfile
import time
import venv
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


def _path_variable(private: Path) -> str:
    # The private environment first, then the interpreter running gradeflow (its tools), then the system.
    system = "/usr/local/bin:/usr/bin:/bin"
    return f"{private / 'bin'}:{Path(sys.executable).parent}:{system}"


_PIP = """#!{python}
import sys
from pip._internal.cli.main import main
sys.exit(main())
"""


def make_private_environment(folder: Path) -> Path:
    """A virtual environment at ``folder`` over this interpreter's packages; installs go into ``folder``.

    Made without pip of its own (a few milliseconds): a ``.pth`` file puts gradeflow's site-packages
    behind the private one, so ``python -m pip`` and the ``pip`` script run the host's pip with the
    private environment as their prefix.
    """
    venv.EnvBuilder(with_pip=False, symlinks=True, clear=True).create(folder)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(folder), "platbase": str(folder)}))
    purelib.mkdir(parents=True, exist_ok=True)
    host = [sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    (purelib / "_gradeflow_host.pth").write_text("".join(f"{p}\n" for p in dict.fromkeys(host)))
    script = folder / "bin" / "pip"
    script.write_text(_PIP.format(python=folder / "bin" / "python"))
    script.chmod(0o755)
    return folder


class LocalSandbox(Sandbox):
    """Runs commands in ``host_workspace`` itself; scratch folders live in a private temp dir."""

    def __init__(self, host_workspace: Path) -> None:
        self._scratch = Path(tempfile.mkdtemp(prefix="gradeflow-local-"))
        for name in ("out", "home", "tmp", "harness"):
            (self._scratch / name).mkdir()
        self._python = make_private_environment(self._scratch / "env")
        self.workspace = str(host_workspace)
        self.output_dir = str(self._scratch / "out")

    def _environment(self, env: dict[str, str]) -> dict[str, str]:
        return {
            **BASE_ENV,
            "PATH": _path_variable(self._python),
            "VIRTUAL_ENV": str(self._python),
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

    def install_harness(self, files: dict[str, bytes]) -> str:
        folder = self._scratch / "harness"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        return str(folder)

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
            sandbox=self.kind,
            architecture=platform.machine(),
            python_version=platform.python_version(),
            python_environment=f"private per sandbox, over {sys.prefix}",
        )
