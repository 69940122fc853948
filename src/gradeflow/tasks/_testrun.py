"""One run of the task's test command in a sandbox, read back as :class:`TestRunEvidence`."""

from __future__ import annotations

import dataclasses
import shlex
import time
from pathlib import Path

from gradeflow.errors import InfraError
from gradeflow.integrity.boot import pytest_ran_without_channel, pytest_ran_without_harness
from gradeflow.integrity.handed import Prior, suite_sources, withdraw
from gradeflow.integrity.harness import (
    MODULE_PREFIX,
    Harness,
    RunFacts,
    Varied,
    check_run,
    read_record,
    record_cases,
    run_places,
    summarize,
)
from gradeflow.integrity.recorder import Recorder, read_recorded
from gradeflow.logs import scrub
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import HarnessSummary, Outcome, TestCaseResult, TestRunEvidence
from gradeflow.sandbox.base import CommandResult, OutputTooLarge, Sandbox
from gradeflow.tasks._junit import MAX_JUNIT_BYTES, JUnitError, JUnitTooLarge, names_in, outcomes_for, parse_junit
from gradeflow.tasks._logformats import MAX_LOG_BYTES, MAX_LOG_CASES, parse_log
from gradeflow.text import for_terminal

__all__ = ["require_report", "run_setup", "run_test_command", "start_harness", "task_outcomes", "test_ids"]

JUNIT_NAME = "junit.xml"
LOG_NAME = "test-output.log"
NOT_PYTEST = frozenset({"django-log", "sympy-log"})
"""Report formats of runners that are not pytest: the pytest harness is not started for them."""
RECORDED = frozenset({"django-log"})
"""Report formats whose runner is unittest's: gradeflow's recorder confirms their outcomes."""


def test_ids(task: TaskSpec) -> list[str]:
    """Every test id the task names, in a stable order without repeats."""
    spec = task.tests
    return list(dict.fromkeys([*spec.fail_to_pass, *spec.pass_to_pass, *spec.quarantine]))


def task_outcomes(task: TaskSpec, cases: list[TestCaseResult]) -> dict[str, Outcome]:
    """The outcome of each of the task's test ids in ``cases``, in the run's order (a name of
    ``tests.last_run_of`` is the outcome of whichever of its ids ran last)."""
    return outcomes_for(test_ids(task), cases, task.tests.last_run_of)


def run_setup(task: TaskSpec, sandbox: Sandbox, command: str | None = None) -> CommandResult | None:
    """Run the task's setup command (or ``command``, a part of the environment's build), if any."""
    command = command or task.setup
    if not command:
        return None
    return sandbox.run(command, env=task.run_env(), timeout=task.tests.timeout)


def start_harness(
    task: TaskSpec,
    tree: Path,
    command: str | None,
    base: TestRunEvidence | None,
    select: list[str] | None = None,
    hidden: Prior | None = None,
    varied: Varied | None = None,
    reach: dict[str, list[int]] | None = None,
) -> Harness | None:
    """A fresh harness with its canaries written into ``tree`` (before the sandbox copies it), or ``None``.

    ``base`` is the base run's evidence for a candidate run, ``None`` for the base run itself. The base
    run always gets it: whatever the command (``pytest``, a shell script, ``make test``, inline
    ``PYTHONPATH=``/``PYTEST_ADDOPTS=``, ``env -u``), the plugin loads wherever pytest runs in the
    sandbox's Python environment (see :mod:`gradeflow.integrity.boot`). A candidate run gets the
    harness only when the base run showed that it works for this task (its record was written).
    ``select`` keeps only those tests (node ids or files) in the run, whatever else the command collects.
    The harness serves the tree's test modules and conftest files from memory, and the hidden tests
    (``hidden``: what :func:`~gradeflow.tasks.baseline.inject_hidden` returned), taken off the disk here
    (see :mod:`gradeflow.integrity.handed`); without a harness they stay on disk. ``varied`` makes it a
    varied run (see :mod:`gradeflow.tasks.varied`). ``reach`` (file → lines) has the plugin record which of those
    lines each test runs (see :mod:`gradeflow.tasks._reach`).
    """
    if (base is not None and base.harness is None) or task.tests.report in NOT_PYTEST:
        return None
    harness = Harness.fresh(task, tree, select)
    harness.write_canaries(tree)
    hidden_texts = withdraw(tree, hidden or {})
    traced = None if reach is None else {path: tuple(lines) for path, lines in reach.items()}
    sources = {**suite_sources(task, tree), **hidden_texts}
    return dataclasses.replace(harness, sources=sources, varied=varied, reach=traced)


