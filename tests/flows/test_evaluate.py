"""The evaluate-suite flow: every submission recorded once, resume, baselines built once, crashes, kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gradeflow.flows.evaluate as evaluate_module
from evaluate_helpers import database, postgres_url, write_suite
from fakes import BUG, fake_pytest
from gradeflow.cli import main
from gradeflow.evaluation.ledger import GradeRecord, Ledger
from gradeflow.evaluation.records import PlannedGrade, record_for, repository_key
from gradeflow.evaluation.suite import load_suite
from gradeflow.flows.evaluate import Evaluation, evaluate
from gradeflow.flows.grade import grade_submission
from gradeflow.models import GradeComponent, GradeResult, Submission, TaskSpec
from gradeflow.sandbox import CommandResult, FakeCall, FakeSandboxFactory

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MIXED = {"m-a": ["fix", "fix"], "m-b": ["fix", "wrong"], "m-c": ["empty"]}


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database(request.param, tmp_path) as value:
        yield value


def _evaluate(suite_path: Path, url: str, factory: FakeSandboxFactory, concurrency: int = 2) -> Evaluation:
    ledger = Ledger(url)
    try:
        return evaluate(load_suite(suite_path), ledger, concurrency=concurrency, sandbox=factory, show_progress=False)
    finally:
        ledger.close()


def _stable(records: list[GradeRecord]) -> list[dict[str, object]]:
    return [r.model_dump(exclude={"created_at", "timings"}) for r in records]


@pytest.mark.usefixtures("prefect")
def test_every_submission_is_recorded_once_and_a_rerun_grades_nothing(url: str, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ["t1", "t2"], MIXED)
    first = _evaluate(suite, url, FakeSandboxFactory(fake_pytest))
    assert (first.graded, first.skipped, first.failed) == (10, 0, [])
    assert [(r.task_id, r.run_id) for r in first.records][:3] == [("t1", "m-a-r1"), ("t1", "m-a-r2"), ("t1", "m-b-r1")]
    by_model = {m: [r.passed for r in first.records if r.model_id == m] for m in MIXED}
    assert by_model == {"m-a": [True] * 4, "m-b": [True, False] * 2, "m-c": [False] * 2}
    fixed = first.records[0]
    assert (fixed.tests_passed, fixed.tests_failed, fixed.tool_calls, fixed.score) == (2, 0, 1, 1.0)
    assert (
        fixed.component_scores == {"constraints": 1.0, "test_infrastructure": 1.0, "tamper": 1.0, "tests": 1.0}
        and fixed.files_changed == 1
    )
    assert "empty-patch" in first.records[4].reason_codes
    again = _evaluate(suite, url, FakeSandboxFactory(fake_pytest))
    assert (again.graded, again.skipped) == (0, 10)
    ledger = Ledger(url)
    keys = [r.key for r in ledger.records()]
    ledger.close()
    assert len(keys) == len(set(keys)) == 10


@pytest.mark.usefixtures("prefect")
def test_a_suite_is_graded_on_the_workers_of_a_dask_cluster(tmp_path: Path) -> None:
    from distributed import Client, LocalCluster, get_task_stream

    suite = write_suite(tmp_path, ["t1"], {"m-a": ["fix", "fix"]})
    ledger = Ledger(f"sqlite:///{tmp_path / 'dask.db'}")
    try:
        with (
            LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster,
            Client(cluster) as client,
            get_task_stream(client) as stream,
        ):
            outcome = evaluate(
                load_suite(suite),
                ledger,
                sandbox=FakeSandboxFactory(fake_pytest),
                show_progress=False,
                dask_address=cluster.scheduler_address,
            )
        assert (outcome.graded, outcome.failed) == (2, [])
        assert sum("grade" in str(task["key"]) for task in stream.data) >= 2  # the grades ran on the cluster
        assert [r.passed for r in ledger.records()] == [True, True]
    finally:
        ledger.close()


@pytest.mark.usefixtures("prefect")
def test_the_same_suite_lands_identically_in_sqlite_and_postgresql(tmp_path: Path) -> None:
    postgres_url()
    suite = write_suite(tmp_path, ["t1"], MIXED)
    landed = []
    for kind in ("sqlite", "postgres"):
        with database(kind, tmp_path) as url:
            _evaluate(suite, url, FakeSandboxFactory(fake_pytest))
            ledger = Ledger(url)
            landed.append(_stable(ledger.records()))
            ledger.close()
    assert len(landed[0]) == 5
    assert sorted(landed[0], key=str) == sorted(landed[1], key=str)


@pytest.mark.usefixtures("prefect")
def test_each_baseline_is_built_once_per_task(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ["t1", "t2"], {"m-a": ["fix"], "m-b": ["fix"]})
    sources: list[str] = []

    def watching(call: FakeCall) -> CommandResult:
        sources.append(call.read("src/calc.py"))
        return fake_pytest(call)

    outcome = _evaluate(suite, f"sqlite:///{tmp_path / 'l.db'}", FakeSandboxFactory(watching), concurrency=2)
    assert outcome.graded == 4
    assert sources.count(BUG) == 2  # one pristine-base test run per task; every candidate run saw a fix
    assert len(sources) == 6


@pytest.mark.usefixtures("prefect")
def test_inconclusive_grades_and_a_crash_are_recorded_and_a_rerun_grades_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = write_suite(tmp_path, ["t1"], {"m-a": ["fix", "broken", "wrong", "fix"]})
    url = f"sqlite:///{tmp_path / 'l.db'}"

    def buggy_grader(call: FakeCall) -> CommandResult:
        if "return 0 if b == 0" in call.read("src/calc.py"):
            raise RuntimeError("grader bug")
        return fake_pytest(call)

    def crashing_flow(task_spec: TaskSpec, submission: Submission, **options: Any) -> Any:
        if submission.submission_id == "m-a-r4":
            raise RuntimeError("the subflow could not start")
        return grade_submission(task_spec, submission, **options)

    monkeypatch.setattr(evaluate_module, "grade_submission", crashing_flow)
    first = _evaluate(suite, url, FakeSandboxFactory(buggy_grader))
    assert first.graded == 3 and len(first.failed) == 1 and "t1 m-a m-a-r4: RuntimeError" in first.failed[0]
    assert first.failed[0].endswith("recorded inconclusive internal-error")
    by_run = {r.run_id: r for r in first.records}
    assert (by_run["m-a-r2"].status, by_run["m-a-r2"].score, by_run["m-a-r2"].decision) == (
        "inconclusive",
        None,
        "inconclusive",
    )
    assert by_run["m-a-r2"].reason_codes == ["sandbox-unavailable"]
    assert (by_run["m-a-r3"].status, by_run["m-a-r3"].reason_codes) == ("inconclusive", ["internal-error"])
    assert (by_run["m-a-r4"].status, by_run["m-a-r4"].reason_codes) == ("inconclusive", ["internal-error"])
    monkeypatch.undo()
    second = _evaluate(suite, url, FakeSandboxFactory(fake_pytest))
    assert (second.graded, second.skipped, second.failed) == (0, 4, [])
    assert [r.run_id for r in second.records] == ["m-a-r1", "m-a-r2", "m-a-r3", "m-a-r4"]


def test_a_record_keeps_no_text(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, ["t1"], {"m-a": ["fix"]}))
    item = suite.items[0]
    planned = PlannedGrade(
        item=item, task=suite.tasks["t1"], content_key="c" * 32, patch_hash="p" * 64, repository_revision="r" * 40
    )
    secret_message = "AKIA-looking message and file content: def divide(a, b)"
    component = GradeComponent(
        name="tests",
        score=0.5,
        passed=False,
        messages=[secret_message],
        details={"counts": {"passed": 3, "failed": 1, "error": 1}, "stdout": "leak"},
    )
    result = GradeResult(
        task_id="t1",
        submission_id="s",
        status="graded",
        score=0.5,
        passed=False,
        decision="retry",
        components=[component],
        patch=item.submission.patch or "",
        messages=[secret_message],
        files_changed=["src/calc.py"],
        gradeflow_version="0.1.0",
    )
    record = record_for(planned, result, 1.5)
    dumped = record.model_dump_json()
    for text in (secret_message, "divide", "leak", "src/calc.py", "ZeroDivisionError", planned.task.repo):
        assert text not in dumped
    assert (
        record.labels["repository"]
        == repository_key(planned.task)
        != repository_key(planned.task.model_copy(update={"repo": planned.task.repo + "-other"}))
    )
    assert (record.tests_passed, record.tests_failed, record.files_changed, record.timings) == (3, 2, 1, {"total": 1.5})


def test_evaluate_input_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite(tmp_path, ["t1"], {"m-a": ["fix"]})
    assert main(["evaluate", str(tmp_path / "none.yaml")]) == 2
    assert main(["evaluate", str(suite), "--concurrency", "0"]) == 2
    assert main(["evaluate", str(suite), "--predictions", "p.jsonl"]) == 2
    assert main(["evaluate", "--predictions", "p.jsonl"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert errors[0].startswith("gradeflow: error: ") and "none.yaml" in errors[0]
    assert "--concurrency" in errors[1] and "exactly one" in errors[2] and "--tasks" in errors[3]


def _calc_suite(tmp_path: Path) -> Path:
    """The example suite's calc half: its nine submissions (reference, bad and empty patches) of one task."""
    text = (EXAMPLES / "suite.yaml").read_text()
    lines = [line for line in text.splitlines() if line.startswith(("#", "submissions")) or "calc-divzero" in line]
    path = tmp_path / "suite.yaml"
    path.write_text(
        "\n".join(["tasks: [calc/task.yaml]", *lines])
        .replace("calc/", f"{EXAMPLES}/calc/")
        .replace("empty.diff", f"{EXAMPLES}/empty.diff")
        + "\n"
    )
    return path


