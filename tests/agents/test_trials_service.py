"""``run-trials-request/agent-trials``: ``gradeflow serve`` serves it beside the other deployments, ``gradeflow
deploy`` registers it on a pool, and a run of it records the trials in the ledger (a real ``prefect server``
and a real ``gradeflow serve`` process)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agents.conftest import CALC
from gradeflow.agents.service import TRIALS_DEPLOYMENT
from gradeflow.evaluation.ledger import Ledger
from service.service_procs import BIN, Api, base_env, prefect_server, start, stop, wait_until


def _processes() -> str:
    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout


def _env(root: Path, api_url: str) -> dict[str, str]:
    (root / "gradeflow.yaml").write_text("suite: nightly.yaml\n")
    env = base_env(root / "client", api_url)
    env.update(GRADEFLOW_HOME=str(root / "gradeflow-home"), GRADEFLOW_CONFIG=str(root / "gradeflow.yaml"))
    return env


@pytest.mark.slow
def test_deploy_lists_it_and_a_served_run_records_the_trials(tmp_path: Path) -> None:
    (tmp_path / "server").mkdir()
    (tmp_path / "client").mkdir()
    with prefect_server(tmp_path / "server") as api_url:
        env, api = _env(tmp_path, api_url), Api(api_url)
        deployed = subprocess.run(
            [str(BIN / "gradeflow"), "deploy", "--pool", "trials-pool"], env=env, cwd=tmp_path, capture_output=True
        )
        assert deployed.returncode == 0, deployed.stderr
        assert f"{TRIALS_DEPLOYMENT}\t" in deployed.stdout.decode()
        assert (api.deployment(TRIALS_DEPLOYMENT) or {}).get("work_pool_name") == "trials-pool"
        serving = start([str(BIN / "gradeflow"), "serve"], env, tmp_path / "serve.log", cwd=tmp_path)
        try:
            served = wait_until(
                lambda: (d := api.deployment(TRIALS_DEPLOYMENT)) and d["status"] == "READY" and d, 120, "serve"
            )
            ledger = tmp_path / "trials.db"
            request = {
                "tasks": [str(CALC)],
                "agent": "oracle",
                "repeat": 2,
                "model_id": "served",
                "ledger": str(ledger),
            }
            run = api.wait_final(api.create_run(served["id"], {"request": request}), 600)
            # A served trial holds a slot of the sandbox limit (shared with served grades) while its agent runs.
            marker = f"sleep 23.{os.getpid()}"  # this run's own: another test run's agent may be asleep too
            waiting = {**request, "agent": marker, "repeat": 1, "ledger": str(tmp_path / "waiting.db")}
            second = api.create_run(served["id"], {"request": waiting})
            wait_until(lambda: marker in _processes(), 600, "the waiting agent")
            held = api.client.get("v2/concurrency_limits/gradeflow-sandbox").json()["active_slots"]
            # Seen holding its slot: the agent need not sleep on (its trial then fails, and ends all the same).
            subprocess.run(["pkill", "-KILL", "-f", marker], check=False)
            api.wait_final(second, 600)
            after = api.client.get("v2/concurrency_limits/gradeflow-sandbox").json()["active_slots"]
        finally:
            stop(serving)
        assert (held, after) == (1, 0)
    assert run["state_type"] == "COMPLETED", (tmp_path / "serve.log").read_text()[-3000:]
    reader = Ledger(str(ledger))
    records, trials = reader.records(), reader.trials()
    reader.close()
    assert sorted(r.run_id for r in records) == sorted(t.run_id for t in trials) == ["trial-1", "trial-2"]
    assert all(r.passed and r.model_id == "served" for r in records)
