"""gradeflow: grade coding-agent patches as Prefect flows, with evidence for every component."""

import os as _os

# Prefect's server would otherwise try to send telemetry (no network here; it also locks SQLite).
_os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

from gradeflow.api import grade, load_task
from gradeflow.errors import GradeflowError, InfraError, SpecError, SubmissionError
from gradeflow.models import GradeComponent, GradeResult, Submission, TaskSpec

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
