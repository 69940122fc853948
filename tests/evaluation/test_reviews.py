"""Review answers beside the ledger, and how often the automatic verdict agrees with them (``report --reviews``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluate_helpers import database, record
from gradeflow.cli import main
from gradeflow.evaluation.ledger import GradeRecord, Ledger, ReviewRecord
from gradeflow.evaluation.report import build_report
from gradeflow.evaluation.report_html import render_html
from gradeflow.evaluation.reviews import cohens_kappa, review_report


@pytest.mark.parametrize(
    ("pairs", "kappa"),
    [
        # 20 pairs: a yes/yes, b yes/no, c no/yes, d no/no = 10, 2, 3, 5 → po 0.75, pe 0.6*0.65+0.4*0.35 = 0.53.
        ([(True, True)] * 10 + [(True, False)] * 2 + [(False, True)] * 3 + [(False, False)] * 5, 0.4681),
        ([(True, True), (False, False)] * 3, 1.0),
        ([(True, False), (False, True)] * 3, -1.0),
        ([(True, True), (True, False), (False, True), (False, False)], 0.0),
        ([(True, True)] * 4, None),  # both sides said one thing only: chance agreement is 1, kappa undefined
        ([], None),
    ],
)
def test_cohens_kappa(pairs: list[tuple[bool, bool]], kappa: float | None) -> None:
    assert cohens_kappa(pairs) == (None if kappa is None else pytest.approx(kappa, abs=1e-4))


def _review(grade: GradeRecord, decision: str, reviewer: str = "ana", run: str = "") -> ReviewRecord:
    return ReviewRecord(
        content_key=grade.content_key,
        run_id=grade.run_id,
        reviewer=reviewer,
        decision=decision,  # type: ignore[arg-type]
        automatic_decision=grade.decision,
        review_run_id=run or f"{grade.run_id}-{decision}",
    )


GRADES = [
    record(run_id="a1", content_key="k1", model_id="m-a", passed=True, score=0.9, decision="merge-candidate"),
    record(run_id="a2", content_key="k2", model_id="m-a", passed=False, score=0.7, decision="human-review",
           reason_codes=["missing-regression-test"]),
    record(run_id="a3", content_key="k3", model_id="m-a", passed=False, score=0.2, decision="retry"),
    record(run_id="b1", content_key="k4", model_id="m-b", passed=False, score=0.7, decision="human-review"),
    record(run_id="b2", content_key="k5", model_id="m-b", passed=True, score=1.0, decision="merge-candidate"),
]  # fmt: skip
REVIEWS = [
    _review(GRADES[0], "approve"),
    _review(GRADES[1], "approve", "bo"),  # disagrees: not passed, approved
    _review(GRADES[2], "retry"),  # retry counts as reject: agrees
    _review(GRADES[3], "timed-out", ""),
    _review(GRADES[4], "reject"),  # first answer
    _review(GRADES[4], "approve", "cy"),  # the last answer counts
]


def test_agreement_per_configuration_and_overall_with_the_disagreements() -> None:
    found = review_report(GRADES, REVIEWS, ["model_id"])
    by_model = {s.key["model_id"]: s for s in found.groups}
    assert (by_model["m-a"].reviewed, by_model["m-a"].agreement, by_model["m-a"].timed_out) == (3, 0.6667, 0)
    assert (by_model["m-b"].reviewed, by_model["m-b"].agreement, by_model["m-b"].timed_out) == (1, 1.0, 1)
    assert (found.overall.reviewed, found.overall.agreement) == (4, 0.75)
    assert found.overall.kappa == cohens_kappa([(True, True), (False, True), (False, False), (True, True)])
    (wrong,) = found.disagreements
    assert (wrong.run_id, wrong.automatic_decision, wrong.final_decision, wrong.reviewer) == (
        "a2", "human-review", "approve", "bo"
    )  # fmt: skip
    assert wrong.reason_codes == ["missing-regression-test"]
    final = {g.run_id: (g.automatic_decision, g.final_decision) for g in found.reviewed}
    assert final["b2"] == ("merge-candidate", "approve") and "b1" not in final


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_reviews_are_kept_beside_the_grades_once_per_review_run(kind: str, tmp_path: Path) -> None:
    with database(kind, tmp_path) as url:
        ledger = Ledger(url)
        try:
            for grade in GRADES:
                ledger.add(grade)
            assert all(ledger.add_review(r) for r in REVIEWS)
            assert not ledger.add_review(REVIEWS[0])  # the same review run answering twice is one answer
            kept = ledger.reviews()
        finally:
            ledger.close()
    assert [(r.run_id, r.decision, r.reviewer) for r in kept] == [(r.run_id, r.decision, r.reviewer) for r in REVIEWS]
    assert all(r.created_at.tzinfo is not None for r in kept)


def test_report_reviews_prints_agreement_and_disagreements(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(url)
    for grade in GRADES:
        ledger.add(grade)
    for review in REVIEWS:
        ledger.add_review(review)
    ledger.close()
    assert main(["report", "--ledger", url, "--reviews", "--by", "model_id", "--html", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    assert "4 reviewed grades of 5, by model_id" in out
    assert "m-a: reviewed=3 agreement=0.67" in out and "m-b: reviewed=1 agreement=1.00 kappa=– timed out=1" in out
    assert "overall: reviewed=4 agreement=0.75" in out
    assert "t1 a2 [m-a]: score 0.700 human-review (reject) -> approve by bo; reasons: missing-regression-test" in out
    page = (tmp_path / "r.html").read_text()
    assert "<h2>Reviews</h2>" in page and "Cohen's kappa" in page and "missing-regression-test" in page
    assert main(["report", "--ledger", url, "--reviews", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"by", "overall", "groups", "disagreements", "reviewed"}


def test_the_html_report_has_no_reviews_section_without_answers() -> None:
    page = render_html(build_report(GRADES, ["model_id"]), GRADES)
    assert "<h2>Reviews</h2>" not in page
