"""Opening a grading session: the settings every grade's flow run is entered under, and the base its grades hold
against another process pruning the environment store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
    get_current_settings,
    temporary_settings,
)

from fakes import BUG, FIX, diff
from gradeflow import load_task
from gradeflow.api import grade_in
from gradeflow.flows.grade import grade_submission
from gradeflow.flows.session import flow_runs_without_heartbeat, open_session
from gradeflow.models import GradeResult, Submission
from gradeflow.sandbox import FakeSandboxFactory
from gradeflow.tasks.tests import acceptance_listener
from store_helpers import prune_elsewhere


def test_flow_runs_have_no_heartbeat_and_the_settings_are_built_once() -> None:
    # Whatever the session's settings say, a heartbeat is configured here, and switched off inside.
    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 30}):
        with flow_runs_without_heartbeat():
            first = get_current_settings()
            assert PREFECT_FLOWS_HEARTBEAT_FREQUENCY.value() is None
        with flow_runs_without_heartbeat():
            assert get_current_settings() is first  # not rebuilt for every grade
        assert PREFECT_FLOWS_HEARTBEAT_FREQUENCY.value() == 30


def test_the_settings_follow_the_current_ones() -> None:
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}), flow_runs_without_heartbeat():
        assert PREFECT_API_URL.value() == "http://127.0.0.1:9/api"
        assert PREFECT_FLOWS_HEARTBEAT_FREQUENCY.value() is None
    with flow_runs_without_heartbeat():
        assert PREFECT_API_URL.value() != "http://127.0.0.1:9/api"


@pytest.fixture
def bases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where this test's bases are kept: a store of its own, which pruning it leaves every other test's alone."""
    monkeypatch.setenv("GRADEFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GRADEFLOW_ROOTS", str(tmp_path / "roots"))
    return tmp_path / "home" / "baselines"


def _kept(bases: Path) -> list[str]:
    return sorted(folder.name for folder in bases.iterdir() if folder.is_dir())


@pytest.mark.usefixtures("prefect")
def test_a_session_holds_its_base_across_its_grades_until_it_is_closed(
    repo_task: Callable[..., Path], fake: FakeSandboxFactory, bases: Path
) -> None:
    spec = load_task(repo_task())
    with open_session(spec, fake) as session:
        assert grade_in(session, Submission.of_patch("first", diff(BUG, FIX))).passed
        [base] = _kept(bases)
        # Between grades too: an agent's episode between two of its grades can outlast the store's RECENT.
        assert prune_elsewhere() == []
        assert grade_in(session, Submission.of_patch("second", "")).status == "graded"
        assert _kept(bases) == [base]
    assert prune_elsewhere() == [base]
    assert _kept(bases) == []


@pytest.mark.slow
@pytest.mark.usefixtures("prefect")
def test_a_grade_holds_the_base_it_takes_until_it_ends(repo_task: Callable[..., Path], bases: Path) -> None:
    spec = load_task(repo_task())
    during: list[list[str]] = []
    token = acceptance_listener.set(lambda submission_id, evidence: during.append(prune_elsewhere()))
    try:  # the grade makes its own sandbox factory: nothing outside it holds the base
        result = grade_submission(spec, Submission.of_patch("s", diff(BUG, FIX)), "local")
    finally:
        acceptance_listener.reset(token)
    assert isinstance(result, GradeResult) and result.status == "graded"
    assert during == [[]]  # pruned after the tests step, with the quality and perf steps still to run
    [base] = _kept(bases)
    assert prune_elsewhere() == [base]
