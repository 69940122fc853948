"""What a grade leaves in Prefect: run names, the Inconclusive state, artifacts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

from fakes import BUG, FIX, diff
from gradeflow import load_task
from gradeflow.errors import SandboxUnavailable
from gradeflow.flows.grade import grade_submission
from gradeflow.models import GradeResult, Submission
from gradeflow.sandbox import CommandResult, FakeCall, FakeSandboxFactory

pytestmark = pytest.mark.usefixtures("prefect")


def _artifacts(key: str) -> list[object]:
    async def read() -> list[object]:
        async with get_client() as client:
            return list(await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]))))

    return asyncio.run(read())


def test_a_graded_run_is_named_and_leaves_artifacts(repo_task: Callable[..., Path], fake: FakeSandboxFactory) -> None:
    task = load_task(repo_task(task_id="named"))
    state = grade_submission(task, Submission(submission_id="sub-7", patch=diff(BUG, FIX)), fake, return_state=True)
    assert state.is_completed() and state.name == "Completed"

    async def run_name() -> str:
        async with get_client() as client:
            return (await client.read_flow_run(state.state_details.flow_run_id)).name

    assert asyncio.run(run_name()) == "grade-named-sub-7"
    table = _artifacts("grade-named-sub-7-components")
    summary = _artifacts("grade-named-sub-7-summary")
    assert len(table) == 1 and len(summary) == 1
    assert "PASS 1.000" in summary[0].data  # type: ignore[attr-defined]


def test_an_inconclusive_run_ends_in_a_completed_state_named_inconclusive(repo_task: Callable[..., Path]) -> None:
    def broken(call: FakeCall) -> CommandResult:
        raise SandboxUnavailable("no engine")

    task = load_task(repo_task(task_id="inconclusive"))
    state = grade_submission(task, Submission(patch=""), FakeSandboxFactory(broken), return_state=True)
    assert state.is_completed() and state.name == "Inconclusive"
    result = state.result()
    assert isinstance(result, GradeResult) and result.status == "inconclusive"
