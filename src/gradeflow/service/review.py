"""A person in the loop: the ``review-grade`` flow a served grade starts when it needs one.

A served grade (a ``grade-request`` run of a deployment, not a one-shot CLI call) that ends
``human-review``, or carries a reason code its profile lists under ``review.ask_human``, finishes as
usual and then starts a ``review-grade`` run of the ``review-grade/ask-reviewer`` deployment. That run
pauses with a typed form (:class:`ReviewInput`, a Prefect ``RunInput``): the patch summary, the
components, the reason codes and the task's ``review.questions`` above the choices approve / reject /
retry, a reviewer name (self-declared: a self-hosted server has no users) and a note. It grades nothing
and holds no sandbox slot while it waits. The answer goes to the ledger's reviews table beside the
grade (grade key, reviewer, decision, the automatic decision, time); the note goes to a markdown
artifact on the review run, never the ledger. No answer within ``review.timeout_hours`` (default 24)
records ``timed-out`` (reason ``review-timed-out`` on the run's result).
"""

from __future__ import annotations

from typing import Literal

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.exceptions import FlowPauseTimeout
from prefect.flow_runs import pause_flow_run
from prefect.input import RunInput
from prefect.runtime import flow_run
from pydantic import BaseModel, ConfigDict, Field

from gradeflow.engine.credentials import private_ledger
from gradeflow.evaluation.ledger import Ledger, ReviewRecord
from gradeflow.models import GradeResult
from gradeflow.models.spec import Decision
from gradeflow.text import for_markdown, markdown_code

__all__ = ["REVIEW_DEPLOYMENT", "ComponentLine", "ReviewInput", "ReviewRequest", "review_form", "review_grade"]

REVIEW_DEPLOYMENT = "review-grade/ask-reviewer"
"""Full name (``flow/deployment``) of the deployment that asks a person about one grade."""


class ReviewInput(RunInput):
    """What the reviewer answers in the Prefect UI's form."""

    decision: Literal["approve", "reject", "retry"]
    """approve: merge it; reject: it is wrong; retry: send it back to the agent."""
    reviewer: str = Field(min_length=1, max_length=200)
    """Your name (self-declared)."""
    note: str = Field(default="", max_length=5000)
    """Why, for the record (kept in an artifact of this run, not in the ledger)."""


class ComponentLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    score: float
    passed: bool
    role: str
    reason_codes: list[str] = Field(default_factory=list)


class ReviewRequest(BaseModel):
    """One grade to ask a person about; what the review run shows and where it records the answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    submission_id: str
    content_key: str
    """With ``run_id``, the grade's key in the ledger."""
    run_id: str
    ledger: str | None = None
    """Where the answer is recorded (the grade's ledger); default ``$GRADEFLOW_DATABASE_URL`` or the local file."""
    score: float | None
    passed: bool
    decision: Decision
    reason_codes: list[str] = Field(default_factory=list)
    components: list[ComponentLine] = Field(default_factory=list)
    files_changed: list[str] = Field(default_factory=list)
    lines_added: int = 0
    lines_removed: int = 0
    questions: list[str] = Field(default_factory=list)
    """The task's ``review.questions``."""
    timeout_seconds: int = Field(default=24 * 3600, ge=1)
    poll_seconds: int = Field(default=10, ge=1)

    @classmethod
    def for_grade(
        cls,
        result: GradeResult,
        *,
        content_key: str,
        run_id: str,
        ledger: str | None,
        questions: list[str],
        timeout_hours: float,
    ) -> ReviewRequest:
        return cls(
            task_id=result.task_id,
            submission_id=result.submission_id,
            content_key=content_key,
            run_id=run_id,
            ledger=ledger,
            score=result.score if result.status == "graded" else None,
            passed=result.passed,
            decision=result.decision,
            reason_codes=result.reason_codes,
            components=[
                ComponentLine(name=c.name, score=c.score, passed=c.passed, role=c.role, reason_codes=c.reason_codes)
                for c in result.components
            ],
            files_changed=result.files_changed[:50],
            lines_added=result.lines_added,
            lines_removed=result.lines_removed,
            questions=questions,
            timeout_seconds=max(1, round(timeout_hours * 3600)),
        )


def _cell(text: str) -> str:
    """Literal text in the form's markdown (a file name or test id may hold CR/LF, backticks, links)."""
    return for_markdown(text)


def review_form(request: ReviewRequest) -> str:
    """The markdown above the form: what was graded, how, and what the task asks a reviewer."""
    score = "–" if request.score is None else f"{request.score:.3f}"
    lines = [
        f"## Review {_cell(request.task_id)} / {_cell(request.submission_id)}",
        f"Automatic decision **{request.decision}**, score {score}, {'passed' if request.passed else 'not passed'}.",
        f"Reason codes: {', '.join(f'`{c}`' for c in request.reason_codes) or 'none'}.",
        "",
        f"Patch: {len(request.files_changed)} files, +{request.lines_added} / -{request.lines_removed} lines",
    ]
    lines += [f"- {markdown_code(path)}" for path in request.files_changed]
    lines += ["", "| component | role | score | passed | reason codes |", "|---|---|---|---|---|"]
    lines += [
        f"| {_cell(c.name)} | {c.role} | {c.score:.2f} | {'yes' if c.passed else 'no'} | {', '.join(c.reason_codes)} |"
        for c in request.components
    ]
    if request.questions:
        lines += ["", "Questions for the reviewer:"] + [f"1. {_cell(q)}" for q in request.questions]
    lines += ["", "Answer approve, reject (the patch is wrong) or retry (send it back), with your name."]
    return "\n".join(lines)


def _record(request: ReviewRequest, reviewer: str, decision: str) -> None:
    ledger = Ledger(private_ledger(request.ledger))
    try:
        ledger.add_review(
            ReviewRecord(
                content_key=request.content_key,
                run_id=request.run_id,
                reviewer=reviewer,
                decision=decision,  # type: ignore[arg-type]
                automatic_decision=request.decision,
                review_run_id=flow_run.get_id() or "",
            )
        )
    finally:
        ledger.close()


@flow(name="review-grade", flow_run_name="review-{request.task_id}-{request.submission_id}", persist_result=False)
def review_grade(request: ReviewRequest) -> str:
    """Wait for a person's answer about one grade and record it; returns the decision or ``timed-out``."""
    logger = get_run_logger()
    form = ReviewInput.with_initial_data(description=review_form(request))
    try:
        answer = pause_flow_run(
            wait_for_input=form, timeout=request.timeout_seconds, poll_interval=request.poll_seconds, key="review"
        )
    except FlowPauseTimeout:
        _record(request, "", "timed-out")
        logger.warning("review-timed-out: no answer within %d s", request.timeout_seconds)
        return "timed-out"
    _record(request, answer.reviewer, answer.decision)
    if answer.note:
        create_markdown_artifact(
            key="review-note",
            markdown=f"**{_cell(answer.reviewer)}** answered **{answer.decision}**:\n\n{answer.note}",
            description=f"Review of {request.task_id} / {request.submission_id}",
        )
    logger.info("review recorded: %s by %s", answer.decision, answer.reviewer)
    return answer.decision
