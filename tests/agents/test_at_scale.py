"""Trials at scale: a killed run resumed runs each trial once, Dask workers, and the report's configurations."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agents.conftest import CALC
from gradeflow.agents import TrialConfig, TrialRun, plan_trials, run_trials
from gradeflow.cli.main import main
from gradeflow.evaluation.ledger import Ledger
from gradeflow.spec import load_task

SLOW_SED = "sed -i 's/return None/raise ZeroDivisionError(\"division by zero is undefined\")/' src/calc.py; sleep 2"


def _completed_trials(since: datetime) -> Counter[str]:
    """``agent-trial`` flow runs that completed since ``since``, counted by name."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterStartTime

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["agent-trial"])),
            flow_run_filter=FlowRunFilter(start_time=FlowRunFilterStartTime(after_=since)),  # type: ignore[arg-type]
        )
    return Counter(run.name for run in runs if run.state is not None and run.state.is_completed())


def _grades_started(since: datetime) -> int:
    """``grade-submission`` flow runs started since ``since``: a trial's grade starts once its agent has finished
    (flow runs are created through the API as they start; task runs reach it from their events, later)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterStartTime

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["grade-submission"])),
            flow_run_filter=FlowRunFilter(start_time=FlowRunFilterStartTime(after_=since)),  # type: ignore[arg-type]
        )
    return len(runs)


def _start_cli(ledger: Path, repeat: int = 4) -> subprocess.Popen[bytes]:
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    command = [sys.executable, "-m", "gradeflow.cli", "run", str(CALC), "--agent", SLOW_SED, "--repeat", str(repeat)]
    command += ["--ledger", str(ledger), "--no-progress"]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def _wait_for_records(ledger: Path, at_least: int, proc: subprocess.Popen[bytes]) -> int:
    reader = Ledger(str(ledger))
    try:
        for _ in range(600):
            count = len(reader.records())
            if count >= at_least or proc.poll() is not None:
                return count
            time.sleep(0.5)
    finally:
        reader.close()
    raise AssertionError("no trial was recorded in 300 s")


@pytest.mark.usefixtures("prefect")
def test_a_run_killed_halfway_and_resumed_runs_each_trial_once(tmp_path: Path) -> None:
    since = datetime.now(UTC)
    path = tmp_path / "ledger.db"
    proc = _start_cli(path)
    try:
        before = _wait_for_records(path, 2, proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert 1 <= before < 4
    ledger = Ledger(str(path))
    plan = plan_trials([load_task(CALC)], TrialConfig(agent=SLOW_SED), 4)
    done = run_trials(plan, ledger, show_progress=False)
    assert (done.skipped, done.ran, done.failed) == (before, 4 - before, [])
    assert sorted(r.run_id for r in ledger.records()) == [f"trial-{i}" for i in range(1, 5)]
    assert sorted(t.run_id for t in ledger.trials()) == [f"trial-{i}" for i in range(1, 5)]
    assert all(r.passed for r in done.records)
    assert _completed_trials(since) == {f"trial-calc-divzero-trial-{i}": 1 for i in range(1, 5)}
    ledger.close()


def _completed_agent_runs(since: datetime, name: str) -> int:
    """``run-agent`` task runs named ``name`` that completed since ``since``."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName, TaskRunFilterStartTime

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            task_run_filter=TaskRunFilter(
                name=TaskRunFilterName(any_=[name]),
                start_time=TaskRunFilterStartTime(after_=since),  # type: ignore[arg-type]
            )
        )
    return sum(1 for run in runs if run.state is not None and run.state.is_completed())


def _agent_runs_reach(since: datetime, name: str, count: int, wait: float = 30.0) -> int:
    """:func:`_completed_agent_runs`, read again until it reaches ``count`` or ``wait`` seconds passed: the server
    records task runs from their events in batches (tests/conftest.py), up to a second after the run ended."""
    deadline = time.monotonic() + wait
    while (found := _completed_agent_runs(since, name)) < count and time.monotonic() < deadline:
        time.sleep(0.25)
    return found


