"""A person in the loop, against a real ``prefect server start`` and ``gradeflow serve``.

A served grade that ends ``human-review`` starts a ``review-grade`` run that waits (paused, holding no
sandbox slot) with a typed form; the test looks at the form in the Prefect UI (headless Chromium), then
answers it through Prefect's API as the UI would, and the reviews table holds the answer beside the
automatic decision.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from chromium_page import ChromiumPage
from service_procs import SECRET, Service, grade_payload, signed_post, wait_until

from gradeflow.evaluation.ledger import Ledger

pytestmark = pytest.mark.slow


def _paused_review(service: Service, name: str) -> dict[str, Any]:
    def paused() -> dict[str, Any] | None:
        runs = service.api.runs_named(name)
        return runs[0] if runs and runs[0]["state_type"] == "PAUSED" else None

    return wait_until(paused, 180, f"the review run {name} to wait for its answer")


def test_a_served_human_review_grade_waits_for_a_reviewer_and_records_the_answer(
    service: Service, chromium: str, tmp_path: Path
) -> None:
    # The calc fix without a regression test under the rubric profile: behavior 1.0, test evidence 0 → human-review.
    payload = {**grade_payload("review-1"), "profile": "rubric"}
    response = signed_post(f"{service.webhook}/hooks/grade", payload, SECRET, "delivery-review-1")
    assert response.status_code == 202, response.text
    grade = service.api.wait_final(response.json()["flow_run_id"], 180)
    assert grade["state_type"] == "COMPLETED" and "decision:human-review" in grade["tags"]

    review = _paused_review(service, "review-calc-divzero-review-1")
    assert review["deployment_id"] == service.api.deployment("review-grade/ask-reviewer")["id"]  # type: ignore[index]

    # The form as a reviewer sees it in the Prefect UI.
    page = ChromiumPage(chromium, tmp_path / "profile")
    try:
        page.goto(service.api_url.removesuffix("/api") + f"/runs/flow-run/{review['id']}")
        page.wait_for_text(["review-calc-divzero-review-1", "Paused"], 60)
        page.evaluate("[...document.querySelectorAll('button')].find(b => b.innerText.trim() === 'Resume').click()")
        form = page.wait_for_text(["Reviewer", "Decision", "human-review", "missing-regression-test"], 60)
        assert "test_evidence" in form
        shot = Path(os.environ.get("GRADEFLOW_REVIEW_SCREENSHOT") or tmp_path / "review-form.png")
        page.screenshot(shot)
        assert shot.stat().st_size > 10_000
    finally:
        page.close()

    # A form with a missing reviewer name is refused; a complete one resumes the run.
    refused = service.api.client.post(
        f"flow_runs/{review['id']}/resume", json={"run_input": {"decision": "approve", "reviewer": ""}}
    )
    assert refused.status_code in (200, 201) and refused.json()["status"] == "REJECT", refused.text
    answer = {"decision": "approve", "reviewer": "ana", "note": "Fine without a test: the issue had one."}
    accepted = service.api.client.post(f"flow_runs/{review['id']}/resume", json={"run_input": answer})
    assert accepted.status_code in (200, 201) and accepted.json()["status"] == "ACCEPT", accepted.text
    done = service.api.wait_final(review["id"], 120)
    assert done["state_type"] == "COMPLETED", done

    ledger = Ledger(str(service.ledger))
    try:
        grades = {r.run_id: r for r in ledger.records()}
        (answered,) = [r for r in ledger.reviews() if r.run_id == "review-1"]
    finally:
        ledger.close()
    assert (answered.reviewer, answered.decision, answered.automatic_decision) == ("ana", "approve", "human-review")
    assert answered.content_key == grades["review-1"].content_key and answered.review_run_id == review["id"]
    # The note is in an artifact of the review run, not in the ledger.
    notes = [a for a in service.api.artifacts(review["id"]) if a.get("key") == "review-note"]
    assert notes and "the issue had one" in notes[0]["data"]
