"""The sandbox contract: run a command against one workspace, read back what it wrote.

A :class:`SandboxFactory` opens one :class:`Sandbox` per grading step over a host folder that already
holds the repository to run (the private copy made by the snapshot step). Commands see the repository
at :attr:`Sandbox.workspace` and may write reports under :attr:`Sandbox.output_dir`, which lies
outside the repository. Closing a sandbox removes everything it created.
"""

from __future__ import annotations

import abc
import platform
from pathlib import Path
from types import TracebackType
from typing import ClassVar

from pydantic import BaseModel

__all__ = ["MAX_OUTPUT_BYTES", "CommandResult", "Sandbox", "SandboxDescription", "SandboxFactory"]

MAX_OUTPUT_BYTES = 64 * 1024
"""Captured stdout/stderr is cut to this many bytes (head and tail kept)."""

BASE_ENV = {
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
}
"""Variables every command sees (the task's ``env`` may override them); nothing else is inherited."""


class CommandResult(BaseModel):
    """What one command did."""

    command: str
    exit_code: int | None
    """``None`` when the command was killed at its timeout."""
    stdout: str = ""
    stderr: str = ""
    duration: float = 0.0
    """Wall-clock seconds measured from outside the process."""
    timed_out: bool = False
    oom_killed: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.oom_killed


class SandboxDescription(BaseModel):
    """The environment facts a sandbox reports for the fingerprint."""

    sandbox: str
    image: str | None = None
    image_id: str | None = None
    architecture: str = platform.machine()
    python_version: str = platform.python_version()
    timezone: str = BASE_ENV["TZ"]
    pythonhashseed: str = BASE_ENV["PYTHONHASHSEED"]
    python_environment: str | None = None
    """Where ``setup`` installs: the local sandbox's private environment per sandbox and what it layers over."""


def cap_output(data: bytes, limit: int = MAX_OUTPUT_BYTES) -> str:
    """Decode ``data``, keeping its head and tail when it is longer than ``limit`` bytes."""
    if len(data) > limit:
        half = limit // 2
        data = data[:half] + b"\n[... output truncated ...]\n" + data[-half:]
    return data.decode("utf-8", errors="replace")


class Sandbox(abc.ABC):
    """A place where commands run against one workspace. Use it as a context manager."""

    workspace: str
    """The repository root as commands see it (their working directory)."""
    output_dir: str
    """A folder outside the repository where commands may write reports, as commands see it."""

    @abc.abstractmethod
    def run(self, command: str, *, env: dict[str, str], timeout: float) -> CommandResult:
        """Run a shell command from the repository root; raise ``SandboxUnavailable`` if it cannot start."""

    @abc.abstractmethod
    def read_output(self, name: str, max_bytes: int) -> tuple[bytes, float] | None:
        """The bytes and mtime of ``output_dir/name``, or ``None`` when absent; over ``max_bytes`` is an error."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop everything the sandbox started and remove what it created. Idempotent."""

    @abc.abstractmethod
    def install_harness(self, files: dict[str, bytes]) -> str:
        """Put grader-owned files in a folder outside the repository; its path as commands see it.

        Calling it again replaces the folder's content. Commands may read the files; in the docker
        sandbox they cannot change them.
        """

    def output_path(self, name: str) -> str:
        """The path of ``output_dir/name`` as commands see it."""
        return f"{self.output_dir.rstrip('/')}/{name}"

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class SandboxFactory(abc.ABC):
    """Opens sandboxes of one kind; cheap to create, safe to pass to Prefect tasks."""

    kind: ClassVar[str]

    @abc.abstractmethod
    def open(self, host_workspace: Path) -> Sandbox:
        """A sandbox running commands against a copy or view of ``host_workspace``."""

    @abc.abstractmethod
    def describe(self) -> SandboxDescription:
        """Facts about the environment commands run in; raise ``SandboxUnavailable`` when it cannot run."""
