"""The review loop's parts: when a served grade asks a person, what the form shows, and a review that times out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gradeflow.service.flows as service_flows
from gradeflow.evaluation.ledger import Ledger
from gradeflow.models import GradeComponent, GradeResult
from gradeflow.profiles import load_profile
from gradeflow.service.params import GradeRequest
from gradeflow.service.review import REVIEW_DEPLOYMENT, ReviewRequest, review_form, review_grade
from gradeflow.spec import load_task

CALC = Path(__file__).resolve().parents[2] / "examples" / "calc" / "task.yaml"


def _result(decision: str, reasons: list[str], passed: bool = False, status: str = "graded") -> GradeResult:
    component = GradeComponent(name="tests", role="objective", score=1.0, passed=True, reason_codes=[])
    return GradeResult.model_validate(
        {
            "task_id": "calc-divzero",
            "submission_id": "s1",
            "status": status,
            "score": 0.7,
            "passed": passed,
            "decision": decision,
            "reason_codes": reasons,
            "components": [component.model_dump()],
            "files_changed": ["src/calc.py"],
            "lines_added": 5,
            "lines_removed": 2,
        }
    )


class _Session:
    def __init__(self, profile: str, ask_human: list[str] | None = None) -> None:
        policy = load_profile(profile)
        review = policy.review.model_copy(update={"ask_human": ask_human or []})
        self.profile = policy.model_copy(update={"review": review})
        self.task_spec = load_task(CALC).model_copy(deep=True)
        self.task_spec.review.questions.append("Does the message match the issue's wording?")


@pytest.mark.parametrize(
    ("served", "decision", "reasons", "ask_human", "asked"),
    [
        (True, "human-review", ["missing-regression-test"], [], True),
        (True, "retry", ["fail-to-pass-failing"], ["fail-to-pass-failing"], True),  # the profile asks for it
        (True, "retry", ["fail-to-pass-failing"], [], False),
        (True, "merge-candidate", [], [], False),
        (False, "human-review", ["missing-regression-test"], [], False),  # a one-shot call asks no one
    ],
)
def test_a_served_grade_asks_a_person_when_its_decision_or_profile_says_so(
    monkeypatch: pytest.MonkeyPatch, served: bool, decision: str, reasons: list[str], ask_human: list[str], asked: bool
) -> None:
    started: list[dict[str, Any]] = []
    monkeypatch.setattr(service_flows.deployment, "get_id", lambda: "d-1" if served else None)
    monkeypatch.setattr(
        "prefect.deployments.run_deployment", lambda name, **kwargs: started.append({"name": name, **kwargs})
    )
    monkeypatch.setattr(service_flows, "get_run_logger", lambda: __import__("logging").getLogger("t"))
    request = GradeRequest(task_id="calc-divzero", task_path=str(CALC), submission_id="s1", patch="", ledger="x.db")
    service_flows._ask_for_review(request, _Session("rubric", ask_human), _result(decision, reasons), "key-1")  # type: ignore[arg-type]
    assert bool(started) == asked
    if asked:
        (call,) = started
        assert call["name"] == REVIEW_DEPLOYMENT and call["timeout"] == 0 and call["as_subflow"] is False
        review = ReviewRequest.model_validate(call["parameters"]["request"])
        assert (review.content_key, review.run_id, review.ledger, review.decision) == ("key-1", "s1", "x.db", decision)
        assert review.questions == ["Does the message match the issue's wording?"]
        assert review.timeout_seconds == 24 * 3600


def test_a_profile_naming_an_unknown_code_under_ask_human_is_refused(tmp_path: Path) -> None:
    from gradeflow.errors import SpecError

    profile = tmp_path / "p.yaml"
    profile.write_text("name: p\nreview:\n  ask_human: [fail-to-pass-faling]\n")
    with pytest.raises(SpecError, match=r"review\.ask_human: unknown reason code 'fail-to-pass-faling'"):
        load_profile(str(profile))


def test_the_form_shows_the_grade_and_the_tasks_questions() -> None:
    review = ReviewRequest.for_grade(
        _result("human-review", ["missing-regression-test"]),
        content_key="k",
        run_id="s1",
        ledger=None,
        questions=["Is | the fix minimal?"],
        timeout_hours=1,
    )
    form = review_form(review)
    assert "Automatic decision **human-review**, score 0.700, not passed." in form
    assert "`missing-regression-test`" in form and "`src/calc.py`" in form and "+5 / -2 lines" in form
    assert "| tests | objective | 1.00 | yes |  |" in form
    assert "1. Is \\| the fix minimal?" in form


@pytest.mark.slow
def test_a_review_nobody_answers_records_timed_out(prefect: None, tmp_path: Path) -> None:
    del prefect
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    review = ReviewRequest.for_grade(
        _result("human-review", []), content_key="k", run_id="s1", ledger=url, questions=[], timeout_hours=1
    ).model_copy(update={"timeout_seconds": 2, "poll_seconds": 1})
    assert review_grade(review) == "timed-out"
    ledger = Ledger(url)
    try:
        (kept,) = ledger.reviews()
    finally:
        ledger.close()
    assert (kept.decision, kept.reviewer, kept.automatic_decision, kept.run_id) == (
        "timed-out",
        "",
        "human-review",
        "s1",
    )
