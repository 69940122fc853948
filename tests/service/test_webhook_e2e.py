"""The webhook receiver against a real ``prefect server start`` and a real ``gradeflow serve``."""

from __future__ import annotations

import time

import pytest
from service_procs import EXAMPLES, SECRET, Delivery, Service, grade_payload, signed_post

from gradeflow.evaluation.ledger import Ledger

pytestmark = pytest.mark.slow


def test_a_signed_delivery_completes_a_run_that_carries_the_payload(service: Service, graded: Delivery) -> None:
    run = graded.run
    assert run["state_type"] == "COMPLETED", run["state"]
    assert run["name"] == "grade-calc-divzero-webhook-1"
    request = run["parameters"]["request"]
    assert request["patch"] == graded.payload["patch"]
    assert request["submission_id"] == "webhook-1"
    assert request["metadata"] == graded.payload["metadata"]
    tags = set(run["tags"])
    assert {"task:calc-divzero", "model:agent-x", "profile:default", "decision:merge-candidate"} <= tags
    keys = {a["key"] for a in service.api.artifacts(run["id"])}
    assert {"grade-calc-divzero-webhook-1-components", "grade-calc-divzero-webhook-1-summary"} <= keys
    ledger = Ledger(str(service.ledger))
    try:
        assert [r.passed for r in ledger.records() if r.run_id == "webhook-1"] == [True]
    finally:
        ledger.close()


@pytest.mark.parametrize("delivery", ["same", "delivery-0002", "delivery-0003", None])
def test_a_redelivery_or_a_new_delivery_id_is_the_existing_run(
    service: Service, graded: Delivery, delivery: str | None
) -> None:
    delivery_id = graded.delivery_id if delivery == "same" else delivery
    again = signed_post(f"{service.webhook}/hooks/grade", graded.payload, SECRET, delivery_id)
    assert again.status_code == 200
    assert again.json() == {"flow_run_id": graded.run["id"], "duplicate": True}
    time.sleep(1)
    assert len(service.api.runs_named("grade-calc-divzero-webhook-1")) == 1


@pytest.mark.parametrize(
    ("change", "error"),
    [({"profile": "/etc/passwd"}, "unknown-profile"), ({"profile": "../../gradeflow.yaml"}, "unknown-profile")],
)
def test_a_payload_naming_a_profile_file_starts_no_run(service: Service, change: dict[str, str], error: str) -> None:
    payload = {**grade_payload("profile-path"), **change}
    response = signed_post(f"{service.webhook}/hooks/grade", payload, SECRET, f"d-{change['profile']}")
    assert (response.status_code, response.json()["error"]) == (422, error)
    time.sleep(1)
    assert service.api.runs_named("grade-calc-divzero-profile-path") == []


@pytest.mark.parametrize(
    ("secret", "headers", "error"),
    [("wrong-secret", {}, "bad-signature"), (None, {}, "unsigned")],
)
def test_a_badly_signed_delivery_starts_no_run(
    service: Service, secret: str | None, headers: dict[str, str], error: str
) -> None:
    payload = grade_payload(f"forged-{error}")
    if secret is None:
        import httpx

        response = httpx.post(f"{service.webhook}/hooks/grade", json=payload, timeout=30)
    else:
        response = signed_post(f"{service.webhook}/hooks/grade", payload, secret, f"d-{error}", **headers)
    assert response.status_code == 401
    assert response.json()["error"] == error
    time.sleep(1)
    assert service.api.runs_named(f"grade-calc-divzero-forged-{error}") == []


def test_the_nightly_evaluation_is_scheduled_from_the_config(service: Service) -> None:
    deployment = service.api.deployment("evaluate-request/evaluate-suite")
    assert deployment is not None
    assert [s["schedule"]["cron"] for s in deployment["schedules"]] == ["30 3 * * *"]
    assert deployment["parameters"]["request"]["suite"] == str(service.home / "suite.yaml")
    assert "request" in deployment["parameter_openapi_schema"]["properties"]


def test_the_evaluate_suite_deployment_grades_the_suite_into_the_ledger(service: Service) -> None:
    deployment = service.api.deployment("evaluate-request/evaluate-suite")
    assert deployment is not None
    run = service.api.wait_final(service.api.create_run(deployment["id"], {}), 150)
    assert run["state_type"] == "COMPLETED", run["state"]
    ledger = Ledger(str(service.ledger))
    try:
        outcome = {r.run_id: r.passed for r in ledger.records() if r.run_id.startswith("nightly-")}
    finally:
        ledger.close()
    assert outcome == {"nightly-1": True, "nightly-2": False}
    artifacts = {a["key"]: a for a in service.api.artifacts(run["id"])}
    assert float(artifacts["suite-progress"]["data"]) == 100.0
    assert artifacts["suite-report"]["type"] == "markdown" or "link" in artifacts["suite-report"]["type"]
    report = service.home / ".gradeflow" / "reports" / f"suite-{run['id']}.html"
    assert report.is_file() and report.as_uri() in artifacts["suite-report"]["data"]


def test_each_grade_of_a_served_evaluation_holds_a_sandbox_slot(service: Service) -> None:
    """While a served evaluation's grade runs (its candidate sleeps at import), the ``gradeflow-sandbox``
    limit shows it; once the run is over, no slot is left held."""
    calc = EXAMPLES / "calc"
    header, body = (calc / "reference.diff").read_text().split("@@", 1)
    sleepy = (
        '@@ -1,4 +1,7 @@\n """Basic arithmetic helpers."""\n+import time\n+\n+time.sleep(8)\n \n \n def add(a, b):\n'
    )
    patch = service.home / "sleepy.diff"
    patch.write_text(header + sleepy + "@@" + body.replace("@@ -14,7 +14,10 @@", "@@ -14,7 +17,10 @@", 1))
    suite = service.home / "sleepy-suite.yaml"
    suite.write_text(
        f"tasks: [{calc / 'task.yaml'}]\nsubmissions:\n"
        f"  - {{task_id: calc-divzero, patch: {patch}, run_id: sleepy-1, model_id: m-s}}\n"
    )
    deployment = service.api.deployment("evaluate-request/evaluate-suite")
    assert deployment is not None
    request = {"suite": str(suite), "ledger": str(service.home / "sleepy.db")}
    run_id = service.api.create_run(deployment["id"], {"request": request})

    def slots() -> int:
        return int(service.api.client.get("v2/concurrency_limits/gradeflow-sandbox").json()["active_slots"])

    held = 0
    while service.api.flow_run(run_id)["state_type"] not in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
        held = max(held, slots())
        time.sleep(0.2)
    assert service.api.flow_run(run_id)["state_type"] == "COMPLETED"
    assert held >= 1 and slots() == 0, held
