"""Building :class:`GradeResult` values: graded, refused, and inconclusive. Pure functions."""

from __future__ import annotations

from collections.abc import Sequence

from gradeflow.config import gradeflow_version
from gradeflow.graders.composite import combine
from gradeflow.models import ChangedFile, EnvironmentFingerprint, GradeComponent, GradeResult, TaskSpec
from gradeflow.policy import Profile

__all__ = ["graded_result", "inconclusive_result", "refused_result", "task_weights"]


def task_weights(
    task: TaskSpec, profile: Profile, custom: dict[str, float] | None = None
) -> dict[str, float]:
    """Objective weights: the profile's, then custom graders' own, then the task's ``grading.weights``."""
    return {**profile.weights, **(custom or {}), **task.grading.weights}


def graded_result(
    task: TaskSpec,
    submission_id: str,
    components: Sequence[GradeComponent],
    profile: Profile,
    *,
    patch: str,
    changes: Sequence[ChangedFile],
    environment: EnvironmentFingerprint | None = None,
    weights: dict[str, float] | None = None,
) -> GradeResult:
    """Combine the components under the profile into a graded result."""
    threshold = task.grading.pass_threshold
    combined = combine(
        components,
        weights if weights is not None else task_weights(task, profile),
        profile.pass_threshold if threshold is None else threshold,
    )
    codes = [code for c in combined.components for code in c.reason_codes]
    if not changes:
        codes.insert(0, "empty-patch")
    hard = [c for c in codes if c in profile.hard_gates]
    decision = profile.decide(combined.score, combined.gate_failed or bool(hard))
    return GradeResult(
        task_id=task.task_id,
        submission_id=submission_id,
        status="graded",
        score=combined.score,
        passed=combined.passed and not hard,
        decision=decision,
        reason_codes=list(dict.fromkeys(codes)),
        components=combined.components,
        files_changed=[c.path for c in changes],
        lines_added=sum(c.lines_added for c in changes),
        lines_removed=sum(c.lines_removed for c in changes),
        patch=patch,
        profile=profile.name,
        environment=environment,
        gradeflow_version=gradeflow_version(),
    )


def refused_result(
    task: TaskSpec,
    submission_id: str,
    reason_code: str,
    message: str,
    profile: Profile,
    *,
    patch: str,
    environment: EnvironmentFingerprint | None = None,
) -> GradeResult:
    """A submission that could not be graded by its own fault: a failed ``patch`` gate, score 0."""
    gate = GradeComponent(
        name="patch", role="gate", score=0.0, passed=False, messages=[message], reason_codes=[reason_code]
    )
    return GradeResult(
        task_id=task.task_id,
        submission_id=submission_id,
        status="graded",
        score=0.0,
        passed=False,
        decision="rejected",
        reason_codes=[reason_code],
        components=[gate],
        patch=patch,
        messages=[message],
        profile=profile.name,
        environment=environment,
        gradeflow_version=gradeflow_version(),
    )


def inconclusive_result(
    task: TaskSpec,
    submission_id: str,
    reason_code: str,
    message: str,
    profile_name: str,
    *,
    components: Sequence[GradeComponent] = (),
    patch: str = "",
    changes: Sequence[ChangedFile] = (),
    environment: EnvironmentFingerprint | None = None,
) -> GradeResult:
    """The environment failed: no score, the reason, and whatever evidence was gathered."""
    return GradeResult(
        task_id=task.task_id,
        submission_id=submission_id,
        status="inconclusive",
        score=None,
        passed=False,
        decision="inconclusive",
        reason_codes=[reason_code],
        components=list(components),
        files_changed=[c.path for c in changes],
        lines_added=sum(c.lines_added for c in changes),
        lines_removed=sum(c.lines_removed for c in changes),
        patch=patch,
        messages=[message],
        profile=profile_name,
        environment=environment,
        gradeflow_version=gradeflow_version(),
    )
