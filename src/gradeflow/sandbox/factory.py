"""Choosing a sandbox from the task's ``environment`` and the caller's override."""

from __future__ import annotations

from gradeflow.errors import SpecError
from gradeflow.models import EnvironmentSpec
from gradeflow.models.spec import SANDBOX_KINDS
from gradeflow.sandbox._docker_on_root import DockerRootSandboxFactory
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.sandbox.docker import DockerSandboxFactory
from gradeflow.sandbox.isolated import IsolatedSandboxFactory
from gradeflow.sandbox.local import LocalSandboxFactory

__all__ = ["sandbox_factory"]


def sandbox_factory(environment: EnvironmentSpec, override: str | None = None) -> SandboxFactory:
    """The factory for ``override`` or ``environment.sandbox``; ``SpecError`` for an unknown kind.

    Building a factory never contacts a docker engine nor starts bwrap, so this is safe in a preflight
    check; it raises ``SpecError`` here for a bad ``environment.user`` or ``environment.memory``, a root the local
    sandbox cannot run on, and ``environment.image`` beside a ``debian:`` root.
    """
    kind = override or environment.sandbox
    if environment.root != "host" and kind == "local":
        remedy = "use the isolated or docker sandbox"
        raise SpecError(f"environment.root {environment.root}: the local sandbox cannot run on it; {remedy}")
    if kind == "isolated":
        return IsolatedSandboxFactory(environment)
    if kind == "local":
        return LocalSandboxFactory()
    if kind == "docker" and environment.root.startswith("debian:"):
        return DockerRootSandboxFactory(environment)
    if kind == "docker":
        return DockerSandboxFactory(environment)
    raise SpecError(f"--sandbox: unknown sandbox {kind!r} (known: {', '.join(SANDBOX_KINDS)})")