def run_test_command(
    task: TaskSpec,
    sandbox: Sandbox,
    command: str | None = None,
    *,
    harness: Harness | None = None,
    base: TestRunEvidence | None = None,
) -> TestRunEvidence:
    """Run the tests and read their JUnit report; a report that contradicts the run is flagged as tampered.

    ``command`` replaces ``tests.command`` (the test-evidence step runs only the patch's own tests).
    With a ``harness`` (see :func:`start_harness`), the canaries are taken out of the evidence and the
    run is checked against the harness record and, for a candidate run, against the ``base`` run.
    """
    command = (command or task.tests.command).replace("{junit}", sandbox.output_path(JUNIT_NAME))
    logged = task.tests.report != "junit"
    if logged:
        # The log is the command's whole output, in a file (captured output keeps only its head and tail).
        command = f"{{ {command}\n}} > {shlex.quote(sandbox.output_path(LOG_NAME))} 2>&1"
    # A varied run pins no seed: Python draws one of its own, as for a developer (who never sets the variable).
    env = task.run_env(pinned_seed=harness is None or harness.varied is None)
    against = base.harness if base is not None else None
    recorder = Recorder.fresh() if task.tests.report in RECORDED else None
    if harness is not None:
        env = _with_harness(env, harness.install(sandbox, against))
    elif recorder is not None:
        folder = sandbox.install_harness(recorder.files(sandbox.output_path(recorder.log_name)))
        env = _with_harness(env, {"PYTHONPATH": folder})
    started = time.time()
    stdin = harness.channel(sandbox.workspace) if harness is not None else None
    if recorder is not None:
        stdin = recorder.channel()
    result = sandbox.run(command, env=env, timeout=task.tests.timeout, stdin=stdin)
    evidence = TestRunEvidence(
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        oom_killed=result.oom_killed,
        disk_full=result.disk_full,
        cpu_throttled=result.cpu_throttled,
        duration=result.duration,
        output_tail=(result.stdout + result.stderr)[-2000:],
        report=task.tests.report,
    )
    if result.timed_out or result.oom_killed or result.disk_full:
        return evidence
    if logged:
        if base is not None and base.confirmed_by != "recorder":
            recorder = None  # the base's outcomes were not confirmed: nothing to hold a candidate's to
        return _from_log(task, sandbox, evidence, started, (harness, against, recorder), candidate=base is not None)
    try:
        report = sandbox.read_output(JUNIT_NAME, MAX_JUNIT_BYTES)
    except (ValueError, OSError) as exc:
        return _unusable(evidence, exc)
    if report is None:
        return evidence
    data, mtime = report
    try:
        cases = parse_junit(data)
    except JUnitError as exc:
        return _unusable(evidence, exc)
    evidence = _cross_check(evidence.model_copy(update={"junit_found": True, "cases": cases}), mtime, started)
    if harness is not None:
        return _harness_check(task, sandbox, harness, evidence, data, against)
    return evidence.model_copy(update={"outcomes": task_outcomes(task, evidence.cases)})


def _from_log(
    task: TaskSpec,
    sandbox: Sandbox,
    evidence: TestRunEvidence,
    started: float,
    recorders: tuple[Harness | None, HarnessSummary | None, Recorder | None],
    *,
    candidate: bool,
) -> TestRunEvidence:
    """The outcomes of a run whose command prints them (``tests.report``), confirmed where gradeflow recorded
    them itself: by the pytest harness (``pytest-log``) or the unittest recorder (``django-log``)."""
    harness, against, recorder = recorders
    try:
        found = sandbox.read_output(LOG_NAME, MAX_LOG_BYTES)
    except (ValueError, OSError) as exc:
        return _unusable(evidence, exc)
    data, mtime = found if found is not None else (b"", started)
    tail = data[-4000:].decode("utf-8", "replace")[-2000:]
    evidence = evidence.model_copy(update={"output_tail": tail})
    try:
        cases = parse_log(task.tests.report, data)
    except JUnitError as exc:
        return _unusable(evidence, exc)
    if not cases:
        why = f"the output holds no test outcome in the {task.tests.report} format"
        return evidence.model_copy(update={"junit_error": why})
    evidence = _cross_check(evidence.model_copy(update={"junit_found": True, "cases": cases}), mtime, started)
    if harness is not None:
        checked = _harness_check(task, sandbox, harness, evidence, None, against)
        confirmed = "harness" if checked.harness is not None else None
        return checked.model_copy(update={"confirmed_by": confirmed})
    evidence = evidence.model_copy(update={"outcomes": task_outcomes(task, cases)})
    if recorder is None:
        return evidence
    return _recorder_check(task, sandbox, recorder, evidence, required=candidate)


