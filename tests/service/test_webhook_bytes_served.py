"""A Latin-1 patch through both webhooks and a real served run: ``gradeflow webhook`` (with a GitHub mapping,
its diffs fetched from a loopback server) in front of the session's Prefect server and ``gradeflow serve``.
Each delivery is graded as the same tree handed in as ``--workspace`` is; a ``\\ud800`` escape is refused
with one line, never a 500."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from service_procs import BIN, EXAMPLES, SECRET, Service, free_port, signed_post, start, stop, wait_until
from test_webhook import pull_request
from test_webhook_bytes import LATIN1

from gradeflow.evaluation.ledger import Ledger

pytestmark = pytest.mark.slow
TASK = EXAMPLES / "calc" / "task.yaml"


class _Diff(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(LATIN1)))
        self.end_headers()
        self.wfile.write(LATIN1)

    def log_message(self, *args: Any) -> None:
        del args


@pytest.fixture(scope="module")
def diff_url() -> Iterator[str]:
    """A loopback server answering every GET with the Latin-1 diff (the pull request's ``diff_url``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Diff)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/acme/calc/pull/7.diff"
    server.shutdown()


@pytest.fixture(scope="module")
def receiver(service: Service, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``gradeflow webhook`` mapping ``acme/calc`` to the calc task, its grades recorded in its own ledger."""
    root = tmp_path_factory.mktemp("bytes-receiver")
    ledger = root / "ledger.db"
    config = root / "gradeflow.yaml"
    config.write_text(f"ledger: {ledger}\ngithub:\n  repos: {{acme/calc: calc-divzero}}\n")
    port = free_port()
    env = {**service.env, "GRADEFLOW_CONFIG": str(config), "GRADEFLOW_HOME": str(root / "home")}
    cmd = [str(BIN / "gradeflow"), "webhook", "--tasks", str(EXAMPLES), "--port", str(port)]
    process = start(cmd, env, root / "webhook.log", cwd=root)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: httpx.get(f"{url}/healthz", timeout=5).status_code == 200, 60, "the receiver")
        yield url, ledger
    finally:
        stop(process)


def _served(service: Service, ledger: Path, response: httpx.Response, submission_id: str) -> dict[str, Any]:
    """The ledger record of the run a delivery started, once the run has finished."""
    assert response.status_code == 202, response.text
    run = service.api.wait_final(response.json()["flow_run_id"], 300)
    assert run["state_type"] == "COMPLETED", run["state"]
    store = Ledger(str(ledger))
    try:
        [record] = [r for r in store.records() if r.submission_id == submission_id]
    finally:
        store.close()
    return _outcome(record.score, record.passed, record.status, record.decision, record.reason_codes)


def _outcome(score: Any, passed: Any, status: Any, decision: Any, reasons: Any) -> dict[str, Any]:
    return {"score": score, "passed": passed, "status": str(status), "decision": str(decision), "reasons": reasons}


@pytest.fixture(scope="module")
def as_workspace(service: Service, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``gradeflow grade --workspace`` of the calc repository with the Latin-1 patch applied by git."""
    tree = tmp_path_factory.mktemp("latin1-workspace") / "repo"
    shutil.copytree(EXAMPLES / "calc" / "repo", tree)
    subprocess.run(["git", "apply", "-"], cwd=tree, input=LATIN1, check=True)
    assert (tree / "src" / "notes.txt").read_bytes() == b"caf\xe9\n"
    graded = subprocess.run(
        [str(BIN / "gradeflow"), "grade", str(TASK), "--workspace", str(tree), "--json"],
        env=service.env,
        capture_output=True,
        timeout=600,
    )
    result = json.loads(graded.stdout)
    return _outcome(result["score"], result["passed"], result["status"], result["decision"], result["reason_codes"])


def test_a_latin1_pull_request_is_graded_as_its_workspace(
    service: Service, receiver: tuple[str, Path], diff_url: str, as_workspace: dict[str, Any]
) -> None:
    url, ledger = receiver
    event = pull_request(diff_url=diff_url)
    response = signed_post(f"{url}/hooks/github", event, SECRET, "bytes-gh-1", **{"X-GitHub-Event": "pull_request"})
    assert _served(service, ledger, response, "pr7-0123456789ab") == as_workspace


def test_a_latin1_patch_sent_as_base64_is_graded_as_its_workspace(
    service: Service, receiver: tuple[str, Path], as_workspace: dict[str, Any]
) -> None:
    url, ledger = receiver
    payload = {
        "task_id": "calc-divzero",
        "submission_id": "latin1-b64",
        "patch_base64": base64.b64encode(LATIN1).decode(),
        "metadata": {"model": "agent-x"},
    }
    response = signed_post(f"{url}/hooks/grade", payload, SECRET, "bytes-grade-1")
    assert _served(service, ledger, response, "latin1-b64") == as_workspace


def test_a_lone_surrogate_escape_is_refused_with_one_line(receiver: tuple[str, Path]) -> None:
    url, _ = receiver
    body = json.dumps({"task_id": "calc-divzero", "submission_id": "s-800", "patch": "+x\ud800\n"}).encode()
    response = signed_post(f"{url}/hooks/grade", body, SECRET, "bytes-grade-2")
    assert response.status_code == 422
    assert response.text.count("\n") == 0
    assert response.json()["error"] == "invalid" and "\\ud800" in response.json()["detail"]
