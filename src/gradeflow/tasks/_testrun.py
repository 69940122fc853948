"""One run of the task's test command in a sandbox, read back as :class:`TestRunEvidence`."""

from __future__ import annotations

import time

from gradeflow.errors import InfraError
from gradeflow.evidence import TestRunEvidence
from gradeflow.junit import MAX_JUNIT_BYTES, JUnitError, outcomes_for, parse_junit
from gradeflow.models import TaskSpec
from gradeflow.sandbox.base import CommandResult, Sandbox

__all__ = ["run_setup", "run_test_command", "test_ids"]

JUNIT_NAME = "junit.xml"


def test_ids(task: TaskSpec) -> list[str]:
    """Every test id the task names, in a stable order without repeats."""
    spec = task.tests
    return list(dict.fromkeys([*spec.fail_to_pass, *spec.pass_to_pass, *spec.quarantine]))


def run_setup(task: TaskSpec, sandbox: Sandbox) -> CommandResult | None:
    """Run the task's setup command, if any."""
    if not task.setup:
        return None
    return sandbox.run(task.setup, env=task.candidate_env(), timeout=task.tests.timeout)


def run_test_command(task: TaskSpec, sandbox: Sandbox, command: str | None = None) -> TestRunEvidence:
    """Run the tests and read their JUnit report; a report that contradicts the run is flagged as tampered.

    ``command`` replaces ``tests.command`` (the test-evidence step runs only the patch's own tests).
    """
    command = (command or task.tests.command).replace("{junit}", sandbox.output_path(JUNIT_NAME))
    started = time.time()
    result = sandbox.run(command, env=task.candidate_env(), timeout=task.tests.timeout)
    evidence = TestRunEvidence(
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        oom_killed=result.oom_killed,
        duration=result.duration,
        output_tail=(result.stdout + result.stderr)[-2000:],
    )
    if result.timed_out or result.oom_killed:
        return evidence
    try:
        report = sandbox.read_output(JUNIT_NAME, MAX_JUNIT_BYTES)
    except (ValueError, OSError) as exc:
        return evidence.model_copy(update={"junit_error": str(exc)})
    if report is None:
        return evidence
    data, mtime = report
    try:
        cases = parse_junit(data)
    except JUnitError as exc:
        return evidence.model_copy(update={"junit_found": True, "junit_error": str(exc)})
    evidence = evidence.model_copy(
        update={
            "junit_found": True,
            "cases": cases,
            "outcomes": outcomes_for(test_ids(task), cases),
        }
    )
    return _cross_check(evidence, mtime, started)


def _cross_check(evidence: TestRunEvidence, mtime: float, started: float) -> TestRunEvidence:
    # A report older than the run, or all passes from a failing command, was not written by this run.
    # One second of slack covers file systems with coarse timestamps.
    why = None
    if mtime < started - 1.0:
        why = "the JUnit report was written before the test command started"
    elif (
        evidence.exit_code not in (0, None)
        and evidence.cases
        and all(c.outcome in ("passed", "skipped") for c in evidence.cases)
    ):
        why = f"the report shows no failure but the test command exited {evidence.exit_code}"
    if why is None:
        return evidence
    return evidence.model_copy(update={"junit_tampered": True, "junit_error": why})


def require_report(evidence: TestRunEvidence, where: str) -> TestRunEvidence:
    """The evidence, or ``InfraError`` when the run produced no usable report (used on the pristine base)."""
    if evidence.timed_out or not evidence.junit_found or evidence.junit_error:
        why = "timed out" if evidence.timed_out else evidence.junit_error or "no JUnit report"
        # The command's output stays out of the message: results never carry file contents or secrets.
        raise InfraError(
            f"{where}: the test command gave no usable report ({why}, exit code {evidence.exit_code})",
            reason_code="baseline-broken",
        )
    return evidence
