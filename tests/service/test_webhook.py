"""The receiver's checks, in-process (Starlette's TestClient) with a recording stand-in for Prefect."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest
from service_procs import EXAMPLES
from starlette.testclient import TestClient

from gradeflow.errors import SpecError
from gradeflow.service.config import GitHubConfig, ServiceConfig
from gradeflow.service.github import DiffUnavailable
from gradeflow.service.params import GradeRequest
from gradeflow.service.webhook import MAX_BODY_BYTES, MAX_PATCH_PARAMETER_BYTES, create_app, sign

SECRET = "unit-secret"


class Starter:
    """Records every run it creates and, like Prefect, answers a known idempotency key with its run;
    fails while ``down`` is set."""

    def __init__(self) -> None:
        self.runs: list[tuple[GradeRequest, str]] = []
        self.calls: list[str] = []
        self.down = False

    async def __call__(self, request: GradeRequest, key: str) -> str:
        self.calls.append(key)
        if self.down:
            raise ConnectionError("prefect API unreachable")
        known = [i for i, (_, k) in enumerate(self.runs, 1) if k == key]
        if not known:
            self.runs.append((request, key))
        return f"00000000-0000-0000-0000-{(known or [len(self.runs)])[0]:012d}"


async def fake_fetch(url: str) -> str:
    if "missing" in url:
        raise DiffUnavailable(f"{url}: HTTP 404")
    return (EXAMPLES / "calc" / "reference.diff").read_text()


def make_client(tmp_path: Path, starter: Starter, config: ServiceConfig | None = None) -> TestClient:
    config = config or ServiceConfig(github=GitHubConfig(repos={"acme/calc": "calc-divzero"}), ledger="ledger.db")
    app = create_app(
        EXAMPLES, config, secret=SECRET, store_path=tmp_path / "deliveries.db", start_run=starter, fetch=fake_fetch
    )
    return TestClient(app)


@pytest.fixture
def starter() -> Starter:
    return Starter()


@pytest.fixture
def client(tmp_path: Path, starter: Starter) -> TestClient:
    return make_client(tmp_path, starter)


def post(client: TestClient, path: str, body: Any, delivery: str | None = "d-1", **headers: str) -> Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"X-Hub-Signature-256": sign(SECRET.encode(), raw), **headers}
    if delivery:
        sent["X-GitHub-Delivery"] = delivery
    return client.post(path, content=raw, headers=sent)


def grade_body(**changes: Any) -> dict[str, Any]:
    return {"task_id": "calc-divzero", "submission_id": "s-1", "patch": "", "metadata": {"model": "m"}, **changes}


def pull_request(action: str = "opened", repo: str = "acme/calc", diff_url: str = "https://x/pr/7.diff") -> Any:
    return {
        "action": action,
        "repository": {"full_name": repo},
        "pull_request": {
            "number": 7,
            "head": {"sha": "0123456789abcdef"},
            "diff_url": diff_url,
            "user": {"login": "agent-bot"},
        },
    }


def test_a_signed_delivery_is_accepted_with_the_run_id(client: TestClient, starter: Starter) -> None:
    response = post(client, "/hooks/grade", grade_body())
    assert response.status_code == 202
    assert response.json() == {"flow_run_id": "00000000-0000-0000-0000-000000000001", "duplicate": False}
    request, key = starter.runs[0]
    assert (request.task_id, request.submission_id, request.metadata) == ("calc-divzero", "s-1", {"model": "m"})
    assert len(key) == 32 and key != "d-1"
    assert Path(request.task_path) == (EXAMPLES / "calc" / "task.yaml").resolve()
    assert request.ledger == "ledger.db"


def test_the_signature_is_the_hmac_sha256_of_the_raw_body() -> None:
    expected = hmac.new(b"k", b"{}", hashlib.sha256).hexdigest()
    assert sign(b"k", b"{}") == f"sha256={expected}"


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({}, "unsigned"),
        ({"X-Hub-Signature-256": "sha256=" + "0" * 64}, "bad-signature"),
        ({"X-Hub-Signature-256": "md5=abc"}, "bad-signature"),
    ],
)
def test_unsigned_or_badly_signed_deliveries_get_401(
    client: TestClient, starter: Starter, headers: dict[str, str], error: str
) -> None:
    response = client.post("/hooks/grade", content=json.dumps(grade_body()).encode(), headers=headers)
    assert (response.status_code, response.json()["error"]) == (401, error)
    assert starter.runs == []


def test_a_body_over_one_mebibyte_gets_413_whatever_content_length_says(client: TestClient, starter: Starter) -> None:
    body = b"x" * (MAX_BODY_BYTES + 1)
    response = client.post(
        "/hooks/grade",
        content=iter([body[:1000], body[1000:]]),
        headers={"X-Hub-Signature-256": sign(SECRET.encode(), body)},
    )
    assert (response.status_code, response.json()["error"]) == (413, "too-large")
    assert starter.runs == []


def test_a_patch_no_flow_run_can_carry_gets_413_before_any_run(client: TestClient, starter: Starter) -> None:
    # Under the body cap, but over what Prefect accepts as a flow run's parameters once encoded.
    patch = "+" + "\u00e9" * (MAX_PATCH_PARAMETER_BYTES // 6 + 1)
    response = post(client, "/hooks/grade", grade_body(patch=patch))
    assert (response.status_code, response.json()["error"]) == (413, "patch-too-large")
    assert starter.runs == []
    fits = "+" + "x" * (MAX_PATCH_PARAMETER_BYTES // 2)
    assert post(client, "/hooks/grade", grade_body(patch=fits), delivery="d-2").status_code == 202


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (b"{not json", 400, "malformed"),
        (b"\xff\xfe", 400, "malformed"),
        (b"[" * 200_000 + b"]" * 200_000, 400, "too-deep"),
        (json.dumps(grade_body(metadata={"a": {"b": 1}})).replace("1", "[" * 40 + "1" + "]" * 40), 400, "too-deep"),
        (b'{"task_id": "calc-divzero", "submission_id": "s-1", "patch": "", "number": 1e400}', 400, "out-of-range"),
        (
            b'{"task_id": "calc-divzero", "submission_id": "s-1", "patch": "", "n": ' + b"9" * 5000 + b"}",
            400,
            "out-of-range",
        ),
        (b'{"task_id": "calc-divzero", "submission_id": "s-1", "patch": "", "n": NaN}', 400, "malformed"),
        ([1, 2], 422, "invalid"),
        ({"task_id": "calc-divzero", "patch": ""}, 422, "invalid"),
        (grade_body(task_id="nope"), 422, "unknown-task"),
        (grade_body(submission_id="../evil"), 422, "invalid"),
        (grade_body(metadata={"model": {"nested": 1}}), 422, "invalid"),
    ],
)
def test_malformed_deliveries_get_a_4xx_and_a_json_error(
    client: TestClient, starter: Starter, body: Any, status: int, error: str
) -> None:
    response = post(client, "/hooks/grade", body.encode() if isinstance(body, str) else body)
    assert (response.status_code, response.json()["error"]) == (status, error)
    assert response.json()["detail"]
    assert starter.runs == []


def test_a_pull_request_numbered_1e400_is_a_400(client: TestClient, starter: Starter) -> None:
    body = json.dumps(pull_request()).replace('"number": 7', '"number": 1e400').encode()
    response = post(client, "/hooks/github", body, **{"X-GitHub-Event": "pull_request"})
    assert (response.status_code, response.json()["error"]) == (400, "out-of-range")
    assert starter.runs == []


def test_the_same_body_under_new_delivery_ids_is_one_grade(
    tmp_path: Path, client: TestClient, starter: Starter
) -> None:
    first = post(client, "/hooks/grade", grade_body(), delivery="d-1")
    assert first.status_code == 202
    run_id = first.json()["flow_run_id"]
    for delivery in ("d-2", "d-3", None, "d-1"):
        again = post(client, "/hooks/grade", grade_body(), delivery=delivery)
        assert (again.status_code, again.json()) == (200, {"flow_run_id": run_id, "duplicate": True})
    restarted = make_client(tmp_path, starter)
    assert post(restarted, "/hooks/grade", grade_body(), delivery="d-9").json() == {
        "flow_run_id": run_id,
        "duplicate": True,
    }
    assert len(starter.runs) == 1 and starter.calls == [starter.runs[0][1]]


@pytest.mark.parametrize(
    "change",
    [{"submission_id": "s-2"}, {"patch": (EXAMPLES / "calc" / "bad.diff").read_text()}, {"profile": "rubric"}],
)
def test_a_request_that_grades_something_else_is_a_new_grade(
    client: TestClient, starter: Starter, change: dict[str, str]
) -> None:
    assert post(client, "/hooks/grade", grade_body(), delivery="d-1").status_code == 202
    response = post(client, "/hooks/grade", grade_body(**change), delivery="d-1")
    assert (response.status_code, response.json()["duplicate"]) == (202, False)
    assert len(starter.runs) == 2


def test_metadata_alone_does_not_make_a_new_grade(client: TestClient, starter: Starter) -> None:
    assert post(client, "/hooks/grade", grade_body()).status_code == 202
    assert post(client, "/hooks/grade", grade_body(metadata={"model": "other"}), delivery="d-2").status_code == 200
    assert len(starter.runs) == 1


def test_an_edited_task_spec_is_a_new_grade(tmp_path: Path, starter: Starter) -> None:
    import shutil

    tasks = tmp_path / "tasks"
    shutil.copytree(EXAMPLES / "calc", tasks / "calc")
    client = TestClient(create_app(tasks, secret=SECRET, store_path=tmp_path / "d.db", start_run=starter))
    assert post(client, "/hooks/grade", grade_body()).status_code == 202
    spec = tasks / "calc" / "task.yaml"
    spec.write_text(spec.read_text().replace("timeout: 600", "timeout: 300"))
    assert post(client, "/hooks/grade", grade_body()).status_code == 202
    assert len(starter.runs) == 2


def test_two_requests_at_once_for_one_grade_get_one_run(tmp_path: Path) -> None:
    import asyncio

    import httpx

    starter = Starter()

    async def slow(request: GradeRequest, key: str) -> str:
        await asyncio.sleep(0.3)
        return await starter(request, key)

    app = create_app(EXAMPLES, secret=SECRET, store_path=tmp_path / "d.db", start_run=slow)
    raw = json.dumps(grade_body()).encode()

    async def both() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as http:
            sent = [
                http.post("/hooks/grade", content=raw, headers={"X-Hub-Signature-256": sign(SECRET.encode(), raw)})
                for _ in range(2)
            ]
            return list(await asyncio.gather(*sent))

    responses = asyncio.run(both())
    assert sorted(r.status_code for r in responses) == [200, 202]
    assert len({r.json()["flow_run_id"] for r in responses}) == 1
    assert len(starter.runs) == 1


@pytest.mark.parametrize("profile", ["/etc/passwd", "../../profiles/x.yaml", str(EXAMPLES / "suite.yaml"), 7])
def test_a_payload_cannot_name_a_profile_file(client: TestClient, starter: Starter, profile: object) -> None:
    response = post(client, "/hooks/grade", grade_body(profile=profile))
    assert (response.status_code, response.json()["error"]) == (422, "unknown-profile")
    assert starter.runs == []


def test_a_profile_listed_in_the_service_config_is_named_by_its_name(tmp_path: Path, starter: Starter) -> None:
    from gradeflow.service.config import load_service_config

    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "mine.yaml").write_text("name: mine\npass_threshold: 0.5\n")
    (tmp_path / "gradeflow.yaml").write_text("webhook: {profiles: [profiles/mine.yaml]}\n")
    client = make_client(tmp_path, starter, load_service_config(tmp_path / "gradeflow.yaml"))
    assert post(client, "/hooks/grade", grade_body(profile="mine")).status_code == 202
    assert post(client, "/hooks/grade", grade_body(profile="strict"), delivery="d-2").status_code == 202
    assert [request.profile for request, _ in starter.runs] == [str(tmp_path / "profiles" / "mine.yaml"), "strict"]
    listed = post(client, "/hooks/grade", grade_body(profile="profiles/mine.yaml"), delivery="d-3")
    assert listed.json()["error"] == "unknown-profile"


def test_a_listed_profile_may_not_take_a_shipped_name(tmp_path: Path) -> None:
    from gradeflow.service.config import load_service_config

    (tmp_path / "strict.yaml").write_text("name: strict\n")
    (tmp_path / "gradeflow.yaml").write_text("webhook: {profiles: [strict.yaml]}\n")
    with pytest.raises(SpecError, match=r"webhook\.profiles: .* is named 'strict'"):
        create_app(EXAMPLES, load_service_config(tmp_path / "gradeflow.yaml"), secret=SECRET, store_path=tmp_path / "d")


def test_when_prefect_is_down_the_answer_is_503_and_a_redelivery_is_accepted(
    client: TestClient, starter: Starter
) -> None:
    starter.down = True
    response = post(client, "/hooks/grade", grade_body())
    assert (response.status_code, response.json()["error"]) == (503, "prefect-unavailable")
    starter.down = False
    assert post(client, "/hooks/grade", grade_body()).status_code == 202


def test_a_pull_request_is_graded_against_the_mapped_task(client: TestClient, starter: Starter) -> None:
    response = post(client, "/hooks/github", pull_request(), **{"X-GitHub-Event": "pull_request"})
    assert response.status_code == 202
    request, _ = starter.runs[0]
    assert (request.task_id, request.submission_id) == ("calc-divzero", "pr7-0123456789ab")
    assert request.metadata == {"repo": "acme/calc", "pr": "7", "sha": "0123456789abcdef", "model": "agent-bot"}
    assert "ZeroDivisionError" in request.patch


@pytest.mark.parametrize(
    ("event", "body", "delivery", "status", "error"),
    [
        ("pull_request", pull_request(), None, 400, "no-delivery-id"),
        ("pull_request", pull_request(repo="acme/other"), "d-2", 422, "unknown-repo"),
        ("pull_request", {"action": "opened"}, "d-3", 422, "invalid"),
        ("pull_request", pull_request(diff_url="https://x/missing.diff"), "d-4", 502, "diff-unavailable"),
    ],
)
def test_github_deliveries_that_cannot_be_graded_are_refused(
    client: TestClient, starter: Starter, event: str, body: Any, delivery: str | None, status: int, error: str
) -> None:
    response = post(client, "/hooks/github", body, delivery=delivery, **{"X-GitHub-Event": event})
    assert (response.status_code, response.json()["error"]) == (status, error)
    assert starter.runs == []


@pytest.mark.parametrize(("event", "action"), [("ping", "opened"), ("push", "opened"), ("pull_request", "closed")])
def test_other_github_events_are_acknowledged_and_ignored(
    client: TestClient, starter: Starter, event: str, action: str
) -> None:
    response = post(client, "/hooks/github", pull_request(action=action), **{"X-GitHub-Event": event})
    assert response.status_code == 200
    assert "ignored" in response.json()
    assert starter.runs == []


def test_a_failed_diff_fetch_releases_the_delivery_for_redelivery(client: TestClient, starter: Starter) -> None:
    missing = pull_request(diff_url="https://x/missing.diff")
    assert post(client, "/hooks/github", missing, **{"X-GitHub-Event": "pull_request"}).status_code == 502
    assert post(client, "/hooks/github", pull_request(), **{"X-GitHub-Event": "pull_request"}).status_code == 202


def test_the_receiver_refuses_to_start_without_a_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRADEFLOW_WEBHOOK_SECRET", raising=False)
    with pytest.raises(SpecError, match="GRADEFLOW_WEBHOOK_SECRET"):
        create_app(EXAMPLES, store_path=tmp_path / "d.db")


def test_the_receiver_refuses_a_folder_without_task_specs(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no task spec"):
        create_app(tmp_path, secret="s", store_path=tmp_path / "d.db")


def test_a_run_creation_past_the_deadline_is_a_503_and_the_delivery_is_released(
    tmp_path: Path, starter: Starter
) -> None:
    import asyncio

    calls: list[str] = []

    async def slow(request: GradeRequest, key: str) -> str:
        calls.append(key)
        if len(calls) == 1:
            await asyncio.sleep(5)
        return "00000000-0000-0000-0000-000000000009"

    app = create_app(EXAMPLES, secret=SECRET, store_path=tmp_path / "d.db", start_run=slow)
    app.state.receiver.deadline = 0.2
    client = TestClient(app)
    response = post(client, "/hooks/grade", grade_body())
    assert (response.status_code, response.json()["error"]) == (503, "prefect-unavailable")
    assert post(client, "/hooks/grade", grade_body(), delivery="d-2").status_code == 202
    assert len(calls) == 2 and calls[0] == calls[1]
