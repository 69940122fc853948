"""A worker killed mid-grade together with its flow run process (a lost machine): Prefect marks the run
Crashed from the missing heartbeats, a retry on another worker grades it, and the ledger holds it once.

(Killing only the worker is milder: the flow run process lives in its own session and goes on, and
fails with ``BrokenPipeError`` at its next log line to the dead worker's pipe; Prefect records
``Failed`` at once and the same retry applies.)

Starts ``prefect server start`` (own PREFECT_HOME), ``gradeflow deploy --pool`` (which creates the
heartbeat automation, here with ``crash_after: 45``), one worker with heartbeats every 30 s, sends one
grade whose patch makes the tests take 20 s, SIGKILLs the worker's whole process group once the tests
run, measures how long until the run is ``Crashed``, retries it (as the UI's Retry does) on a second
worker, and counts the ledger records. Bounded: 10 minutes at most.

    python bench/worker_kill.py
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from webhook_burst import BIN, ROOT, _port, _start, _wait

POOL = "kill-bench"
SLOW = '@@ -1,4 +1,7 @@\n """Basic arithmetic helpers."""\n+import time\n+\n+time.sleep(20)\n \n \n def add(a, b):\n'


def _slow_patch() -> str:
    header, body = (ROOT / "examples" / "calc" / "reference.diff").read_text().split("@@", 1)
    return header + SLOW + "@@" + body.replace("@@ -14,7 +14,10 @@", "@@ -14,7 +17,10 @@", 1)


def _until(probe: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.5)
    raise SystemExit(f"timed out waiting for {what}")


def _api(response: httpx.Response, what: str) -> Any:
    """The answer's JSON; a refused or failed call ends the bench with what was asked and what came back."""
    if response.is_error:
        raise SystemExit(f"{what}: HTTP {response.status_code}: {response.text[:300]}")
    return response.json()


def _run(api: str, root: Path) -> str:
    url = f"{api}/deployments/name/grade-request/grade-submission"
    deployment = _api(httpx.get(url, timeout=30), "the grade-submission deployment")
    request = {
        "task_id": "calc-divzero",
        "task_path": str(ROOT / "examples" / "calc" / "task.yaml"),
        "submission_id": "killed",
        "patch": _slow_patch(),
        "ledger": str(root / "ledger.db"),
    }
    body = {"parameters": {"request": request}}
    created = httpx.post(f"{api}/deployments/{deployment['id']}/create_flow_run", json=body, timeout=30)
    return str(_api(created, "creating the flow run")["id"])


def _state(api: str, run_id: str) -> str:
    return str(_api(httpx.get(f"{api}/flow_runs/{run_id}", timeout=30), "reading the flow run")["state_type"])


def _tests_running(api: str, run_id: str) -> bool:
    body = {"flow_runs": {"id": {"any_": [run_id]}}}
    runs = _api(httpx.post(f"{api}/task_runs/filter", json=body, timeout=30), "listing the task runs")
    return any(t["name"].startswith("tests") and t["state_type"] == "RUNNING" for t in runs)


def _measure(api: str, env: dict[str, str], root: Path) -> dict[str, Any]:
    worker = _start([str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--name", "doomed"], env, root / "w1.log")
    run_id = _run(api, root)
    _until(lambda: _tests_running(api, run_id), 120, "the grade to reach its tests")
    # A lost machine: the worker and the flow run's process (its own session) die at once.
    # The worker records the pid once the process is up: wait for it rather than read a missing field.
    flow_pid = int(
        _until(
            lambda: _api(httpx.get(f"{api}/flow_runs/{run_id}", timeout=30), "the run").get("infrastructure_pid"),
            60,
            "the flow run's pid",
        )
    )
    os.killpg(worker.pid, signal.SIGKILL)
    os.killpg(os.getpgid(flow_pid), signal.SIGKILL)
    worker.wait()
    killed = time.monotonic()
    _until(lambda: _state(api, run_id) == "CRASHED", 300, "Prefect to mark the run Crashed")
    crashed_after = time.monotonic() - killed
    survivor = _start(
        [str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--name", "survivor"], env, root / "w2.log"
    )
    try:
        body = {"state": {"type": "SCHEDULED"}, "force": True}
        _api(httpx.post(f"{api}/flow_runs/{run_id}/set_state", json=body, timeout=30), "rescheduling the run")
        _until(lambda: _state(api, run_id) in {"COMPLETED", "FAILED", "CRASHED"} or None, 240, "the retry to finish")
        final = _state(api, run_id)
    finally:
        os.killpg(survivor.pid, signal.SIGTERM)
        survivor.wait(timeout=30)
    from gradeflow.evaluation.ledger import Ledger

    ledger = Ledger(str(root / "ledger.db"))
    records = [r.run_id for r in ledger.records()].count("killed")
    ledger.close()
    return {"crashed_after_s": round(crashed_after, 1), "retry_state": final, "ledger_records": records}


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="gradeflow-kill-"))
    port = _port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(root / "prefect"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        GRADEFLOW_HOME=str(root / "gradeflow"),
        GRADEFLOW_CONFIG=str(root / "gradeflow.yaml"),
    )
    (root / "gradeflow.yaml").write_text("crash_after: 45\n")
    server = _start(
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)], env, root / "server.log"
    )
    try:
        _wait(f"{api}/health", server)
        env.update(PREFECT_API_URL=api, PREFECT_FLOWS_HEARTBEAT_FREQUENCY="30", PREFECT_WORKER_QUERY_SECONDS="2")
        subprocess.run(
            [str(BIN / "gradeflow"), "deploy", "--pool", POOL],
            env=env,
            cwd=root,
            check=True,
            capture_output=True,
            timeout=120,
        )
        outcome = _measure(api, env, root)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    print(json.dumps(outcome))
    return 0 if outcome["retry_state"] == "COMPLETED" and outcome["ledger_records"] == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
