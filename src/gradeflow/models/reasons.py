"""Every reason code a grade can carry, with what it means: the registry profiles are checked against.

A reason code is the machine-readable "why" of a component or a result (``fail-to-pass-failing``,
``junit-tampered``, ``sandbox-unavailable``…). Built-in codes are listed here, grouped by who emits
them. The registry is extensible: a custom grader declares the codes it emits
(:attr:`gradeflow.graders.Grader.reason_codes`, registered when the grader is loaded), and a profile
may declare codes of its own (``reason_codes:``), so that a profile naming an unknown code in
``hard_gates`` (a typo) is a one-line spec error at load instead of a gate that never fires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["BUILTIN_REASON_CODES", "known_reason_codes", "register_reason_codes", "unknown_reason_codes"]

_SUBMISSION = {
    "empty-patch": "the submission changes nothing",
    "submission-error": "the submission is at fault in a way no other code names",
    "patch-does-not-apply": "the diff does not apply to the base revision",
    "path-escape": "the diff or checkout reaches outside the repository",
    "unsupported-file-type": "the checkout holds a file the grader cannot copy (a FIFO, a socket, a link loop)",
    "submission-too-large": "a candidate file or the checkout is over its size or count limit (refused before "
    "any copy)",
    "candidate-broke-sandbox": "the candidate's run broke its sandbox while a fresh sandbox works",
}
_CONSTRAINTS = {
    "protected-file-modified": "the patch changes a file the task protects",
    "scope-expansion": "the patch changes a file outside allowed_files",
    "too-many-files": "more files changed than max_files_changed",
    "too-many-lines": "more lines changed than max_lines_changed",
    "forbidden-pattern": "an added line matches a forbidden pattern",
    "required-pattern-missing": "no added line matches a required pattern",
    "pattern-timeout": "a pattern took longer than its time bound on the added lines",
    "pattern-evidence-missing": "the constraints step gathered no match evidence for a pattern",
}
_TESTS = {
    "fail-to-pass-failing": "a fail_to_pass test does not pass on the candidate",
    "pass-to-pass-broken": "a pass_to_pass test that passes on the base does not pass on the candidate",
    "no-tests-ran": "the test command ran no test",
    "no-junit-output": "the test command wrote no usable JUnit report",
    "junit-too-large": "the candidate's JUnit report exceeds the size or testcase cap",
    "test-timeout": "the test command ran past its timeout",
    "oom-killed": "the candidate's run was killed for using too much memory",
    "disk-limit-exceeded": "the candidate's run filled the sandbox's writable space",
    "equality-from-repository": "a test passed on a value equal by a rule the repository defines (its __eq__), or "
    "equal to anything, where the trusted run compared values equal by rules from elsewhere: a person decides",
    "outcome-varies-with-environment": "a test the candidate passed did not pass when run again with pytest's marks "
    "taken off the process (the varied run): code that behaves only under test, or a test that depends on "
    "its process; a person decides",
}
_INTEGRITY = {
    "junit-tampered": "the report disagrees with the grader's own record of the run (a forged outcome)",
    "equal-to-anything": "a test compared a value equal to anything (unittest.mock.ANY and its kind) where the "
    "trusted run's same comparison did not: no honest value equals an object it has never seen",
    "tamper-suspected": "the patch adds code that reaches into the test machinery",
    "test-infrastructure-modified": "the patch edits test configuration or a code loader that is sealed to the base",
    "test-edit-kept": "under tests.hidden_edits: reset, the patch edits a file of a test folder the hidden tests do "
    "not replace: kept in the run as SWE-bench keeps it, reset under gradeflow's reading (strict_reading only)",
}
_EVIDENCE = {
    "missing-regression-test": "the patch adds or changes no test",
    "test-does-not-fail-on-base": "the patch's tests pass on the base too, so they prove nothing",
    "test-does-not-reach-change": "the patch's tests that fail on the base run none of the lines it changed",
    "regression-test-fails": "the patch's own tests fail on the candidate",
    "test-evidence-unavailable": "the patch's tests gave no usable run",
    "large-diff": "the diff is larger than the profile's review size",
    "complexity-increased": "a changed function grew past the complexity limit",
    "function-length-increased": "a changed function grew past the length limit",
    "quality-limit-exceeded": "a function exceeds the task's quality limits",
    "quality-unparseable": "a source file in quality.paths cannot be parsed",
}
_PERF = {
    "perf-benchmark-failed": "the benchmark did not run to completion",
    "perf-benchmark-modified": "the patch edits a sealed benchmark file",
    "perf-output-mismatch": "the benchmark's output or check differs from the baseline's",
    "perf-timing-implausible": "a reported time disagrees with the measured wall time",
    "perf-below-noise-floor": "the speed-up is within the measurement noise",
    "perf-below-min-speedup": "the speed-up is below the task's min_speedup",
}
_HARD_STOPS = {
    "security-violation": "the patch introduces a security finding",
    "data-loss": "the patch deletes tests, data or files outside its scope",
    "compatibility-break": "the patch breaks the public API",
}
_GRADER = {
    "grader-error": "a custom grader raised: its component is unscored",
    "dimension-missing": "a dimension the profile requires has no evidence",
    "detector-unavailable": "a hard-stop detector could not run (tool missing, source unparseable): unscored",
    "review-timed-out": "a grade's review request got no answer within review.timeout_hours",
}
_ENVIRONMENT = {
    "sandbox-unavailable": "the sandbox could not start or run a command (inconclusive)",
    "baseline-broken": "the pristine base cannot be materialized or tested (inconclusive)",
    "setup-failed": "the task's setup failed on the pristine base (inconclusive)",
    "git-failed": "git failed on the grader's side (inconclusive)",
    "ledger-unavailable": "the ledger's database cannot be reached",
    "prefect-unavailable": "the Prefect server did not come up or answer (inconclusive)",
    "internal-error": "gradeflow failed internally (inconclusive)",
}

_AGENT = {
    "agent-timeout": "the agent ran past its wall-time budget (its workspace is graded as it left it)",
    "agent-failed": "the agent exited with an error (its workspace is graded as it left it)",
}

BUILTIN_REASON_CODES: Mapping[str, str] = {
    **_SUBMISSION,
    **_CONSTRAINTS,
    **_TESTS,
    **_INTEGRITY,
    **_EVIDENCE,
    **_PERF,
    **_HARD_STOPS,
    **_GRADER,
    **_ENVIRONMENT,
    **_AGENT,
}
"""Every code gradeflow itself emits, with its meaning."""

_REGISTERED: dict[str, str] = {}


def register_reason_codes(codes: Mapping[str, str] | Iterable[str]) -> None:
    """Add codes a custom grader emits (with their meanings when given) to the registry."""
    meanings = codes if isinstance(codes, Mapping) else dict.fromkeys(codes, "")
    for code, meaning in meanings.items():
        _REGISTERED.setdefault(code, meaning)


def known_reason_codes() -> frozenset[str]:
    """The built-in codes and every code registered so far."""
    return frozenset(BUILTIN_REASON_CODES) | frozenset(_REGISTERED)


def unknown_reason_codes(codes: Iterable[str], declared: Iterable[str] = ()) -> list[str]:
    """The codes of ``codes`` that are neither known nor in ``declared``, in order."""
    known = known_reason_codes() | frozenset(declared)
    return [code for code in codes if code not in known]
