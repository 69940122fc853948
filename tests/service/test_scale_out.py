"""Scale-out on a ``process`` work pool: two ``prefect worker`` processes share a queue of grades.

Its own ``prefect server start`` (the session's server has ``gradeflow serve`` polling the same
deployment names). Both workers share GRADEFLOW_HOME and Prefect's local result storage, as separate
machines would share a volume (docs/operations.md), so the baseline built once is served from the cache.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from service_procs import BIN, EXAMPLES, Api, base_env, prefect_server, start, stop_all, wait_until

from gradeflow.evaluation.ledger import Ledger
from gradeflow.service.params import GradeRequest

pytestmark = pytest.mark.slow

POOL = "gradeflow-test-pool"
SLOW_HUNK = (
    '@@ -1,4 +1,7 @@\n """Basic arithmetic helpers."""\n+import time\n+\n+time.sleep(10)\n \n \n def add(a, b):\n'
)


@dataclass
class Pool:
    api: Api
    deployment_id: str
    ledger: Path
    logs: list[Path]


def request(submission_id: str, ledger: Path, patch: str | None = None) -> dict[str, object]:
    text = patch if patch is not None else (EXAMPLES / "calc" / "reference.diff").read_text()
    grade = GradeRequest(
        task_id="calc-divzero",
        task_path=str(EXAMPLES / "calc" / "task.yaml"),
        submission_id=submission_id,
        patch=text,
        ledger=str(ledger),
        metadata={"model": "scale"},
    )
    return {"request": grade.model_dump(mode="json")}


def _deploy(env: dict[str, str], root: Path) -> None:
    deployed = subprocess.run(
        [str(BIN / "gradeflow"), "deploy", "--pool", POOL],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert deployed.returncode == 0, deployed.stderr


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    """A server, ``gradeflow deploy --pool``, two workers (two runs each at most), and a warm baseline."""
    root = tmp_path_factory.mktemp("scale-out")
    (root / "server").mkdir()
    with prefect_server(root / "server") as api_url:
        env = base_env(root / "client", api_url)
        env.update(
            GRADEFLOW_HOME=str(root / "shared-gradeflow-home"),
            PREFECT_LOCAL_STORAGE_PATH=str(root / "shared-results"),
            PREFECT_WORKER_QUERY_SECONDS="1",
            GRADEFLOW_CONFIG=str(root / "gradeflow.yaml"),
        )
        (root / "gradeflow.yaml").write_text(f"suite: {EXAMPLES / 'suite.yaml'}\nsandbox_slots: 4\n")
        _deploy(env, root)
        logs = [root / f"worker-{n}.log" for n in "ab"]
        workers = [
            start(
                [str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--limit", "2", "--name", log.stem],
                env,
                log,
                cwd=root,
            )
            for log in logs
        ]
        try:
            api = Api(api_url)
            deployment = wait_until(lambda: api.deployment("grade-request/grade-submission"), 30, "the deployment")
            pool = Pool(api, deployment["id"], root / "ledger.db", logs)
            warm = api.wait_final(api.create_run(pool.deployment_id, request("warm-up", pool.ledger)), 120)
            assert warm["state_type"] == "COMPLETED", warm["state"]
            yield pool
        finally:
            stop_all(workers)


def test_two_workers_grade_ten_submissions_each_exactly_once(pool: Pool) -> None:
    ids = [f"scale-{n:02d}" for n in range(10)]
    run_ids = [pool.api.create_run(pool.deployment_id, request(i, pool.ledger)) for i in ids]
    runs = [pool.api.wait_final(run_id, 180) for run_id in run_ids]
    assert [r["state_type"] for r in runs] == ["COMPLETED"] * 10
    completed = Counter(r["name"] for r in pool.api.flow_runs(state={"type": {"any_": ["COMPLETED"]}}))
    assert all(completed[f"grade-calc-divzero-{i}"] == 1 for i in ids), completed
    ledger = Ledger(str(pool.ledger))
    try:
        recorded = Counter(r.run_id for r in ledger.records())
    finally:
        ledger.close()
    assert all(recorded[i] == 1 for i in ids), recorded
    per_worker = [sum(run_id in log.read_text() for run_id in run_ids) for log in pool.logs]
    assert all(count >= 1 for count in per_worker), f"runs per worker: {per_worker}"
    baselines = [t for t in pool.api.task_runs(run_ids) if t["name"].startswith("baseline")]
    assert len(baselines) == 10
    assert {t["state"]["name"] for t in baselines} == {"Cached"}


def test_deploy_creates_the_sandbox_limit_and_the_crash_automation(pool: Pool) -> None:
    limit = pool.api.client.get("v2/concurrency_limits/gradeflow-sandbox").json()
    assert limit["limit"] == 4
    automations = pool.api.client.post("automations/filter", json={}).json()
    assert "gradeflow-crash-zombie-flow-runs" in {a["name"] for a in automations}
    review = pool.api.deployment("review-grade/ask-reviewer")
    assert review is not None and review["work_pool_name"] == POOL


def test_a_grade_killed_mid_run_is_crashed_and_its_rerun_is_recorded_once(pool: Pool) -> None:
    reference = (EXAMPLES / "calc" / "reference.diff").read_text()
    header, body = reference.split("@@", 1)
    slow = header + SLOW_HUNK + "@@" + body.replace("@@ -14,7 +14,10 @@", "@@ -14,7 +17,10 @@", 1)
    run_id = pool.api.create_run(pool.deployment_id, request("killed", pool.ledger, slow))

    def grading() -> str | None:
        tests = [t for t in pool.api.task_runs([run_id]) if t["name"].startswith("tests")]
        pid = pool.api.flow_run(run_id)["infrastructure_pid"]
        return pid if tests and tests[0]["state_type"] == "RUNNING" and pid else None

    os.kill(int(wait_until(grading, 90, "the grade to reach its tests")), signal.SIGKILL)
    crashed = pool.api.wait_final(run_id, 60)
    assert crashed["state_type"] == "CRASHED"
    # The worker proposes Crashed once more after it has reaped the process: a retry before that would be
    # crashed by it (measured), so wait for the worker's executed-flow-run event, as an operator would.
    wait_until(lambda: pool.api.worker_executed(run_id), 60, "the worker to reap the process")
    # What the UI's "Retry" does: the same flow run, scheduled again (the slow patch still grades).
    pool.api.client.post(f"flow_runs/{run_id}/set_state", json={"state": {"type": "SCHEDULED"}, "force": True})
    wait_until(lambda: pool.api.flow_run(run_id)["state_type"] != "CRASHED", 30, "the re-run to start")
    assert pool.api.wait_final(run_id, 150)["state_type"] == "COMPLETED"
    ledger = Ledger(str(pool.ledger))
    try:
        assert [r.run_id for r in ledger.records()].count("killed") == 1
    finally:
        ledger.close()