@pytest.mark.usefixtures("prefect")
def test_a_run_killed_after_the_agent_ran_runs_that_trial_again_whole(tmp_path: Path) -> None:
    """Killed once trial-1's agent finished (its facts known, its grade under way): nothing of trial-1 is
    recorded, and the resumed run runs its agent again and records both records once."""
    since, path = datetime.now(UTC), tmp_path / "ledger.db"
    proc = _start_cli(path, repeat=1)
    try:
        for _ in range(3000):
            if _grades_started(since) or proc.poll() is not None:
                break
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    ledger = Ledger(str(path))
    assert (ledger.records(), ledger.trials()) == ([], [])
    done = run_trials(plan_trials([load_task(CALC)], TrialConfig(agent=SLOW_SED), 1), ledger, show_progress=False)
    assert (done.ran, done.skipped, done.failed) == (1, 0, [])
    assert _agent_runs_reach(since, "agent-calc-divzero-trial-1", 2) == 2  # the agent ran again
    assert _completed_trials(since) == {"trial-calc-divzero-trial-1": 1}
    ((record,), (trial,)) = ledger.records(), ledger.trials()
    assert record.passed and trial.exit_code == 0 and trial.flow_run_id == done.trials[0].flow_run_id
    ledger.close()


@pytest.mark.usefixtures("prefect")
def test_half_a_trial_in_the_ledger_is_run_again_and_replaced(ledger: Ledger, tmp_path: Path) -> None:
    """A trial record without its grade record, or a grade record without its trial record (what a crash
    between two separate writes left): the trial is not complete, so it runs again and both are replaced."""
    plan = plan_trials([load_task(CALC)], TrialConfig(agent="nop"), 1)
    first = run_trials(plan, ledger, show_progress=False)
    (record,), (trial,) = first.records, first.trials
    grade_only, trial_only = Ledger(str(tmp_path / "grade-only.db")), Ledger(str(tmp_path / "trial-only.db"))
    grade_only.add(record)
    trial_only.add_trial(trial.model_copy(update={"exit_code": 99, "flow_run_id": "stale"}))
    for half in (grade_only, trial_only):
        done = run_trials(plan, half, show_progress=False)
        assert (done.ran, done.skipped) == (1, 0)
        ((again,), (agent,)) = half.records(), half.trials()
        assert again.created_at > record.created_at and agent.exit_code == 0 and agent.flow_run_id != "stale"
        assert run_trials(plan, half, show_progress=False).skipped == 1
        half.close()


@pytest.mark.usefixtures("prefect")
def test_trials_run_on_the_workers_of_a_dask_cluster(ledger: Ledger) -> None:
    from distributed import Client, LocalCluster, get_task_stream

    plan = plan_trials([load_task(CALC)], TrialConfig(agent="nop", model_id="dask"), 2)
    with (
        LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as client,
        get_task_stream(client) as stream,
    ):
        done = run_trials(plan, ledger, show_progress=False, dask_address=cluster.scheduler_address)
    assert (done.ran, done.failed) == (2, [])
    assert sum("run_and_record" in str(task["key"]) for task in stream.data) >= 2  # the trials ran there
    assert [r.passed for r in done.records] == [False, False]


def test_the_report_compares_the_configurations_recorded(
    trials: Callable[..., TrialRun], ledger: Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    trials("nop", model_id="model-a", prompt_revision="v1")
    trials("oracle", model_id="model-b", prompt_revision="v1")
    capsys.readouterr()
    assert main(["report", "--ledger", ledger.url, "--json"]) == 0
    groups = {g["key"]["model_id"]: g for g in json.loads(capsys.readouterr().out)["groups"]}
    assert (groups["model-a"]["pass_rate"], groups["model-b"]["pass_rate"]) == (0.0, 1.0)
