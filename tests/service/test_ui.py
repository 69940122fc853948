"""The Prefect UI shows a grade as a person would look at it: headless Chromium on the flow run page."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from chromium_page import ChromiumPage
from service_procs import Delivery, Service

pytestmark = pytest.mark.slow

TASKS = [
    "environment",
    "baseline",
    "snapshot",
    "constraints",
    "test-infrastructure",
    "tamper",
    "tests",
    "quality",
    "perf",
    "combine",
]


def test_the_flow_run_page_shows_the_tasks_tags_and_artifacts(
    service: Service, graded: Delivery, chromium: str, tmp_path: Path
) -> None:
    page = ChromiumPage(chromium, tmp_path / "profile")
    url = service.api_url.removesuffix("/api") + f"/runs/flow-run/{graded.run['id']}"
    try:
        page.goto(url)
        # The header: run name, tags, the flow and the deployment it came from.
        page.wait_for_text(["grade-calc-divzero-webhook-1", "decision:merge-candidate", "grade-submission"], 60)
        page.click("task-runs")
        listing = page.wait_for_text([f"{name}-" for name in TASKS], 30)
        # The base was pinned once when the request was checked and passed on: no pin-base run here.
        assert "10 Task runs" in listing or "(10 Completed)" in listing
        page.click("artifacts")
        page.wait_for_text(["grade-calc-divzero-webhook-1-summary", "grade-calc-divzero-webhook-1-components"], 30)
        shot = Path(os.environ.get("GRADEFLOW_UI_SCREENSHOT") or tmp_path / "flow-run.png")
        page.screenshot(shot)
        assert shot.stat().st_size > 10_000
    finally:
        page.close()
