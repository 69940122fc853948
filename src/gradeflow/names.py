"""Names the command line offers before anything runs: the sandbox kinds, the task types, the store's cap variable.

Nothing but ``typing`` is imported here, so the ``gradeflow`` command builds its argument parser (``--help``,
usage errors) without pydantic or the package metadata; :mod:`gradeflow.models.spec` and
:mod:`gradeflow.config` import their names from here.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["ENV_CAP_VARIABLE", "SANDBOX_KINDS", "TASK_TYPES", "SandboxKind", "TaskType"]

TaskType = Literal["bugfix", "feature", "refactor", "perf"]
TASK_TYPES: tuple[str, ...] = get_args(TaskType)
"""The kinds of change a task asks for."""
SandboxKind = Literal["isolated", "docker", "local"]
SANDBOX_KINDS: tuple[str, ...] = get_args(SandboxKind)
"""The sandboxes a task or a caller may name, the default first."""
ENV_CAP_VARIABLE = "GRADEFLOW_ENV_CAP"
"""The environment variable holding the most the environment store may keep (see :func:`gradeflow.config.env_cap`)."""
