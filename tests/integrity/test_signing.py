"""The harness's signatures: a record or call log rewritten without the run's key is tampering, where the
base run's record was signed; a run whose pytest never read the channel is judged as before."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gradeflow.integrity.harness import Harness, RunFacts, check_run, read_record, summarize
from gradeflow.integrity.signing import parse_log
from gradeflow.models.evidence import HarnessSummary, TestCaseResult
from gradeflow.sandbox.fake import FakeSandbox

KEY = "5e" * 32
OTHER_KEY = "a7" * 32
HARNESS = Harness(
    nonce="0badc0de",
    canary_file="tests/test_calc_value_0bad.py",
    must_pass="test_value_c0de",
    must_fail="test_order_c0de",
    key=KEY,
)
REPORT = b"<testsuites/>"
NODE = "tests/test_calc.py::test_div"


def _mac(key: str, data: bytes) -> str:
    return hmac.new(bytes.fromhex(key), data, hashlib.sha256).hexdigest()


def signed_log(entries: list[tuple[str, str]], key: str = KEY, start: int = 0) -> bytes:
    """Call-log lines as the plugin writes them: ``[sequence, node id, result, signature]``."""
    lines = []
    for number, (nodeid, result) in enumerate(entries, start):
        signature = _mac(key, json.dumps([number, nodeid, result]).encode())
        lines.append(json.dumps([number, nodeid, result, signature]))
    return "".join(line + "\n" for line in lines).encode()


def record_bytes(calls: dict[str, str], key: str | None = KEY, junit: bytes = REPORT) -> bytes:
    """A finished record as the plugin writes it, signed with ``key`` (``None``: no signature line)."""
    body = json.dumps(
        {
            "nonce": HARNESS.nonce,
            "calls": calls,
            "exitstatus": 1,
            "junit_sha256": hashlib.sha256(junit).hexdigest(),
            "finished": True,
        }
    )
    return (body if key is None else f"{body}\nhmac-sha256 {_mac(key, body.encode())}\n").encode()


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[FakeSandbox]:
    box = FakeSandbox(tmp_path, lambda call: call.result(), [])
    yield box
    box.close()


def _write(sandbox: FakeSandbox, record: bytes, log: bytes) -> None:
    Path(sandbox.output_dir, HARNESS.record_name).write_bytes(record)
    Path(sandbox.output_dir, HARNESS.log_name).write_bytes(log)


def _problems(sandbox: FakeSandbox, base: HarnessSummary) -> list[str]:
    record = read_record(sandbox, HARNESS)
    cases = [
        TestCaseResult(classname="tests.test_calc", name="test_div", outcome="failed"),
        TestCaseResult(classname="tests.test_calc_value_0bad", name=HARNESS.must_pass, outcome="passed"),
        TestCaseResult(classname="tests.test_calc_value_0bad", name=HARNESS.must_fail, outcome="failed"),
    ]
    facts = RunFacts(1, REPORT, cases, {NODE: "failed"}, {NODE: "failed"}, (("/ws", "."),))
    return check_run(HARNESS, record, facts, base)


SIGNED_BASE = HarnessSummary(canaries=True, exit_reports_failures=True, signed=True)
UNSIGNED_BASE = SIGNED_BASE.model_copy(update={"signed": False})


def test_a_signed_record_and_log_verify_and_the_summary_says_so(sandbox: FakeSandbox) -> None:
    _write(sandbox, record_bytes({NODE: "raised"}), signed_log([(NODE, "raised")]))
    record = read_record(sandbox, HARNESS)
    assert record is not None and record.signed and record.signature_problems == []
    assert record.logged == {NODE: "raised"} and record.finished
    assert summarize(record, HARNESS, [], (("/ws", "."),), 1).signed
    assert _problems(sandbox, SIGNED_BASE) == []


@pytest.mark.parametrize(
    ("record", "log", "problem"),
    [
        # The red team's rewrite: JUnit, record (its hash recomputed) and log consistent, but without the key.
        (record_bytes({NODE: "ok"}, key=None), json.dumps([0, NODE, "ok", ""]).encode() + b"\n", "no signature"),
        (record_bytes({NODE: "ok"}, key=OTHER_KEY), signed_log([(NODE, "ok")], OTHER_KEY), "not the run key's"),
        (record_bytes({NODE: "raised"}), signed_log([(NODE, "ok")], OTHER_KEY), "line 1 of the harness's call log"),
        # Signed lines moved out of their place (a line dropped, another's signature reused) do not verify.
        (record_bytes({NODE: "raised"}), signed_log([(NODE, "raised")], start=1), "not signed with the run's key"),
    ],
)
def test_a_rewrite_without_the_key_is_tampering_where_the_base_was_signed(
    sandbox: FakeSandbox, record: bytes, log: bytes, problem: str
) -> None:
    _write(sandbox, record, log)
    problems = _problems(sandbox, SIGNED_BASE)
    assert any(problem in p for p in problems), problems
    assert not any("signature" in p or "signed" in p for p in _problems(sandbox, UNSIGNED_BASE))


def test_a_record_whose_body_changed_under_its_signature_is_tampering(sandbox: FakeSandbox) -> None:
    honest = record_bytes({NODE: "raised"})
    forged = honest.replace(b'"raised"', b'"ok"', 1)
    _write(sandbox, forged, signed_log([(NODE, "raised")]))
    record = read_record(sandbox, HARNESS)
    assert record is not None and not record.signed
    assert any("record was rewritten" in p for p in _problems(sandbox, SIGNED_BASE))


@pytest.mark.parametrize(
    ("log", "calls", "problem"),
    [
        (signed_log([("a::t", "ok"), ("b::t", "raised")]), {"a::t": "ok", "b::t": "raised"}, None),
        (signed_log([("a::t", "raised"), ("a::t", "ok")]), {"a::t": "raised"}, "two results for a::t"),
        (signed_log([("a::t", "ok"), ("a::t", "ok")]), {"a::t": "ok"}, None),  # a rerun plugin may log a test twice
        (b'{"a::t": "ok"}\n', {}, "line 1"),
        (b'7\n[0, "a::t", "passed", ""]\n\xff\n', {}, "line 1"),
        (b'["a::t", "ok"]\n', {}, "line 1"),  # the unsigned format of earlier plugins
    ],
)
def test_the_call_log_keeps_the_first_result_and_names_every_odd_line(
    log: bytes, calls: dict[str, str], problem: str | None
) -> None:
    found, problems, unsigned = parse_log(log, KEY)
    assert found == calls
    if problem is None:
        assert problems == [] and unsigned == []
    else:
        assert any(problem in p for p in problems), problems
