"""Pydantic models: the task spec (what to grade against) and the result (what a grade says).

Specs (:mod:`~gradeflow.models.spec`) are frozen and reject unknown keys; results
(:mod:`~gradeflow.models.result`) are plain data that serialize to the result JSON. Typed evidence the
steps gather is in :mod:`~gradeflow.models.evidence`, the reason codes in :mod:`~gradeflow.models.reasons`.
"""

from gradeflow.models.result import ChangedFile, EnvironmentFingerprint, GradeComponent, GradeResult
from gradeflow.models.spec import (
    ConstraintsSpec,
    CustomGraderSpec,
    Decision,
    EnvironmentSpec,
    GradingSpec,
    PerfSpec,
    QualitySpec,
    RequiredPattern,
    ReviewSpec,
    Role,
    Status,
    Submission,
    TaskSpec,
    TaskType,
    TestsSpec,
)

__all__ = [
    "ChangedFile",
    "ConstraintsSpec",
    "CustomGraderSpec",
    "Decision",
    "EnvironmentFingerprint",
    "EnvironmentSpec",
    "GradeComponent",
    "GradeResult",
    "GradingSpec",
    "PerfSpec",
    "QualitySpec",
    "RequiredPattern",
    "ReviewSpec",
    "Role",
    "Status",
    "Submission",
    "TaskSpec",
    "TaskType",
    "TestsSpec",
]
