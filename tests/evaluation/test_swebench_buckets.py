"""Imported SWE-bench tasks land in the buckets SWE-bench's own grading gives, on the same per-test outcomes.

The expected column was computed once with ``swebench.harness.grading`` (swebench 5.0.2:
``get_resolution_status(get_eval_tests_report(status_map, gold))``) on these status maps and is kept
here as data, so the heavy ``swebench`` package (datasets, docker) is no test dependency. An instance
counts as resolved only at ``RESOLVED_FULL``; gradeflow's ``resolved_ids`` are the grades that passed.

Each status is what gradeflow reads from pytest's JUnit report: ``XFAIL`` arrives as a skipped testcase.
"""

from __future__ import annotations

import pytest

from builders import make_task
from evaluate_helpers import record
from gradeflow.evaluation.suite import Suite, SuiteItem
from gradeflow.evaluation.swebench import swebench_summary
from gradeflow.graders import GradingContext, InMemoryWorkspace, TestGrader
from gradeflow.models import Submission, TaskSpec
from gradeflow.models.evidence import Outcome, TestCaseResult, TestRunEvidence

F1, F2 = "tests/test_x.py::test_f1", "tests/test_x.py::test_f2"
P1, P2 = "tests/test_x.py::test_p1", "tests/test_x.py::TestP::test_p2[a-1]"
ALL_PASS = {F1: "PASSED", F2: "PASSED", P1: "PASSED", P2: "PASSED"}

# name: (what differs from every test passing, None = absent from the report; swebench's resolution)
SWEBENCH: dict[str, tuple[dict[str, str | None], str]] = {
    "all-pass": ({}, "RESOLVED_FULL"),
    "p2p-skipped": ({P1: "SKIPPED"}, "RESOLVED_FULL"),
    "p2p-xfail": ({P2: "XFAIL"}, "RESOLVED_FULL"),
    "p2p-failed": ({P1: "FAILED"}, "RESOLVED_NO"),
    "p2p-error": ({P2: "ERROR"}, "RESOLVED_NO"),
    "p2p-missing": ({P1: None}, "RESOLVED_NO"),
    "f2p-one-failed": ({F2: "FAILED"}, "RESOLVED_PARTIAL"),
    "f2p-skipped": ({F1: "SKIPPED"}, "RESOLVED_PARTIAL"),
    "f2p-error": ({F1: "ERROR"}, "RESOLVED_PARTIAL"),
    "f2p-missing": ({F2: None}, "RESOLVED_PARTIAL"),
    "f2p-all-failed": ({F1: "FAILED", F2: "FAILED"}, "RESOLVED_NO"),
    "f2p-xfail": ({F1: "XFAIL"}, "RESOLVED_FULL"),
}
DIFFERENT = {"f2p-xfail"}
"""Where gradeflow's rule differs, on purpose: a fail_to_pass test that still fails, expectedly (xfail),
has not been fixed. gradeflow counts it failing; SWE-bench counts XFAIL as a pass."""

OUTCOME: dict[str, Outcome] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "skipped",
}


def _imported_grade(statuses: dict[str, str]) -> bool:
    # The tests keys `task import-swebench` writes (src/gradeflow/authoring/swebench.py).
    spec = {"command": "pytest --junitxml={junit}", "fail_to_pass": [F1, F2], "pass_to_pass": [P1, P2]}
    task = TaskSpec.model_validate(make_task(tests={**spec, "skipped_pass_to_pass": "kept"}))
    outcomes = {t: OUTCOME[statuses[t]] if t in statuses else "missing" for t in [F1, F2, P1, P2]}
    cases = [TestCaseResult(name=t, outcome=o) for t, o in outcomes.items() if o != "missing"]
    run = TestRunEvidence(exit_code=1, junit_found=True, cases=cases, outcomes=outcomes)  # type: ignore[arg-type]
    context = GradingContext(task=task, workspace=InMemoryWorkspace(), tests=run)
    return TestGrader().grade(context).passed


def _statuses(change: dict[str, str | None]) -> dict[str, str]:
    merged = {**ALL_PASS, **change}
    return {t: s for t, s in merged.items() if s is not None}


@pytest.mark.parametrize("name", sorted(SWEBENCH))
def test_an_imported_task_passes_exactly_when_swebench_resolves_it(name: str) -> None:
    change, resolution = SWEBENCH[name]
    resolved = resolution == "RESOLVED_FULL"
    passed = _imported_grade(_statuses(change))
    assert passed is (resolved if name not in DIFFERENT else not resolved)


def test_the_run_summary_buckets_match_swebenchs() -> None:
    names = sorted(SWEBENCH)
    items = [SuiteItem(task_id=n, submission=Submission(submission_id=n, patch="x"), run_id=n) for n in names]
    tasks = {n: TaskSpec.model_validate(make_task(task_id=n)) for n in names}
    records = [
        record(task_id=n, run_id=n, content_key=n, passed=_imported_grade(_statuses(SWEBENCH[n][0]))) for n in names
    ]
    summary = swebench_summary(Suite(source="predictions.jsonl", tasks=tasks, items=items), records)
    expected = {n for n in names if SWEBENCH[n][1] == "RESOLVED_FULL"} - DIFFERENT
    assert set(summary["resolved_ids"]) == expected
    assert set(summary["unresolved_ids"]) == set(names) - expected
