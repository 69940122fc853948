"""Session fixtures of the service tests: one real ``prefect server start`` on loopback, ``gradeflow serve``
serving the deployments against it, and ``gradeflow webhook`` in front of it. All stopped at the end."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from service_procs import (
    BIN,
    EXAMPLES,
    SECRET,
    Api,
    Delivery,
    Service,
    base_env,
    free_port,
    grade_payload,
    prefect_server,
    signed_post,
    start,
    stop_all,
    wait_until,
)


@pytest.fixture(scope="session")
def service_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("service")


@pytest.fixture(scope="session")
def prefect_api(service_root: Path) -> Iterator[str]:
    """The API URL of a real ``prefect server start`` with its own PREFECT_HOME."""
    home = service_root / "server-home"
    home.mkdir()
    with prefect_server(home) as api:
        yield api


def write_config(folder: Path, ledger: Path) -> Path:
    """A service config: a two-submission suite of the calc example, a ledger in ``folder``."""
    suite = folder / "suite.yaml"
    calc = EXAMPLES / "calc"
    suite.write_text(
        f"tasks: [{calc / 'task.yaml'}]\nsubmissions:\n"
        f"  - {{task_id: calc-divzero, patch: {calc / 'reference.diff'}, run_id: nightly-1, model_id: m-a}}\n"
        f"  - {{task_id: calc-divzero, patch: {calc / 'bad.diff'}, run_id: nightly-2, model_id: m-b}}\n"
    )
    config = folder / "gradeflow.yaml"
    config.write_text(f"schedule: '30 3 * * *'\nsuite: suite.yaml\nledger: {ledger}\nsandbox_slots: 4\n")
    return config


@pytest.fixture(scope="session")
def service(service_root: Path, prefect_api: str) -> Iterator[Service]:
    """``gradeflow serve`` and ``gradeflow webhook --tasks examples`` against the session's server."""
    home = service_root / "client"
    home.mkdir()
    ledger = service_root / "ledger.db"
    env = base_env(home, prefect_api)
    env.update(
        GRADEFLOW_HOME=str(service_root / "gradeflow-home"),
        GRADEFLOW_CONFIG=str(write_config(service_root, ledger)),
        GRADEFLOW_WEBHOOK_SECRET=SECRET,
    )
    port = free_port()
    serving = start([str(BIN / "gradeflow"), "serve"], env, service_root / "serve.log", cwd=service_root)
    receiver = start(
        [str(BIN / "gradeflow"), "webhook", "--tasks", str(EXAMPLES), "--port", str(port)],
        env,
        service_root / "webhook.log",
        cwd=service_root,
    )
    api = Api(prefect_api)
    try:
        served = ("grade-request/grade-submission", "evaluate-request/evaluate-suite")
        wait_until(lambda: all(api.deployment(name) for name in served), 60, "the served deployments")
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: httpx.get(f"{url}/healthz", timeout=5).status_code == 200, 60, "the webhook receiver")
        yield Service(prefect_api, api, url, ledger, service_root, env)
    finally:
        stop_all([receiver, serving])


@pytest.fixture(scope="session")
def chromium() -> str:
    """The Chromium binary; under ``CI=true`` a missing one fails the test instead of skipping it."""
    from chromium_page import chromium_binary

    binary = chromium_binary()
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (apt-get install -y chromium); CI requires the UI check")
        pytest.skip("chromium is not installed")
    subprocess.run([binary, "--version"], check=True, capture_output=True, timeout=30)
    return binary


@pytest.fixture(scope="session")
def graded(service: Service) -> Delivery:
    """A signed ``/hooks/grade`` delivery of the calc reference fix, its run finished."""
    payload = grade_payload("webhook-1")
    response = signed_post(f"{service.webhook}/hooks/grade", payload, SECRET, "delivery-0001")
    assert response.status_code == 202, response.text
    run = service.api.wait_final(response.json()["flow_run_id"], 120)
    return Delivery(payload, "delivery-0001", run)
