"""Both webhooks take a patch whatever its bytes: a pull request diff in Latin-1 (``/hooks/github``) and a
Latin-1 patch as ``patch_base64`` (``/hooks/grade``) start a run whose parameters travel as JSON (encoded
strictly, as Prefect's client does) and whose worker gets the very bytes back; a JSON ``\\ud800`` escape, which
stands for no character and no byte, is refused on one line (422)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from service_procs import EXAMPLES
from starlette.testclient import TestClient
from test_webhook import SECRET, grade_body, post, pull_request

from gradeflow.models.spec import patch_bytes
from gradeflow.service.config import GitHubConfig, ServiceConfig
from gradeflow.service.params import GradeRequest
from gradeflow.service.webhook import create_app

LATIN1 = (EXAMPLES / "calc" / "reference.diff").read_bytes() + (
    b"diff --git a/src/notes.txt b/src/notes.txt\nnew file mode 100644\n--- /dev/null\n+++ b/src/notes.txt\n"
    b"@@ -0,0 +1 @@\n+caf\xe9\n"
)


class JsonStarter:
    """Sends the run's parameters as Prefect's client does (strict UTF-8 JSON) and reads them back as the worker."""

    def __init__(self) -> None:
        self.received: list[GradeRequest] = []

    async def __call__(self, request: GradeRequest, key: str) -> str:
        wire = json.dumps({"request": request.model_dump(mode="json")}, ensure_ascii=False).encode("utf-8")
        self.received.append(GradeRequest.model_validate(json.loads(wire)["request"]))
        return f"00000000-0000-0000-0000-{len(self.received):012d}"


async def latin1_fetch(url: str) -> str:
    return LATIN1.decode("utf-8", errors="surrogateescape")


def _client(tmp_path: Path, starter: JsonStarter) -> TestClient:
    config = ServiceConfig(github=GitHubConfig(repos={"acme/calc": "calc-divzero"}))
    app = create_app(
        EXAMPLES, config, secret=SECRET, store_path=tmp_path / "deliveries.db", start_run=starter, fetch=latin1_fetch
    )
    return TestClient(app)


def test_a_latin1_pull_request_is_accepted_and_its_bytes_reach_the_worker(tmp_path: Path) -> None:
    starter = JsonStarter()
    client = _client(tmp_path, starter)
    response = post(client, "/hooks/github", pull_request(), **{"X-GitHub-Event": "pull_request"})
    assert response.status_code == 202, response.json()
    assert patch_bytes(starter.received[0].diff()) == LATIN1
    again = post(client, "/hooks/github", pull_request(), "d-2", **{"X-GitHub-Event": "pull_request"})
    assert (again.status_code, again.json()["duplicate"]) == (200, True)


def test_a_latin1_patch_sent_as_base64_reaches_the_worker_as_its_bytes(tmp_path: Path) -> None:
    starter = JsonStarter()
    client = _client(tmp_path, starter)
    body = grade_body(patch="")
    body["patch_base64"] = base64.b64encode(LATIN1).decode()
    del body["patch"]
    response = post(client, "/hooks/grade", body)
    assert response.status_code == 202, response.json()
    assert patch_bytes(starter.received[0].diff()) == LATIN1


@pytest.mark.parametrize("escape", [r"\ud800", r"\udce9"])
def test_a_lone_surrogate_escape_in_a_grade_payload_is_refused_on_one_line(tmp_path: Path, escape: str) -> None:
    starter = JsonStarter()
    client = _client(tmp_path, starter)
    raw = json.dumps(grade_body(patch="+x\n")).encode().replace(b"+x", b"+x" + escape.encode())
    response = post(client, "/hooks/grade", raw)
    assert response.status_code == 422
    assert response.json() == {
        "error": "invalid",
        "detail": f"patch: the escape {escape} at character 2 is a lone surrogate, no character; "
        "send a diff whose bytes are not UTF-8 as patch_base64",
    }
    assert starter.received == []


def test_a_utf8_patch_still_travels_as_text(tmp_path: Path) -> None:
    starter = JsonStarter()
    client = _client(tmp_path, starter)
    assert post(client, "/hooks/grade", grade_body(patch="+café\n")).status_code == 202
    assert (starter.received[0].patch, starter.received[0].patch_base64) == ("+café\n", None)
