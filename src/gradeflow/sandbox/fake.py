"""An in-package fake sandbox for tests, in the spirit of httpx's ``MockTransport``.

A handler receives each :class:`FakeCall` and answers with a :class:`CommandResult`; it may read the
workspace and write files (a JUnit report) into ``call.output_dir`` first. Nothing is executed.

    def handler(call: FakeCall) -> CommandResult:
        call.write_output("junit.xml", junit_xml)
        return call.result(exit_code=0)

    factory = FakeSandboxFactory(handler)

A handler that raises ``SandboxUnavailable`` plays an environment failure. Whether the flow then
blames the candidate depends on :meth:`FakeSandboxFactory.probe`: by default the fake's environment is
at fault (the grade stays inconclusive); ``healthy=True`` makes the probe pass, so the same failure in a
candidate's step is the candidate's (``candidate-broke-sandbox``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from gradeflow.errors import SandboxUnavailable
from gradeflow.sandbox.base import (
    CommandResult,
    OutputTooLarge,
    Sandbox,
    SandboxDescription,
    SandboxFactory,
    archive_roots,
    archive_tree,
    remove_tree,
    replace_tree,
    restore_roots,
)

__all__ = ["FakeCall", "FakeSandbox", "FakeSandboxFactory"]


@dataclass
class FakeCall:
    """One command the fake was asked to run."""

    command: str
    env: dict[str, str]
    timeout: float
    workspace: Path
    output_dir: Path
    stdin: bytes | None = None
    """What the command was given on its standard input."""

    def read(self, path: str) -> str:
        """A workspace file's text, or ``""`` when absent."""
        target = self.workspace / path
        return target.read_text() if target.is_file() else ""

    def write_output(self, name: str, content: str | bytes) -> None:
        data = content.encode() if isinstance(content, str) else content
        (self.output_dir / name).write_bytes(data)

    def result(self, exit_code: int | None = 0, **fields: object) -> CommandResult:
        return CommandResult.model_validate({"command": self.command, "exit_code": exit_code, **fields})


Handler = Callable[[FakeCall], CommandResult]


class FakeSandbox(Sandbox):
    def __init__(self, host_workspace: Path, handler: Handler, calls: list[FakeCall]) -> None:
        self._scratch = Path(tempfile.mkdtemp(prefix="gradeflow-fake-"))
        self._handler = handler
        self._calls = calls
        self.workspace = str(host_workspace)
        self.output_dir = str(self._scratch)
        self._home = self._scratch.with_name(self._scratch.name + "-home")
        self._home.mkdir()

    def run(self, command: str, *, env: dict[str, str], timeout: float, stdin: bytes | None = None) -> CommandResult:
        call = FakeCall(command, dict(env), timeout, Path(self.workspace), self._scratch, stdin)
        self._calls.append(call)
        return self._handler(call)

    def read_output(self, name: str, max_bytes: int) -> tuple[bytes, float] | None:
        path = self._scratch / name
        if not path.is_file():
            return None
        if path.stat().st_size > max_bytes:
            raise OutputTooLarge(f"{name} is over the {max_bytes}-byte cap")
        return path.read_bytes(), path.stat().st_mtime

    def install_harness(self, files: dict[str, bytes]) -> str:
        folder = self._scratch.with_name(self._scratch.name + "-harness")
        remove_tree(folder, ignore_errors=True)
        folder.mkdir()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        return str(folder)

    def environment_roots(self) -> dict[str, str]:
        return {"home": str(self._home)}

    def export_environment(self, folder: Path) -> None:
        archive_roots(self.environment_roots(), folder)

    def import_environment(self, folder: Path) -> None:
        restore_roots(self.environment_roots(), folder)

    def export_workspace(self, archive: Path, max_bytes: int | None = None) -> None:
        archive_tree(Path(self.workspace), archive, max_bytes)

    def import_workspace(self, archive: Path) -> None:
        replace_tree(Path(self.workspace), archive)

    def close(self) -> None:
        remove_tree(self._scratch, ignore_errors=True)
        remove_tree(self._scratch.with_name(self._scratch.name + "-harness"), ignore_errors=True)
        remove_tree(self._home, ignore_errors=True)


@dataclass
class FakeSandboxFactory(SandboxFactory):
    """Opens :class:`FakeSandbox` instances sharing one handler; records every call in ``calls``."""

    handler: Handler
    description: SandboxDescription = field(default_factory=lambda: SandboxDescription(sandbox="fake"))
    calls: list[FakeCall] = field(default_factory=list)
    healthy: bool = False
    """What :meth:`probe` finds: ``True`` passes, ``False`` raises ``SandboxUnavailable``. Tests may flip it."""
    probes: int = 0
    """How many times :meth:`probe` was called."""
    kind: ClassVar[str] = "fake"

    def open(self, host_workspace: Path) -> FakeSandbox:
        return FakeSandbox(host_workspace, self.handler, self.calls)

    def describe(self) -> SandboxDescription:
        return self.description

    def probe(self) -> None:
        self.probes += 1
        if not self.healthy:
            raise SandboxUnavailable("fake sandbox: the probe finds the environment broken (healthy=False)")