def _recorder_check(
    task: TaskSpec, sandbox: Sandbox, recorder: Recorder, evidence: TestRunEvidence, *, required: bool
) -> TestRunEvidence:
    """A log's outcomes against the unittest recorder's: a test the log says passed that the recorder did not
    see pass is a forged report. On the base run, a recorder that saw nothing leaves the task's outcomes
    unconfirmed (the runner is not unittest's, or its interpreter did not start through the sandbox's
    environment), and candidate runs are then not checked; once the base's were confirmed (``required``),
    a candidate run the recorder saw nothing of is checked like any other: its passes are unconfirmed."""
    try:
        found = sandbox.read_output(recorder.log_name, MAX_LOG_BYTES)
    except (OutputTooLarge, ValueError, OSError) as exc:
        return evidence.model_copy(update={"junit_tampered": True, "junit_error": f"gradeflow's recorder file: {exc}"})
    recorded = read_recorded(found[0] if found else b"", recorder.key, MAX_LOG_CASES)
    if recorded.problems:
        return evidence.model_copy(update={"junit_tampered": True, "junit_error": "; ".join(recorded.problems)})
    if not recorded.cases and not required:
        return evidence
    seen = task_outcomes(task, recorded.cases)
    forged = [t for t, o in evidence.outcomes.items() if o == "passed" and seen.get(t) != "passed"]
    update: dict[str, object] = {"confirmed_by": "recorder"}
    if forged and not evidence.junit_tampered:
        shown = ", ".join(forged[:3]) + (" …" if len(forged) > 3 else "")
        update |= {"junit_tampered": True, "junit_error": f"the log says passed but the test did not pass: {shown}"}
    return evidence.model_copy(update=update)


def _unusable(evidence: TestRunEvidence, exc: ValueError | OSError) -> TestRunEvidence:
    """The evidence of a report (JUnit or log) that could not be read or parsed: over its cap (found, too
    large), malformed (found), or not readable at all."""
    if isinstance(exc, (OutputTooLarge, JUnitTooLarge)):
        return evidence.model_copy(update={"junit_found": True, "junit_too_large": True, "junit_error": str(exc)})
    if isinstance(exc, JUnitError):
        return evidence.model_copy(update={"junit_found": True, "junit_error": str(exc)})
    return evidence.model_copy(update={"junit_error": str(exc)})


