"""The harness check: a run whose report disagrees with the grader's plugin record is tampered."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from builders import make_task
from gradeflow.integrity.harness import Harness, HarnessRecord, RunFacts, check_run, record_cases, summarize
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import HarnessSummary, PluginRef, TestCaseResult
from gradeflow.tasks._junit import names_in, outcomes_for

REPORT = b"<testsuites/>"
HARNESS = Harness(
    nonce="0badc0de",
    canary_file="tests/test_calc_value_0bad.py",
    must_pass="test_value_c0de",
    must_fail="test_order_c0de",
)
BASE = HarnessSummary(
    plugins=[PluginRef(module="pytest_timeout", file="/venv/pytest_timeout.py")],
    canaries=True,
    exit_reports_failures=True,
)


def _case(name: str, outcome: str, classname: str = "tests.test_calc") -> TestCaseResult:
    return TestCaseResult(classname=classname, name=name, file="tests/test_calc.py", outcome=outcome)  # type: ignore[arg-type]


def _honest() -> tuple[HarnessRecord, RunFacts]:
    record = HarnessRecord(
        nonce=HARNESS.nonce,
        plugins=[
            {"module": "pytest_timeout", "file": "/venv/pytest_timeout.py"},
            {"module": HARNESS.module, "file": "/harness/x.py"},
            {"module": "tests/conftest.py", "file": "/ws/tests/conftest.py"},
        ],
        calls={"tests/test_calc.py::test_div": "ok"},
        logged={"tests/test_calc.py::test_div": "ok"},
        exitstatus=1,
        junit_sha256=hashlib.sha256(REPORT).hexdigest(),
        finished=True,
    )
    facts = RunFacts(
        exit_code=1,
        junit=REPORT,
        cases=[_case("test_div", "passed"), _case(HARNESS.must_pass, "passed"), _case(HARNESS.must_fail, "failed")],
        junit_outcomes={"tests/test_calc.py::test_div": "passed"},
        record_outcomes={"tests/test_calc.py::test_div": "passed"},
        places=(("/ws", "."),),
    )
    return record, facts


def test_an_honest_run_has_no_problem() -> None:
    record, facts = _honest()
    assert check_run(HARNESS, record, facts, BASE) == []


def _without_canary(facts: RunFacts, name: str) -> RunFacts:
    return RunFacts(**{**facts.__dict__, "cases": [c for c in facts.cases if c.name != name]})


@pytest.mark.parametrize(
    ("forge", "problem"),
    [
        (lambda r, f: (None, f), "left no record"),
        (lambda r, f: (r.model_copy(update={"finished": False}), f), "ended before pytest finished"),
        (lambda r, f: (r, RunFacts(**{**f.__dict__, "junit": b"<testsuites></testsuites>"})), "differs from the one"),
        (lambda r, f: (r, RunFacts(**{**f.__dict__, "exit_code": 0})), "but the command exited 0"),
        (lambda r, f: (r.model_copy(update={"logged": None}), f), "call log is missing"),
        (
            lambda r, f: (r.model_copy(update={"calls": {"tests/test_calc.py::test_div": "raised"}}), f),
            "record of the test calls differs from the log",
        ),
        (lambda r, f: (r.model_copy(update={"log_problems": ["line 2 of the log"]}), f), "line 2 of the log"),
        (lambda r, f: (r, _without_canary(f, HARNESS.must_fail)), "must fail is missing"),
        (lambda r, f: (r, _without_canary(f, HARNESS.must_pass)), "must pass is missing"),
        (
            lambda r, f: (
                r,
                RunFacts(**{**f.__dict__, "cases": [*f.cases[:2], _case(HARNESS.must_fail, "passed")]}),
            ),
            "must fail is passed",
        ),
        (
            lambda r, f: (r, RunFacts(**{**f.__dict__, "record_outcomes": {"tests/test_calc.py::test_div": "failed"}})),
            "reported passed but the test call did not pass: tests/test_calc.py::test_div",
        ),
        (
            lambda r, f: (
                r.model_copy(update={"plugins": [*r.plugins, {"module": "evil", "file": "/ws/src/evil.py"}]}),
                f,
            ),
            "plugins the base did not load were loaded: evil (./src/evil.py)",
        ),
        (
            lambda r, f: (
                r.model_copy(update={"plugins": [{"module": "pytest_timeout", "file": "/ws/src/pytest_timeout.py"}]}),
                f,
            ),
            "pytest_timeout (./src/pytest_timeout.py)",  # same name, another file: not the base's plugin
        ),
    ],
)
def test_each_forgery_is_named(forge, problem: str) -> None:
    record, facts = forge(*_honest())
    problems = check_run(HARNESS, record, facts, BASE)
    assert any(problem in p for p in problems), problems


def test_canaries_are_not_checked_when_the_base_could_not_run_them() -> None:
    record, facts = _honest()
    facts = _without_canary(_without_canary(facts, HARNESS.must_fail), HARNESS.must_pass)
    assert check_run(HARNESS, record, facts, BASE.model_copy(update={"canaries": False})) == []


def test_a_run_that_stopped_before_any_test_is_not_blamed_for_its_canaries() -> None:
    # A collection error ends pytest before the canaries run; the failing command already fails the task.
    record, facts = _honest()
    record = record.model_copy(update={"calls": {}, "logged": {}, "exitstatus": 2})
    stopped = RunFacts(**{**facts.__dict__, "exit_code": 2, "cases": [_case("tests.test_calc", "error")]})
    stopped = RunFacts(**{**stopped.__dict__, "junit_outcomes": {}, "record_outcomes": {}})
    assert check_run(HARNESS, record, stopped, BASE) == []
    # One passed case in the report with no call behind it is still a forgery, and the canaries are checked.
    forged = RunFacts(**{**stopped.__dict__, "cases": [_case("test_div", "passed")]})
    assert any("must pass is missing" in p for p in check_run(HARNESS, record, forged, BASE))


def test_the_summary_drops_conftests_and_the_harness_and_sees_the_canaries() -> None:
    record, facts = _honest()
    summary = summarize(record, HARNESS, facts.cases, facts.places, 1)
    assert summary.plugins == BASE.plugins and summary.canaries and summary.exit_reports_failures
    assert not summarize(record, HARNESS, facts.cases[:1], facts.places, 1).canaries
    # A command that swallows pytest's status (``pytest ...; true``) exits 0 on the base too.
    assert not summarize(record, HARNESS, facts.cases, facts.places, 0).exit_reports_failures


def test_exit_zero_is_tampering_when_the_base_command_showed_the_must_fail_canary() -> None:
    # A consistent record and report, but the process's status was forged (``os._exit(0)`` after the
    # session, a wrapper that rewrites it): the must-fail canary fails in every honest run.
    record, facts = _honest()
    record = record.model_copy(update={"exitstatus": None})
    zero = RunFacts(**{**facts.__dict__, "exit_code": 0})
    assert any("exited 0 although" in p for p in check_run(HARNESS, record, zero, BASE))
    assert check_run(HARNESS, record, facts, BASE) == []
    # When the task's command hides every status (the base exited 0 too), 0 proves nothing.
    assert check_run(HARNESS, record, zero, BASE.model_copy(update={"exit_reports_failures": False})) == []


def test_record_cases_are_named_like_junit() -> None:
    record = HarnessRecord(
        nonce="x", calls={"tests/sub/test_a.py::TestK::test_m[1]": "ok", "tests/test_b.py::t": "failed"}
    )
    assert [(c.classname, c.name, c.outcome) for c in record_cases(record)] == [
        ("tests.sub.test_a.TestK", "test_m[1]", "passed"),
        ("tests.test_b", "t", "failed"),
    ]


def test_record_cases_keep_only_names_an_id_can_match() -> None:
    calls = {"tests/test_a.py::test_m[x::y]": "ok", "tests/test_a.py::test_other": "raised", "t.py::K::t": "ok"}
    record = HarnessRecord(nonce="x", calls=calls)
    ids = ["tests/test_a.py::test_m[x::y]", "t.py::K::t"]
    kept = record_cases(record, names_in(ids))
    assert [c.name for c in kept] == ["test_m[x::y]", "t"]
    assert outcomes_for(ids, kept) == outcomes_for(ids, record_cases(record)) == dict.fromkeys(ids, "passed")


def test_canaries_look_like_the_tasks_tests_and_change_every_run(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text("")
    task = TaskSpec.model_validate(
        make_task(
            tests={"command": "pytest {junit}", "fail_to_pass": ["tests/test_calc.py::test_div"], "pass_to_pass": []}
        )
    )
    first, second = Harness.fresh(task, tmp_path), Harness.fresh(task, tmp_path)
    assert first.nonce != second.nonce and first.canary_file != second.canary_file
    assert first.canary_file.startswith("tests/test_calc_") and first.canary_file.endswith(".py")
    assert first.must_pass.startswith("test_") and first.must_fail.startswith("test_")
    first.write_canaries(tmp_path)
    assert (tmp_path / first.canary_file).read_text() == ""  # its tests reach the run through the channel only
    source = json.loads(first.channel("/ws/"))["sources"][f"/ws/{first.canary_file}"]
    assert f"def {first.must_pass}():" in source and f"def {first.must_fail}():" in source
    assert "gradeflow" not in source and "canary" not in source
    first.remove(tmp_path)
    assert not (tmp_path / first.canary_file).exists()


@pytest.mark.parametrize(
    ("found", "base", "problem"),
    [
        ({"patched": ["Function.runtest"]}, {}, "pytest internals were replaced during the run: Function.runtest"),
        (
            {"foreign_code": ["/ws/src/calc.py"]},
            {},
            "ran code from a file the base's tests never ran as one: ./src/calc.py",
        ),
        ({"misplaced_code": ["tests/test_calc.py::test_div"]}, {}, "a function its file does not define"),
        # What the base run did too is the project's own (a plugin's patch, a library's decorator).
        ({"patched": ["Function.runtest"]}, {"patched": ["Function.runtest"]}, None),
        (
            {"foreign_code": ["/ws/tests/helpers.py", "/venv/hypothesis/core.py"]},
            {"foreign_code": ["./tests/helpers.py", "/venv/hypothesis/core.py"]},
            None,
        ),
        (
            {"misplaced_code": ["tests/test_calc.py::test_made"]},
            {"misplaced_code": ["tests/test_calc.py::test_made"]},
            None,
        ),
    ],
)
def test_machinery_changed_during_the_run_is_tampering_unless_the_base_did_it(
    found: dict, base: dict, problem: str | None
) -> None:
    record, facts = _honest()
    problems = check_run(HARNESS, record.model_copy(update=found), facts, BASE.model_copy(update=base))
    assert problems == [] if problem is None else any(problem in p for p in problems), problems


def test_the_summary_keeps_what_the_base_run_changed_relative_to_the_workspace() -> None:
    record, facts = _honest()
    record = record.model_copy(update={"patched": ["b", "a", "a"], "foreign_code": ["/ws/tests/h.py", "/lib/x.py"]})
    summary = summarize(record, HARNESS, facts.cases, facts.places, 1)
    assert (summary.patched, summary.foreign_code) == (["a", "b"], ["./tests/h.py", "/lib/x.py"])


def test_the_summary_keeps_markers_and_where_skips_came_from() -> None:
    record, facts = _honest()
    record = record.model_copy(
        update={
            "marked": {"tests/test_calc.py::test_div": ["xfail"]},
            "raisers": {"tests/test_calc.py::test_skip": "/ws/src/calc.py", "tests/test_calc.py::test_x": "/venv/x.py"},
        }
    )
    summary = summarize(record, HARNESS, facts.cases, facts.places, facts.exit_code)
    assert summary.marked == {"tests/test_calc.py::test_div": ["xfail"]}
    assert summary.raisers == {
        "tests/test_calc.py::test_skip": "./src/calc.py",
        "tests/test_calc.py::test_x": "/venv/x.py",
    }


def test_what_the_audit_hook_saw_that_the_base_did_not_is_tampering() -> None:
    record, facts = _honest()
    audit = [("sys.settrace", "/ws/src/calc.py", ""), ("compile", "/ws/src/gen.py", "<string>")]
    record = record.model_copy(update={"audit": audit})
    base = BASE.model_copy(update={"audit": ["compile ./src/gen.py"]})
    problems = check_run(HARNESS, record, facts, base)
    assert problems == [
        "the code under test did at run time what the base's run never did: sys.settrace from ./src/calc.py"
    ]
    assert summarize(record, HARNESS, facts.cases, facts.places, facts.exit_code).audit == [
        "compile ./src/gen.py",
        "sys.settrace ./src/calc.py",
    ]


def test_a_rebound_test_module_name_the_base_did_not_have_is_tampering() -> None:
    record, facts = _honest()
    record = record.model_copy(update={"namespaces": ["/ws/tests/test_calc.py pytest", "/ws/tests/test_x.py close"]})
    base = BASE.model_copy(update={"namespaces": ["./tests/test_x.py close"]})
    problems = check_run(HARNESS, record, facts, base)
    assert problems == ["names the test modules hold were rebound during the run: ./tests/test_calc.py pytest"]
