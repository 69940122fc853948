"""Where candidate commands run: a base class, the local sandbox, and a fake for tests."""

from gradeflow.sandbox.base import CommandResult, Sandbox, SandboxDescription, SandboxFactory
from gradeflow.sandbox.fake import FakeCall, FakeSandbox, FakeSandboxFactory
from gradeflow.sandbox.local import LocalSandbox, LocalSandboxFactory

__all__ = [
    "CommandResult",
    "FakeCall",
    "FakeSandbox",
    "FakeSandboxFactory",
    "LocalSandbox",
    "LocalSandboxFactory",
    "Sandbox",
    "SandboxDescription",
    "SandboxFactory",
]
