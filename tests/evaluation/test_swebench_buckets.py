"""Imported SWE-bench tasks land in the buckets SWE-bench's own grading gives, on the same per-test outcomes.

The expected column was computed with ``swebench.harness.grading`` of swebench 5.0.2, installed in a
throwaway venv outside the project (``python3 -m venv /tmp/swe && /tmp/swe/bin/pip install
swebench==5.0.2``): for each pattern, ``get_resolution_status(get_eval_tests_report(status_map, gold))``
with ``gold = {FAIL_TO_PASS: [F1, F2], PASS_TO_PASS: [P1, P2]}`` and ``status_map`` every test
``PASSED`` overridden by the pattern (``None`` dropping the test). The answers are kept here as data, so
the heavy ``swebench`` package (datasets, docker) is no test dependency. An instance counts as resolved
only at ``RESOLVED_FULL``; gradeflow's ``resolved_ids`` are the grades that passed.

Each status is what gradeflow reads from pytest's JUnit report: ``XFAIL`` arrives as
``<skipped type="pytest.xfail">``, the outcome ``xfailed``; ``SKIPPED`` as any other ``<skipped>``.
"""

from __future__ import annotations

import pytest

from builders import make_task
from evaluate_helpers import record
from gradeflow.authoring.swebench import SWEBENCH_PASS_RULE
from gradeflow.evaluation.suite import Suite, SuiteItem
from gradeflow.evaluation.swebench import swebench_summary
from gradeflow.graders import GradingContext, InMemoryWorkspace, TestGrader
from gradeflow.models import Submission, TaskSpec
from gradeflow.models.evidence import Outcome, TestCaseResult, TestRunEvidence

F1, F2 = "tests/test_x.py::test_f1", "tests/test_x.py::test_f2"
P1, P2 = "tests/test_x.py::test_p1", "tests/test_x.py::TestP::test_p2[a-1]"
ALL_PASS = {F1: "PASSED", F2: "PASSED", P1: "PASSED", P2: "PASSED"}
ON_BASE: dict[str, Outcome] = {F1: "failed", F2: "failed", P1: "passed", P2: "passed"}
"""The pristine base, as SWE-bench's lists say: fail-to-pass tests fail there, pass-to-pass tests pass."""

# name: (what differs from every test passing, None = absent from the report; swebench's resolution)
SWEBENCH: dict[str, tuple[dict[str, str | None], str]] = {
    "all-pass": ({}, "RESOLVED_FULL"),
    "p2p-skipped": ({P1: "SKIPPED"}, "RESOLVED_FULL"),
    "p2p-xfail": ({P2: "XFAIL"}, "RESOLVED_FULL"),
    "p2p-all-xfail": ({P1: "XFAIL", P2: "XFAIL"}, "RESOLVED_FULL"),
    "p2p-skipped-and-xfail": ({P1: "SKIPPED", P2: "XFAIL"}, "RESOLVED_FULL"),
    "p2p-failed": ({P1: "FAILED"}, "RESOLVED_NO"),
    "p2p-error": ({P2: "ERROR"}, "RESOLVED_NO"),
    "p2p-missing": ({P1: None}, "RESOLVED_NO"),
    "f2p-one-failed": ({F2: "FAILED"}, "RESOLVED_PARTIAL"),
    "f2p-skipped": ({F1: "SKIPPED"}, "RESOLVED_PARTIAL"),
    "f2p-all-skipped": ({F1: "SKIPPED", F2: "SKIPPED"}, "RESOLVED_NO"),
    "f2p-error": ({F1: "ERROR"}, "RESOLVED_PARTIAL"),
    "f2p-missing": ({F2: None}, "RESOLVED_PARTIAL"),
    "f2p-all-failed": ({F1: "FAILED", F2: "FAILED"}, "RESOLVED_NO"),
    "f2p-xfail": ({F1: "XFAIL"}, "RESOLVED_FULL"),
    "f2p-all-xfail": ({F1: "XFAIL", F2: "XFAIL"}, "RESOLVED_FULL"),
    "f2p-xfail-and-failed": ({F1: "XFAIL", F2: "FAILED"}, "RESOLVED_PARTIAL"),
    "f2p-xfail-and-skipped": ({F1: "XFAIL", F2: "SKIPPED"}, "RESOLVED_PARTIAL"),
    "f2p-xfail-p2p-xfail": ({F1: "XFAIL", P1: "XFAIL"}, "RESOLVED_FULL"),
    "f2p-xfail-p2p-failed": ({F1: "XFAIL", P2: "FAILED"}, "RESOLVED_NO"),
    "f2p-skipped-p2p-xfail": ({F2: "SKIPPED", P2: "XFAIL"}, "RESOLVED_PARTIAL"),
}

