"""``evaluate-suite`` on a Dask cluster: the served deployment grades the suite on a local cluster's workers."""

from __future__ import annotations

from pathlib import Path

import pytest
from service_procs import Service

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
