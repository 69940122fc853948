"""A suite records every submission it was given: one whose grade crashed keeps its place in the pass rate.

A real suite run (the calc example in the isolated sandbox, a SQLite ledger, ``gradeflow report``) where
the grade-submission subflow of three submissions raises instead of returning: the sandbox's failure
(inconclusive ``sandbox-unavailable``), the submission's own fault (graded, failed, with its code) and a bug
(inconclusive ``internal-error``). Each is reported as failed and recorded; the report counts all five.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import gradeflow.flows.evaluate as evaluate_module
from gradeflow.cli import main
from gradeflow.errors import PatchDoesNotApply, SandboxUnavailable
from gradeflow.evaluation.ledger import Ledger
from gradeflow.evaluation.suite import load_suite
from gradeflow.flows.evaluate import evaluate
from gradeflow.flows.grade import grade_submission
from gradeflow.models import Submission, TaskSpec

pytestmark = [pytest.mark.usefixtures("prefect"), pytest.mark.slow]

CALC = Path(__file__).resolve().parents[2] / "examples" / "calc"
CRASHES = {
    "m-a-r3": SandboxUnavailable("docker engine at unix:///var/run/docker.sock did not answer"),
    "m-a-r4": PatchDoesNotApply("the patch does not apply to src/calc.py"),
    "m-a-r5": RuntimeError("the subflow could not start"),
}


def _suite(tmp_path: Path) -> Path:
    patches = ["reference.diff", "bad.diff", "reference.diff", "reference.diff", "bad.diff"]
    lines = [f"tasks: [{CALC / 'task.yaml'}]", "submissions:"]
    lines += [
        f"  - {{task_id: calc-divzero, patch: {CALC / name}, run_id: m-a-r{n}, model_id: m-a}}"
        for n, name in enumerate(patches, 1)
    ]
    path = tmp_path / "suite.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_grade_that_crashes_is_recorded_with_its_status_and_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def crashing(task_spec: TaskSpec, submission: Submission, **options: Any) -> Any:
        crash = CRASHES.get(submission.submission_id)
        if crash is not None:
            raise crash
        return grade_submission(task_spec, submission, **options)

    monkeypatch.setattr(evaluate_module, "grade_submission", crashing)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(url)
    try:
        outcome = evaluate(load_suite(_suite(tmp_path)), ledger, sandbox="isolated", show_progress=False)
    finally:
        ledger.close()
    assert (outcome.graded, outcome.skipped, len(outcome.failed)) == (2, 0, 3)
    assert any(
        "m-a-r3: SandboxUnavailable" in f and "recorded inconclusive sandbox-unavailable" in f for f in outcome.failed
    )
    by_run = {r.run_id: r for r in outcome.records}
    assert sorted(by_run) == [f"m-a-r{n}" for n in range(1, 6)]
    seen = {run: (r.status, r.passed, r.score, r.decision, r.reason_codes) for run, r in by_run.items()}
    assert seen["m-a-r1"] == ("graded", True, 1.0, "merge-candidate", [])
    assert seen["m-a-r2"][:2] == ("graded", False)
    assert seen["m-a-r3"] == ("inconclusive", False, None, "inconclusive", ["sandbox-unavailable"])
    assert seen["m-a-r4"] == ("graded", False, 0.0, "rejected", ["patch-does-not-apply"])
    assert seen["m-a-r5"] == ("inconclusive", False, None, "inconclusive", ["internal-error"])
    capsys.readouterr()
    assert main(["report", "--ledger", url, "--json"]) == 0
    group = json.loads(capsys.readouterr().out)["groups"][0]
    assert (group["n"], group["graded"], group["inconclusive"]) == (5, 3, 2)
