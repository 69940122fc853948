"""A grade as the ledger keeps it: the planned suite item, its keys, and the record of its result. Pure.

A submission whose grade crashed still gets a record (:func:`crash_result`): the environment's failure
is inconclusive with its reason code, the submission's fault a graded failure, so no submission drops
out of the pass rate.
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict

from gradeflow.errors import InfraError, SubmissionError
from gradeflow.evaluation.ledger import GradeRecord
from gradeflow.evaluation.suite import SuiteItem
from gradeflow.graders.verdict import inconclusive_result, refused_result
from gradeflow.graders.withheld import withhold_hidden_timings, withholds_hidden_details
from gradeflow.models import GradeResult, TaskSpec
from gradeflow.profiles import load_profile

__all__ = ["PlannedGrade", "crash_result", "record_for", "repository_key"]


class PlannedGrade(BaseModel):
    """One suite item with its task spec and the keys that identify its record."""

    model_config = ConfigDict(frozen=True)

    item: SuiteItem
    task: TaskSpec
    content_key: str
    patch_hash: str
    repository_revision: str

    @property
    def key(self) -> tuple[str, str]:
        return self.content_key, self.item.run_id

    @property
    def label(self) -> str:
        return f"{self.item.task_id} {self.item.model_id} {self.item.run_id}"


def repository_key(task: TaskSpec) -> str:
    """A name for the task's repository, the same for every task on it (a hash: the ledger keeps no paths).

    Reports cluster by it (``labels.repository``); a suite item's own ``repository`` label wins.
    """
    return hashlib.sha256(task.repo.encode()).hexdigest()[:12]


def record_for(planned: PlannedGrade, result: GradeResult, seconds: float) -> GradeRecord:
    """The ledger record of one grade: identifiers, counts, scores and codes (no text of any kind)."""
    counts = _test_counts(result)
    # With hidden tests the grade's total time carries the hidden run's duration too: neither is kept.
    withheld = withholds_hidden_details(planned.task)
    timings = withhold_hidden_timings(planned.task, result).timings
    timings = timings if withheld else {**timings, "total": round(seconds, 4)}
    environment = result.environment.model_dump_json() if result.environment else "unknown"
    item = planned.item
    return GradeRecord(
        run_id=item.run_id,
        task_id=item.task_id,
        submission_id=item.submission.submission_id,
        content_key=planned.content_key,
        task_spec_hash=planned.task.spec_hash(),
        patch_hash=planned.patch_hash,
        repository_revision=planned.repository_revision,
        environment_fingerprint=hashlib.sha256(environment.encode()).hexdigest()[:16],
        model_id=item.model_id,
        prompt_revision=item.prompt_revision,
        grader_revision=result.gradeflow_version,
        profile=result.profile,
        labels={"repository": repository_key(planned.task), **item.labels},
        tool_calls=item.tool_calls,
        tests_passed=counts[0] if counts else None,
        tests_failed=counts[1] if counts else None,
        files_changed=len(result.files_changed),
        lines_added=result.lines_added,
        lines_removed=result.lines_removed,
        component_scores={c.name: round(c.score, 6) for c in result.components},
        dimension_scores=dict(result.dimensions),
        score=result.score,
        passed=result.passed,
        decision=result.decision,
        reason_codes=list(result.reason_codes),
        status=result.status,
        timings=timings,
    )


def crash_result(planned: PlannedGrade, error: Exception, profile: str | None) -> GradeResult:
    """The result recorded for a grade that raised ``error`` instead of returning.

    The submission's fault (``SubmissionError``) is a graded failure with its reason code; the environment's
    (``InfraError``) is inconclusive with its reason code; anything else is gradeflow's own failure,
    inconclusive ``internal-error``.
    """
    task, submission_id = planned.task, planned.item.submission.submission_id
    policy = load_profile(profile or task.grading.profile)
    message = f"the grade did not finish: {type(error).__name__}: {error}"
    patch = planned.item.submission.diff() or ""
    if isinstance(error, SubmissionError):
        return refused_result(task, submission_id, error.reason_code, message, policy, patch=patch)
    code = error.reason_code if isinstance(error, InfraError) else "internal-error"
    return inconclusive_result(
        task, submission_id, code, message, policy.name, patch=patch, dimensions=dict.fromkeys(policy.dimensions)
    )


def _test_counts(result: GradeResult) -> tuple[int, int] | None:
    try:
        counts = result.component("tests").details.get("counts", {})
    except KeyError:
        return None
    return int(counts.get("passed", 0)), int(counts.get("failed", 0)) + int(counts.get("error", 0))
