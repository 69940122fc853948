"""Whose fault a broken candidate step is: a fresh sandbox is probed before the candidate is blamed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fakes import BUG, FIX, diff, fake_pytest, junit
from gradeflow import grade, load_task
from gradeflow.errors import InfraError, SandboxBroken, SandboxUnavailable
from gradeflow.sandbox import CommandResult, FakeCall, FakeSandboxFactory
from gradeflow.tasks.attribution import attributable, broken_component

pytestmark = pytest.mark.usefixtures("prefect")


def _breaks_on_the_candidate(error: InfraError) -> Callable[[FakeCall], CommandResult]:
    """The base runs fine; any command over the fixed source (the candidate) raises ``error``."""

    def handler(call: FakeCall) -> CommandResult:
        if "ZeroDivisionError" in call.read("src/calc.py"):
            raise error
        return fake_pytest(call)

    return handler


def test_a_broken_candidate_run_with_a_healthy_probe_is_a_graded_zero(repo_task: Callable[..., Path]) -> None:
    failure = SandboxBroken("docker sandbox: the processes 'pytest' left behind could not be reaped")
    factory = FakeSandboxFactory(_breaks_on_the_candidate(failure), healthy=True)
    result = grade(load_task(repo_task(task_id="blame-ok")), patch=diff(BUG, FIX), sandbox=factory)
    assert (result.status, result.score, result.passed) == ("graded", 0.0, False)
    tests = result.component("tests")
    assert (tests.score, tests.passed, tests.role, tests.reason_codes) == (
        0.0,
        False,
        "objective",
        ["candidate-broke-sandbox"],
    )
    assert tests.messages == [
        "tests: the candidate's run broke its sandbox (SandboxBroken: docker sandbox: the processes 'pytest' left "
        "behind could not be reaped); a fresh sandbox works, so the submission is at fault"
    ]
    assert "candidate-broke-sandbox" in result.reason_codes and result.exit_code == 1
    assert factory.probes == 1


def test_a_broken_candidate_run_with_a_failing_probe_stays_inconclusive(repo_task: Callable[..., Path]) -> None:
    factory = FakeSandboxFactory(_breaks_on_the_candidate(SandboxUnavailable("the engine went away")))
    result = grade(load_task(repo_task(task_id="blame-env")), patch=diff(BUG, FIX), sandbox=factory)
    assert (result.status, result.score, result.reason_codes) == ("inconclusive", None, ["sandbox-unavailable"])
    assert "the engine went away" in result.messages[0] and "a fresh sandbox fails too" in result.messages[0]
    assert factory.probes == 1  # after the task's own retries, once


def test_a_broken_base_is_never_blamed_on_the_candidate(repo_task: Callable[..., Path]) -> None:
    def no_report(call: FakeCall) -> CommandResult:
        return call.result(2)

    factory = FakeSandboxFactory(no_report, healthy=True)
    result = grade(load_task(repo_task(task_id="blame-base")), patch=diff(BUG, FIX), sandbox=factory)
    assert (result.status, result.reason_codes) == ("inconclusive", ["baseline-broken"])
    assert factory.probes == 0


def test_a_broken_perf_run_zeroes_perf_only(repo_task: Callable[..., Path]) -> None:
    def handler(call: FakeCall) -> CommandResult:
        if call.command == "python bench.py":
            if "ZeroDivisionError" in call.read("src/calc.py"):
                raise SandboxBroken("docker sandbox: the benchmark left processes behind")
            return call.result(0, duration=1.0)
        return fake_pytest(call)

    task = load_task(repo_task(task_id="blame-perf", perf={"command": "python bench.py", "runs": 1}))
    result = grade(task, patch=diff(BUG, FIX), sandbox=FakeSandboxFactory(handler, healthy=True))
    assert result.status == "graded" and result.component("tests").passed
    perf = result.component("perf")
    assert (perf.score, perf.passed, perf.reason_codes) == (0.0, False, ["candidate-broke-sandbox"])


def test_a_failed_gate_found_before_a_step_breaks_decides_the_grade(repo_task: Callable[..., Path]) -> None:
    task = load_task(repo_task(task_id="gate-kept", constraints={"forbidden_patterns": ["ZeroDivisionError"]}))
    factory = FakeSandboxFactory(_breaks_on_the_candidate(SandboxBroken("the container died")))
    result = grade(task, patch=diff(BUG, FIX), sandbox=factory)
    assert (result.status, result.score, result.passed, result.decision) == ("graded", 0.0, False, "rejected")
    assert result.component("constraints").reason_codes == ["forbidden-pattern"]
    assert "tests" not in [c.name for c in result.components]
    assert "forbidden-pattern" in result.reason_codes and result.exit_code == 1
    assert any("a later step did not finish (sandbox-unavailable" in m for m in result.messages)


def test_a_broken_step_without_a_failed_gate_is_still_inconclusive(repo_task: Callable[..., Path]) -> None:
    def handler(call: FakeCall) -> CommandResult:
        if "ZeroDivisionError" in call.read("src/calc.py"):
            raise SandboxBroken("the container died")
        call.write_output("junit.xml", junit({"test_div": "failed", "test_add": "passed"}))
        return call.result(1)

    result = grade(load_task(repo_task(task_id="no-gate")), patch=diff(BUG, FIX), sandbox=FakeSandboxFactory(handler))
    assert (result.status, result.decision) == ("inconclusive", "inconclusive")


def test_what_counts_as_an_environment_looking_failure() -> None:
    assert attributable(SandboxUnavailable("x")) and attributable(SandboxBroken("x")) and attributable(OSError("x"))
    assert not attributable(InfraError("x", reason_code="baseline-broken"))
    assert not attributable(InfraError("x", reason_code="setup-failed"))
    assert not attributable(ValueError("x"))


def test_the_message_names_what_broke_on_one_bounded_line(repo_task: Callable[..., Path]) -> None:
    task = load_task(repo_task(task_id="message", type="refactor"))
    error = OSError(f"cannot copy /tmp/tmpab_12c3d/repo/src/x.py:\n{'y' * 1000}")
    component = broken_component(task, "quality", error)
    (message,) = component.messages
    assert "\n" not in message and "/tmp/tmpab_12c3d" not in message and "src/x.py" in message
    assert len(message) < 450 and component.role == "objective"
