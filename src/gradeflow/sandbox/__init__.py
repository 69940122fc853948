"""Where candidate commands run: a base class, the local and docker sandboxes, and a fake for tests."""

from gradeflow.sandbox.base import CommandResult, Sandbox, SandboxDescription, SandboxFactory
from gradeflow.sandbox.docker import DEFAULT_IMAGE, SANDBOX_LABEL, DockerSandbox, DockerSandboxFactory
from gradeflow.sandbox.fake import FakeCall, FakeSandbox, FakeSandboxFactory
from gradeflow.sandbox.local import LocalSandbox, LocalSandboxFactory

__all__ = [
    "DEFAULT_IMAGE",
    "SANDBOX_LABEL",
    "CommandResult",
    "DockerSandbox",
    "DockerSandboxFactory",
    "FakeCall",
    "FakeSandbox",
    "FakeSandboxFactory",
    "LocalSandbox",
    "LocalSandboxFactory",
    "Sandbox",
    "SandboxDescription",
    "SandboxFactory",
]