OUTCOME: dict[str, Outcome] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "xfailed",
}


def _grade(statuses: dict[str, str], rule: dict[str, str]) -> bool:
    spec = {"command": "pytest --junitxml={junit}", "fail_to_pass": [F1, F2], "pass_to_pass": [P1, P2]}
    task = TaskSpec.model_validate(make_task(tests={**spec, **rule}))
    outcomes = {t: OUTCOME[statuses[t]] if t in statuses else "missing" for t in [F1, F2, P1, P2]}
    cases = [TestCaseResult(name=t, outcome=o) for t, o in outcomes.items() if o != "missing"]
    run = TestRunEvidence(exit_code=1, junit_found=True, cases=cases, outcomes=outcomes)
    base_cases = [TestCaseResult(name=t, outcome=o) for t, o in ON_BASE.items()]  # type: ignore[arg-type]
    base = TestRunEvidence(exit_code=1, junit_found=True, cases=base_cases, outcomes=ON_BASE)
    context = GradingContext(task=task, workspace=InMemoryWorkspace(), tests=run, baseline_tests=base)
    return TestGrader().grade(context).passed


def _imported_grade(statuses: dict[str, str]) -> bool:
    """The grade of a task as `task import-swebench` writes it (its tests keys, SWE-bench's pass rule)."""
    return _grade(statuses, SWEBENCH_PASS_RULE)


def _statuses(change: dict[str, str | None]) -> dict[str, str]:
    merged = {**ALL_PASS, **change}
    return {t: s for t, s in merged.items() if s is not None}


@pytest.mark.parametrize("name", sorted(SWEBENCH))
def test_an_imported_task_passes_exactly_when_swebench_resolves_it(name: str) -> None:
    change, resolution = SWEBENCH[name]
    assert _imported_grade(_statuses(change)) is (resolution == "RESOLVED_FULL")


@pytest.mark.parametrize("name", sorted(SWEBENCH))
def test_gradeflows_own_rule_differs_only_where_a_test_is_xfailed_or_a_pass_to_pass_skipped(name: str) -> None:
    # The defaults: an xfailed test is no pass (a fail-to-pass one not fixed, a pass-to-pass one that
    # passed on the base broken), and a pass-to-pass test skipped where the base ran it is broken.
    change, resolution = SWEBENCH[name]
    ours = {t for t, s in change.items() if s == "XFAIL" or (s == "SKIPPED" and t in (P1, P2))}
    assert _grade(_statuses(change), {}) is (resolution == "RESOLVED_FULL" and not ours)


def test_the_run_summary_buckets_match_swebenchs() -> None:
    names = sorted(SWEBENCH)
    items = [SuiteItem(task_id=n, submission=Submission(submission_id=n, patch="x"), run_id=n) for n in names]
    tasks = {n: TaskSpec.model_validate(make_task(task_id=n)) for n in names}
    records = [
        record(task_id=n, run_id=n, content_key=n, passed=_imported_grade(_statuses(SWEBENCH[n][0]))) for n in names
    ]
    summary = swebench_summary(Suite(source="predictions.jsonl", tasks=tasks, items=items), records)
    expected = {n for n in names if SWEBENCH[n][1] == "RESOLVED_FULL"}
    assert set(summary["resolved_ids"]) == expected
    assert set(summary["unresolved_ids"]) == set(names) - expected
