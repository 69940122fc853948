"""Redacted structlog JSON logs: the processor alone, and a real grade whose environment holds a secret."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from builders import EXAMPLES, calc_with_tests
from gradeflow import grade, load_task
from gradeflow.logs import REDACTED, configure_logging, get_logger, redact, redacting, scrub

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PLAIN_SECRET = "correct-horse-battery-staple"  # looks like nothing: only known as an environment value


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    """gradeflow's logging pipeline writing into a buffer, restored afterwards."""
    monkeypatch.setenv("GRADEFLOW_TEST_SECRET", SECRET)
    buffer = io.StringIO()
    configure_logging("INFO", stream=buffer)
    yield buffer
    structlog.reset_defaults()


def _lines(buffer: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("message", f"token is {SECRET}"),
        ("note", "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123"),
        ("note", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----"),
        ("note", "AKIAABCDEFGHIJKLMNOP"),
        ("note", "connect with password=hunter22 please"),
        ("note", "sk-proj-0123456789abcdefXYZ"),
        ("nested", {"deeper": [f"x {SECRET} y"]}),
    ],
)
def test_token_like_values_are_scrubbed_at_any_depth(captured: io.StringIO, key: str, value: object) -> None:
    get_logger().info("something happened", **{key: value})
    text = captured.getvalue()
    assert REDACTED in text
    for needle in (SECRET, "abcdefghijklmnopqrstuvwxyz0123", "MIIEow", "AKIAABCDEFGHIJKLMNOP", "hunter22", "sk-proj"):
        assert needle not in text


@pytest.mark.parametrize("key", ["patch", "stdout", "content", "env", "api_key", "db_password", "output_tail"])
def test_content_and_secret_keys_are_dropped_whole(captured: io.StringIO, key: str) -> None:
    get_logger().info("event", **{key: "def f():\n    return 42\n"}, nested={key: "x = 1"})
    line = _lines(captured)[0]
    assert line[key] == REDACTED and line["nested"] == {key: REDACTED}


def test_values_of_the_environment_and_of_registered_secrets(
    captured: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_SERVICE_URL", "https://user:pw@internal.example")
    log = get_logger()
    with redacting([PLAIN_SECRET, "short"]):
        log.info("calling", target="https://user:pw@internal.example/x", word=PLAIN_SECRET, n=3, ok=True, none=None)
        log.info("short values stay", word="short")
    log.info("outside the block", word=PLAIN_SECRET)
    first, second, third = _lines(captured)
    assert (first["target"], first["word"], first["n"], first["ok"], first["none"]) == (
        f"{REDACTED}/x",
        REDACTED,
        3,
        True,
        None,
    )
    assert second["word"] == "short" and third["word"] == PLAIN_SECRET


def test_context_variables_are_merged(captured: io.StringIO) -> None:
    with structlog.contextvars.bound_contextvars(run_id="r-1", task_id="t-1"):
        get_logger().info("step", step="tests")
    line = _lines(captured)[0]
    assert (line["run_id"], line["task_id"], line["step"], line["level"]) == ("r-1", "t-1", "tests", "info")


def test_processor_is_a_plain_callable() -> None:
    event = redact(None, "info", {"event": f"e {SECRET}", "stderr": "boom", "count": 2})
    assert event == {"event": f"e {REDACTED}", "stderr": REDACTED, "count": 2}
    assert scrub("nothing to hide", []) == "nothing to hide"


REGRESSION_TEST = """\
import os

import pytest
from calc import divide


def test_divide_by_zero_raises():
    print("leaking", os.environ["GRADEFLOW_TEST_SECRET"], os.environ["TASK_DB_PASSWORD"])
    with pytest.raises(ZeroDivisionError):
        divide(1, 0)
    assert os.environ["GRADEFLOW_TEST_SECRET"] == "wrong", os.environ["TASK_DB_PASSWORD"]
"""

LEAKY_TEST = """\
import os


def test_environment_leaks_into_output():
    print(os.environ["GRADEFLOW_TEST_SECRET"], os.environ["TASK_DB_PASSWORD"])
    assert os.environ["TASK_DB_PASSWORD"] == os.environ["GRADEFLOW_TEST_SECRET"], os.environ["TASK_DB_PASSWORD"]
"""


def _secret_calc(tmp_path: Path) -> Path:
    """The calc example with the secret in the task's env and a visible test that prints and fails on it."""
    leaky = ["tests/test_leaky.py::test_environment_leaks_into_output"]
    env = {"GRADEFLOW_TEST_SECRET": SECRET, "TASK_DB_PASSWORD": PLAIN_SECRET}
    return calc_with_tests(tmp_path, "calc-secret", {"test_leaky.py": LEAKY_TEST}, leaky, env=env)


def _patch_with_test() -> str:
    fix = (EXAMPLES / "calc" / "reference.diff").read_text()
    lines = REGRESSION_TEST.splitlines()
    added = "".join(f"+{line}\n" for line in lines)
    return fix + (
        "diff --git a/tests/test_regression.py b/tests/test_regression.py\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/tests/test_regression.py\n@@ -0,0 +1,{len(lines)} @@\n{added}"
    )


@pytest.mark.usefixtures("prefect")
def test_a_grade_whose_environment_holds_a_secret_logs_none_of_it(
    tmp_path: Path, captured: io.StringIO, capfd: pytest.CaptureFixture[str]
) -> None:
    result = grade(load_task(_secret_calc(tmp_path)), patch=_patch_with_test(), profile="rubric")
    assert result.status == "graded"
    assert (
        result.component("tests").details["pass_to_pass"]["tests/test_leaky.py::test_environment_leaks_into_output"]
        == "failed"
    )  # the secret really went through the candidate's output
    assert result.component("test_evidence").details["selected"] == ["tests/test_regression.py"]
    out, err = capfd.readouterr()
    logs = captured.getvalue()
    payload = result.model_dump_json()
    for text in (logs, out, err, payload):
        assert SECRET not in text and PLAIN_SECRET not in text
    lines = _lines(captured)
    assert {line["step"] for line in lines if line["event"] == "step"} >= {
        "baseline",
        "test_evidence",
        "tests",
        "combine",
    }
    assert all(line["task_id"] == "calc-secret" and line["run_id"] for line in lines)
    assert "test_divide_by_zero_raises" not in logs  # no file contents
    stored = json.dumps([run.parameters for run in asyncio.run(_flow_runs("calc-secret"))])
    assert "GRADEFLOW_TEST_SECRET" in stored  # the names are kept, the values are masked
    assert SECRET not in stored and PLAIN_SECRET not in stored


async def _flow_runs(task_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    async with get_client() as client:
        name = FlowRunFilterName(like_=f"grade-{task_id}-")
        return list(await client.read_flow_runs(flow_run_filter=FlowRunFilter(name=name)))


def test_the_flow_run_id_a_worker_sets_is_logged_as_it_is(
    captured: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker starts each flow run's process with PREFECT__FLOW_RUN_ID set: every line showed "[redacted]".
    run_id = "0f6c2a1e-7d4b-4c1a-9a6e-3b2f1d0c9e8a"
    monkeypatch.setenv("PREFECT__FLOW_RUN_ID", run_id)
    monkeypatch.setenv("SOME_VALUE_HOLDER", PLAIN_SECRET)
    get_logger().info("grade started", flow_run_id=run_id, run_id=run_id, note=PLAIN_SECRET)
    line = _lines(captured)[-1]
    assert (line["flow_run_id"], line["run_id"], line["note"]) == (run_id, run_id, REDACTED)