def _count(url: str) -> list[tuple[str, str]]:
    ledger = Ledger(url)
    keys = [r.key for r in ledger.records()]
    ledger.close()
    return keys


@pytest.mark.slow
def test_killed_evaluation_resumes_without_duplicates_or_losses(tmp_path: Path) -> None:
    suite, url = _calc_suite(tmp_path), f"sqlite:///{tmp_path / 'ledger.db'}"
    assert len(load_suite(suite).items) == 9
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "GRADEFLOW_HOME": str(tmp_path / "home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        # A loaded machine (the rest of the suite, CI) can take longer than the default 20 s to start it.
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    }
    env.pop("PREFECT_API_URL", None)
    command = [
        sys.executable,
        "-m",
        "gradeflow.cli",
        "evaluate",
        str(suite),
        "--ledger",
        url,
        "--concurrency",
        "2",
        "--no-progress",
        "--ephemeral",  # a server this call starts for itself, so the kill below takes it down too
    ]
    log = (tmp_path / "first-run.log").open("w")
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if (tmp_path / "ledger.db").exists() and len(_count(url)) >= 3:
            break
        time.sleep(0.2)
    log.close()
    assert proc.poll() is None, (tmp_path / "first-run.log").read_text()[-3000:]
    os.killpg(proc.pid, signal.SIGKILL)  # the whole group: the CLI and the Prefect server it started
    proc.wait()
    before = Ledger(url).records()
    assert 3 <= len(before) < 9
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{len(before)} already recorded" in done.stdout
    after = Ledger(url).records()
    keys = [r.key for r in after]
    assert len(after) == len(set(keys)) == 9
    assert after[: len(before)] == before  # nothing recorded before the kill was touched
