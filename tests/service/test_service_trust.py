"""The service grades untrusted work isolated only, and never puts a credential in flow-run parameters."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from service_procs import EXAMPLES
from sqlalchemy.engine import make_url

from gradeflow.cli import main
from gradeflow.engine.credentials import private_ledger, public_ledger
from gradeflow.engine.trust import TRUST_VARIABLE
from gradeflow.errors import SpecError
from gradeflow.evaluation.ledger import Ledger
from gradeflow.service.config import ServiceConfig
from gradeflow.service.deployments import build_deployments, refuse_local_suite
from gradeflow.service.flows import grade_request
from gradeflow.service.params import EvaluateRequest, GradeRequest
from gradeflow.service.webhook import create_app

URL = "postgresql+psycopg://grader:hunter2-secret@db.example:5432/ledger"


@pytest.fixture
def local_tasks(tmp_path: Path) -> Path:
    """A tasks folder whose calc task asks for the local sandbox."""
    shutil.copytree(EXAMPLES / "calc", tmp_path / "tasks" / "calc", symlinks=True)
    task = tmp_path / "tasks" / "calc" / "task.yaml"
    task.write_text(task.read_text() + "environment: {sandbox: local}\n")
    return tmp_path / "tasks"


def test_the_webhook_refuses_a_local_task_unless_the_config_trusts_it(
    local_tasks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TRUST_VARIABLE, raising=False)
    with pytest.raises(SpecError, match=r"calc-divzero sets environment.sandbox: local.*trust_local_code: true"):
        create_app(local_tasks, ServiceConfig(), secret="s", store_path=local_tasks / "d.db")
    create_app(local_tasks, ServiceConfig(trust_local_code=True), secret="s", store_path=local_tasks / "d.db")
    assert os.environ[TRUST_VARIABLE] == "1"


def test_serve_and_deploy_refuse_a_suite_with_a_local_task(local_tasks: Path, tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        f"tasks: [{local_tasks / 'calc' / 'task.yaml'}]\n"
        f"submissions:\n  - {{task_id: calc-divzero, run_id: r1, patch: {EXAMPLES / 'calc' / 'reference.diff'}}}\n"
    )
    with pytest.raises(SpecError, match=r"^serve: task calc-divzero"):
        refuse_local_suite(ServiceConfig(suite=str(suite)), "serve")
    refuse_local_suite(ServiceConfig(suite=str(suite), trust_local_code=True), "serve")


def test_the_cli_says_why_in_one_line_and_exits_2(
    local_tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GRADEFLOW_WEBHOOK_SECRET", "s")
    monkeypatch.chdir(tmp_path)
    assert main(["webhook", "--tasks", str(local_tasks), "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "trust_local_code" in err[0]


def test_a_served_request_for_the_local_sandbox_is_refused_without_trust(
    monkeypatch: pytest.MonkeyPatch, prefect: None
) -> None:
    del prefect
    monkeypatch.delenv(TRUST_VARIABLE, raising=False)
    request = GradeRequest(
        task_id="calc-divzero",
        task_path=str(EXAMPLES / "calc" / "task.yaml"),
        submission_id="asks-local",
        patch="",
        sandbox="local",
    )
    state = grade_request(request, return_state=True)
    assert state.is_failed()
    with pytest.raises(SpecError, match="served grade in the local sandbox"):
        state.result()


def test_a_ledger_password_never_reaches_a_request() -> None:
    with pytest.raises(ValueError, match="stored in the flow run's parameters"):
        GradeRequest(task_id="t", task_path="t.yaml", submission_id="s", patch="", ledger=URL)
    with pytest.raises(ValueError, match="stored in the flow run's parameters"):
        EvaluateRequest(suite="s.yaml", ledger=URL)
    assert public_ledger(URL) == "postgresql+psycopg://grader@db.example:5432/ledger"
    assert public_ledger("ledger.db") == "ledger.db" and public_ledger(None) is None


def test_the_nightly_deployment_carries_the_url_without_its_password(tmp_path: Path) -> None:
    config = ServiceConfig(suite=str(tmp_path / "suite.yaml"), ledger=URL)
    evaluate = build_deployments(config)[1]
    assert "hunter2" not in str(evaluate.parameters)
    assert evaluate.parameters["request"]["ledger"] == public_ledger(URL)


def test_the_worker_takes_the_password_from_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADEFLOW_DATABASE_URL", URL)
    assert private_ledger(public_ledger(URL)) == URL
    assert (
        private_ledger("postgresql+psycopg://other@db.example/ledger") == "postgresql+psycopg://other@db.example/ledger"
    )
    monkeypatch.delenv("GRADEFLOW_DATABASE_URL")
    assert private_ledger(public_ledger(URL)) == public_ledger(URL)


@pytest.mark.slow
def test_a_served_grade_read_back_through_the_api_holds_no_password(
    monkeypatch: pytest.MonkeyPatch, prefect: None
) -> None:
    del prefect
    url = os.environ.get("GRADEFLOW_TEST_POSTGRES_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CI runs this test on PostgreSQL: GRADEFLOW_TEST_POSTGRES_URL is not set")
        pytest.skip("GRADEFLOW_TEST_POSTGRES_URL is not set (scripts/start-postgres.sh)")
    password = make_url(url).password
    monkeypatch.setenv("GRADEFLOW_DATABASE_URL", url)
    request = GradeRequest(
        task_id="calc-divzero",
        task_path=str(EXAMPLES / "calc" / "task.yaml"),
        submission_id="no-password-in-params",
        patch=(EXAMPLES / "calc" / "reference.diff").read_text(),
        ledger=public_ledger(url),
    )
    state = grade_request(request, return_state=True)
    assert state.is_completed()
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(state.state_details.flow_run_id)
    ledger_url = run.parameters["request"]["ledger"]
    assert make_url(ledger_url).password is None and f":{password}@" not in repr(run.parameters)
    ledger = Ledger(url)
    try:
        assert [r.passed for r in ledger.records() if r.run_id == "no-password-in-params"][-1:] == [True]
    finally:
        ledger.close()
