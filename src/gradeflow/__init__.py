"""gradeflow: grade coding-agent patches as Prefect flows, with evidence for every component."""

import os as _os

# Prefect's server would otherwise try to send telemetry (no network here; it also locks SQLite).
_os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# A temporary server (``--ephemeral``) takes 5-15 s to start on a 2-core machine and more under load; Prefect
# gives up after 20 s, which made a busy machine's grade an environment failure. Yours to set lower or higher.
_os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")

from typing import TYPE_CHECKING as _TYPE_CHECKING

if _TYPE_CHECKING:
    from gradeflow.api import grade, load_task
    from gradeflow.errors import GradeflowError, InfraError, SpecError, SubmissionError
    from gradeflow.models import GradeComponent, GradeResult, Submission, TaskSpec

# Imported on first use, so commands that run no flow (``--help``, ``schema``, ``report``) never
# pay for importing Prefect.
_EXPORTS = {
    "grade": "gradeflow.api",
    "load_task": "gradeflow.spec",
    "GradeflowError": "gradeflow.errors",
    "InfraError": "gradeflow.errors",
    "SpecError": "gradeflow.errors",
    "SubmissionError": "gradeflow.errors",
    "GradeComponent": "gradeflow.models",
    "GradeResult": "gradeflow.models",
    "Submission": "gradeflow.models",
    "TaskSpec": "gradeflow.models",
}


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'gradeflow' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "GradeComponent",
    "GradeResult",
    "GradeflowError",
    "InfraError",
    "SpecError",
    "Submission",
    "SubmissionError",
    "TaskSpec",
    "grade",
    "load_task",
]
