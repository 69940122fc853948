"""A served grade is recorded even without a configured ledger: the request carries the default ledger (the one
``gradeflow report`` reads), so a reviewer's answer has its grade beside it; a configured one still wins."""

from __future__ import annotations

from pathlib import Path

import pytest
from service_procs import EXAMPLES
from starlette.testclient import TestClient
from test_webhook import SECRET, Starter, grade_body, post

from gradeflow.evaluation.ledger import ledger_url
from gradeflow.service.config import ServiceConfig
from gradeflow.service.webhook import create_app


def _client(tmp_path: Path, starter: Starter, config: ServiceConfig) -> TestClient:
    app = create_app(EXAMPLES, config, secret=SECRET, store_path=tmp_path / "deliveries.db", start_run=starter)
    return TestClient(app)


@pytest.mark.parametrize("configured", [None, "postgresql+psycopg://gradeflow@db:5432/gradeflow"])
def test_the_request_names_a_ledger(configured: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRADEFLOW_DATABASE_URL", raising=False)
    starter = Starter()
    client = _client(tmp_path, starter, ServiceConfig(ledger=configured))
    assert post(client, "/hooks/grade", grade_body()).status_code == 202
    request, _ = starter.runs[0]
    assert request.ledger == (configured or ledger_url())
    assert configured or request.ledger == f"sqlite:///{(tmp_path / '.gradeflow' / 'ledger.db').resolve()}"
