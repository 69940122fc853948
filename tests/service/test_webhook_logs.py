"""``gradeflow webhook`` logs every delivery: accepted (task, submission, flow run, duplicate or not) and refused
(path, status, error, detail), as JSON lines through gradeflow's redacting pipeline; never the patch."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from test_webhook import Starter, grade_body, make_client, post

from gradeflow.logs import configure_logging


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    buffer = io.StringIO()
    configure_logging("INFO", stream=buffer)
    yield buffer
    structlog.reset_defaults()


def _lines(buffer: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]


def test_each_delivery_is_logged_without_its_patch(tmp_path: Path, logged: io.StringIO) -> None:
    client = make_client(tmp_path, Starter())
    patch = "diff --git a/x b/x\n+secret-looking-content\n"
    assert post(client, "/hooks/grade", grade_body(patch=patch)).status_code == 202
    assert post(client, "/hooks/grade", grade_body(patch=patch), "d-2").status_code == 200
    assert post(client, "/hooks/grade", b"{}", "d-3", **{"X-Hub-Signature-256": "sha256=00"}).status_code == 401
    lines = _lines(logged)
    accepted = [line for line in lines if line["event"] == "delivery accepted"]
    assert [(a["task_id"], a["submission_id"], a["duplicate"]) for a in accepted] == [
        ("calc-divzero", "s-1", False),
        ("calc-divzero", "s-1", True),
    ]
    assert accepted[0]["flow_run_id"] == accepted[1]["flow_run_id"]
    refused = [line for line in lines if line["event"] == "delivery refused"]
    assert [(r["path"], r["status"], r["error"]) for r in refused] == [("/hooks/grade", 401, "bad-signature")]
    assert "secret-looking-content" not in logged.getvalue()
