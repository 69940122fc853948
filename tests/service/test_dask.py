"""``evaluate-suite`` on a Dask cluster: the served deployment grades the suite on a local cluster's workers, and
so does the ``gradeflow evaluate --dask-address`` line of docs/how-to/evaluations.md."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from service_procs import EXAMPLES, Service, base_env

from docs_fences import EVALUATIONS, fence
from gradeflow.evaluation.ledger import Ledger

pytestmark = pytest.mark.slow


def test_the_suite_is_graded_on_the_dask_workers(
    service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from distributed import Client, LocalCluster, get_task_stream

    # The cluster's worker processes inherit this environment: the same API and baseline cache as the flow run.
    monkeypatch.setenv("PREFECT_API_URL", service.api_url)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "dask-prefect-home"))
    monkeypatch.setenv("GRADEFLOW_HOME", service.env["GRADEFLOW_HOME"])
    ledger = tmp_path / "dask-ledger.db"
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
        get_task_stream(client) as stream,
    ):
        request = {
            "suite": str(service.home / "suite.yaml"),
            "ledger": str(ledger),
            "dask_address": cluster.scheduler_address,
        }
        deployment = service.api.deployment("evaluate-request/evaluate-suite")
        assert deployment is not None
        run = service.api.wait_final(service.api.create_run(deployment["id"], {"request": request}), 150)
    assert run["state_type"] == "COMPLETED", run["state"]
    keys = [str(record["key"]) for record in stream.data]
    assert sum("grade_and_record" in key or "grade-and-record" in key for key in keys) == 2, keys
    reader = Ledger(str(ledger))
    try:
        assert {r.run_id: r.passed for r in reader.records()} == {"nightly-1": True, "nightly-2": False}
    finally:
        reader.close()


def test_the_evaluations_dask_line_runs_as_written(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's ``evaluate --dask-address`` line, its scheduler a local cluster's: without ``PREFECT_API_URL`` it
    says it needs one (as the grade graph's page says), with it every submission is graded on the cluster's
    workers."""
    from distributed import Client, LocalCluster, get_task_stream

    [line] = [
        x for x in fence(EVALUATIONS, "gradeflow evaluate examples/suite.yaml").text.splitlines() if "--dask" in x
    ]
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    home = {"GRADEFLOW_HOME": str(tmp_path / "gradeflow"), "PREFECT_HOME": str(tmp_path / "prefect")}
    for name, value in home.items():  # the cluster's worker processes inherit them, as the page asks
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PREFECT_API_URL", prefect_api)
    env = {**base_env(tmp_path / "prefect"), **home}
    unnamed = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert unnamed.returncode == 2 and "set PREFECT_API_URL" in unnamed.stderr, unnamed.stderr
    assert len(unnamed.stderr.strip().splitlines()) == 1, unnamed.stderr
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
        get_task_stream(client) as stream,
    ):
        command = line.replace("tcp://scheduler:8786", cluster.scheduler_address)
        env["PREFECT_API_URL"] = prefect_api
        done = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1500
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1].startswith(
        "27 submissions: 27 graded now, 0 already recorded, 0 inconclusive, 0 failed"
    ), done.stdout
    keys = [str(record["key"]) for record in stream.data]
    assert sum("grade_and_record" in key or "grade-and-record" in key for key in keys) == 27, keys
    reader = Ledger(str(tmp_path / ".gradeflow" / "ledger.db"))
    try:
        assert len(reader.records()) == 27
    finally:
        reader.close()
