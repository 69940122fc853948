"""How often the automatic verdict agrees with the people who reviewed it: ``gradeflow report --reviews``.

For each reviewed grade the automatic verdict is *approve* when the grade ``passed`` and *reject*
otherwise; the reviewer's is *approve*, or *reject* for reject and retry. Per configuration and overall:
the agreement rate and Cohen's kappa (agreement beyond what the two sides' approve rates give by
chance), and every disagreement with its score and reason codes, so an operator sees where the policy
is wrong. A grade's final decision is the reviewer's where there is one, the automatic one beside it.
A review that timed out is counted, not compared. When a grade was reviewed more than once, the last
answer counts.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from gradeflow.evaluation.ledger import GradeRecord, ReviewRecord
from gradeflow.evaluation.report import check_by, group_records

__all__ = ["AgreementStats", "ReviewReport", "ReviewedGrade", "cohens_kappa", "review_report"]


class ReviewedGrade(BaseModel):
    """One grade and the person's answer to it."""

    key: dict[str, str]
    """The configuration (the report's ``--by`` fields)."""
    task_id: str
    run_id: str
    score: float | None
    passed: bool
    reason_codes: list[str]
    automatic_decision: str
    final_decision: str
    """The reviewer's decision (approve, reject or retry)."""
    reviewer: str

    @property
    def agrees(self) -> bool:
        return self.passed == (self.final_decision == "approve")


class AgreementStats(BaseModel):
    key: dict[str, str]
    reviewed: int
    """Grades with an answer (timed-out reviews left out)."""
    timed_out: int
    agreement: float | None
    kappa: float | None
    """``None`` when chance agreement is 1 (both sides gave one verdict only): kappa is undefined."""


class ReviewReport(BaseModel):
    by: list[str]
    overall: AgreementStats
    groups: list[AgreementStats]
    disagreements: list[ReviewedGrade]
    reviewed: list[ReviewedGrade]


def cohens_kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of (automatic approves, reviewer approves) pairs; ``None`` when undefined."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    auto_yes = sum(a for a, _ in pairs) / n
    human_yes = sum(b for _, b in pairs) / n
    chance = auto_yes * human_yes + (1 - auto_yes) * (1 - human_yes)
    if chance >= 1.0:
        return None
    return round((observed - chance) / (1 - chance), 4)


def _stats(key: dict[str, str], grades: Sequence[ReviewedGrade], timed_out: int) -> AgreementStats:
    pairs = [(g.passed, g.final_decision == "approve") for g in grades]
    agreement = round(sum(a == b for a, b in pairs) / len(pairs), 4) if pairs else None
    return AgreementStats(
        key=key, reviewed=len(pairs), timed_out=timed_out, agreement=agreement, kappa=cohens_kappa(pairs)
    )


def review_report(records: Sequence[GradeRecord], reviews: Sequence[ReviewRecord], by: Sequence[str]) -> ReviewReport:
    """Agreement between the automatic verdicts of ``records`` and the ``reviews`` answering them."""
    fields = check_by(by)
    answers: dict[tuple[str, str], ReviewRecord] = {}
    timed_out: set[tuple[str, str]] = set()
    for review in reviews:  # oldest first: the last answer wins
        if review.decision == "timed-out":
            timed_out.add(review.grade_key)
        else:
            answers[review.grade_key] = review
            timed_out.discard(review.grade_key)
    groups, everyone, timeouts = [], [], 0
    for key, members in group_records(records, fields):
        grades = [_reviewed(key, r, answers[r.key]) for r in members if r.key in answers]
        waited = sum(1 for r in members if r.key in timed_out)
        if grades or waited:
            groups.append(_stats(key, grades, waited))
        everyone += grades
        timeouts += waited
    return ReviewReport(
        by=fields,
        overall=_stats({}, everyone, timeouts),
        groups=groups,
        disagreements=[g for g in everyone if not g.agrees],
        reviewed=everyone,
    )


def _reviewed(key: dict[str, str], record: GradeRecord, review: ReviewRecord) -> ReviewedGrade:
    return ReviewedGrade(
        key=key,
        task_id=record.task_id,
        run_id=record.run_id,
        score=record.score,
        passed=record.passed,
        reason_codes=record.reason_codes,
        automatic_decision=record.decision,
        final_decision=review.decision,
        reviewer=review.reviewer,
    )