def _with_harness(env: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """The task's variables plus the harness's; the task's own ``PYTHONPATH``/``PYTEST_ADDOPTS`` are kept.

    Where the command replaces them again, the harness's boot puts its options back inside the process."""
    merged = dict(env)
    for key, value in extra.items():
        if key == "PYTHONPATH" and env.get(key):
            value = f"{value}:{env[key]}"
        elif key == "PYTEST_ADDOPTS" and env.get(key):
            value = f"{env[key]} {value}"
        merged[key] = value
    return merged


def _harness_check(
    task: TaskSpec,
    sandbox: Sandbox,
    harness: Harness,
    evidence: TestRunEvidence,
    junit: bytes | None,
    against: HarnessSummary | None,
) -> TestRunEvidence:
    """Canaries out of the cases, the outcomes read once from what is left; the base's summary recorded,
    or a candidate's run checked against it (a canary never stands for a task's test: its name is the nonce's)."""
    record = read_record(sandbox, harness)
    cases = [c for c in evidence.cases if not harness.is_canary(c)]
    ids = test_ids(task)
    outcomes = task_outcomes(task, cases)
    update: dict[str, object] = {"cases": cases, "outcomes": outcomes}
    if against is None:
        if record is None:
            update["harness_not_joined"] = pytest_ran_without_harness(junit or b"")
            return evidence.model_copy(update=update)
        summary = summarize(record, harness, evidence.cases, run_places(sandbox), evidence.exit_code)
        update["harness"] = summary
        if not summary.signed and not summary.canaries:
            update["harness_not_joined"] = pytest_ran_without_channel()
        return evidence.model_copy(update=update)
    unfinished = record is None or not record.finished
    if unfinished and _killed_by_signal(evidence.exit_code) and not evidence.junit_tampered:
        # The candidate's code killed the test process (or the shell above it, and the sandbox then reaped
        # the rest): where the run stopped is a matter of timing, so the report is cut short, not forged.
        why = f"the test process was killed (exit code {evidence.exit_code}) before pytest finished: the report is cut"
        return evidence.model_copy(update={**update, "junit_error": why})
    facts = RunFacts(
        exit_code=evidence.exit_code,
        junit=junit,
        cases=evidence.cases,
        junit_outcomes=dict(outcomes),
        record_outcomes=dict(task_outcomes(task, record_cases(record, names_in(task.tests.expanded(ids)))))
        if record
        else {},
        places=run_places(sandbox),
    )
    problems = check_run(harness, record, facts, against)
    if record is not None:
        update["harness"] = summarize(record, harness, evidence.cases, run_places(sandbox), evidence.exit_code)
    if problems and not evidence.junit_tampered:
        update.update(junit_tampered=True, junit_error="; ".join(problems))
    return evidence.model_copy(update=update)


def _killed_by_signal(exit_code: int | None) -> bool:
    """Whether a command's exit code says a signal ended it: negative (the sandbox's own child) or 129-192
    (a shell's report of its child: 128 plus the signal's number)."""
    return exit_code is not None and (exit_code < 0 or 128 < exit_code <= 128 + 64)


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


def require_report(evidence: TestRunEvidence, where: str, task: TaskSpec | None = None) -> TestRunEvidence:
    """The evidence, or ``InfraError`` when the run produced no usable report (used on the pristine base).

    The message says what to fix: the reason, the exit code (with pytest's meaning of it), and, given the
    ``task``, its test command and the last lines of the run's output, redacted (token-like strings, the
    grader's environment values and the task's ``env`` values become ``[redacted]``) and on one line.
    """
    if evidence.timed_out or evidence.disk_full or not evidence.junit_found or evidence.junit_error:
        why = "timed out" if evidence.timed_out else evidence.junit_error or "no JUnit report"
        if evidence.disk_full:
            why = "disk-limit-exceeded: the run filled environment.disk"
        elif evidence.junit_too_large:
            why = f"junit-too-large: {why}"
        message = f"{where}: the test command gave no usable report ({why}, exit code {_exit_meaning(evidence)})"
        if task is not None:
            message += f"; command: {for_terminal(task.tests.command)}{_last_lines(evidence, task)}"
        if _HARNESS_UNIMPORTABLE in evidence.output_tail:
            message += f"; {_HARNESS_REMEDY}"
        raise InfraError(message, reason_code="baseline-broken")
    return evidence


_HARNESS_UNIMPORTABLE = f'Error importing plugin "{MODULE_PREFIX}'
_HARNESS_REMEDY = (
    "the interpreter running pytest could not import gradeflow's harness: it is not the sandbox's Python and the "
    "command replaces PYTHONPATH. The isolated sandbox (the default) joins an interpreter the command names by its "
    "path, the local sandbox only as root; else set PYTHONPATH in the task's env, not in the command"
)


_PYTEST_EXITS = {
    2: "pytest was interrupted or a test file could not be collected",
    3: "pytest's internal error",
    4: "pytest's usage error: an unknown option, or a plugin (-p) or conftest it could not load",
    5: "pytest collected no tests",
}


def _exit_meaning(evidence: TestRunEvidence) -> str:
    meaning = _PYTEST_EXITS.get(evidence.exit_code or 0) if "pytest" in evidence.output_tail.lower() else None
    return f"{evidence.exit_code}: {meaning}" if meaning else str(evidence.exit_code)


_SHOWN_LINES = 5


def _last_lines(evidence: TestRunEvidence, task: TaskSpec) -> str:
    """``; last output: a | b | c``: the run's last non-blank lines, cut, redacted and escaped, or nothing."""
    lines = [line.strip()[:200] for line in evidence.output_tail.splitlines() if line.strip()][-_SHOWN_LINES:]
    if not lines:
        return "; no output"
    values = [v for v in task.candidate_env().values() if len(v) >= 8]
    shown = " | ".join(for_terminal(scrub(scrub(line), values)) for line in lines)
    return f"; last output: {shown}"
