"""Choosing a sandbox from the task's ``environment`` and the caller's override."""

from __future__ import annotations

from gradeflow.errors import SpecError
from gradeflow.models import EnvironmentSpec
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.sandbox.local import LocalSandboxFactory

__all__ = ["sandbox_factory"]


def sandbox_factory(environment: EnvironmentSpec, override: str | None = None) -> SandboxFactory:
    """The factory for ``override`` or ``environment.sandbox``; ``SpecError`` for an unknown kind."""
    kind = override or environment.sandbox
    if kind == "local":
        return LocalSandboxFactory()
    raise SpecError(f"--sandbox: unknown sandbox {kind!r} (known: local)")
