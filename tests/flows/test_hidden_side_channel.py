"""A candidate that tries to read hidden tests out through the published result, end to end.

The fake test process below stands for candidate code that found a hidden test and encodes what it
read in everything it controls: extra test cases (counts), its output, its duration. Nothing of it
may reach the result, the Prefect artifacts or the ledger record, unless the task opts in.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fakes import BUG, FIX, diff, junit
from gradeflow import grade, load_task
from gradeflow.evaluation.records import PlannedGrade, record_for
from gradeflow.evaluation.suite import SuiteItem
from gradeflow.models import GradeResult, Submission
from gradeflow.sandbox import CommandResult, FakeCall, FakeSandboxFactory

pytestmark = pytest.mark.usefixtures("prefect")

LEAKED = 37
MARKER = "HIDDEN-ASSERT-divide-by-zero-message"


def leaky_pytest(call: FakeCall) -> CommandResult:
    fixed = "ZeroDivisionError" in call.read("src/calc.py")
    cases = {"test_div": "passed" if fixed else "failed", "test_add": "passed"}
    if call.read("tests/test_hidden.py"):
        cases["tests.test_hidden::test_hidden"] = "passed" if fixed else "failed"
        cases.update({f"tests.test_leak::leak_{i}": "skipped" for i in range(LEAKED)})
    call.write_output("junit.xml", junit(cases))
    exit_code = 0 if all(v in ("passed", "skipped") for v in cases.values()) else 1
    return call.result(exit_code, stdout=MARKER, duration=float(LEAKED))


def _grade(repo_task: Callable[..., Path], tmp_path: Path, **tests: object) -> GradeResult:
    hidden = tmp_path / "hidden" / "tests"
    hidden.mkdir(parents=True, exist_ok=True)
    (hidden / "test_hidden.py").write_text("def test_hidden(): ...\n")
    task = repo_task(
        task_id=f"hidden-{len(tests)}",
        tests={
            "command": "pytest --junitxml={junit}",
            "hidden": "./hidden",
            "fail_to_pass": ["tests/test_calc.py::test_div", "tests/test_hidden.py::test_hidden"],
            "pass_to_pass": ["tests/test_calc.py::test_add"],
            **tests,
        },
    )
    return grade(load_task(task), patch=diff(BUG, FIX), sandbox=FakeSandboxFactory(leaky_pytest), submission_id="s")


def _summary_artifact(result: GradeResult) -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    key = f"grade-{result.task_id}-{result.submission_id}-summary"
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
    return "\n".join(str(a.data) for a in artifacts)


def test_nothing_the_candidate_encodes_reaches_the_result_the_artifacts_or_the_ledger(
    repo_task: Callable[..., Path], tmp_path: Path
) -> None:
    result = _grade(repo_task, tmp_path)
    assert (result.status, result.passed) == ("graded", True)
    tests = result.component("tests")
    assert tests.details["fail_to_pass"] == {
        "tests/test_calc.py::test_div": "passed",
        "tests/test_hidden.py::test_hidden": "passed",
    }
    assert tests.details["counts"] == {"passed": 3, "failed": 0}
    assert not {"exit_code", "duration"} & set(tests.details)
    published = result.model_dump_json()
    assert MARKER not in published and "leak_" not in published and str(float(LEAKED)) not in published
    assert "tests" not in result.timings
    assert MARKER not in _summary_artifact(result) and "leak_" not in _summary_artifact(result)
    planned = PlannedGrade(
        item=SuiteItem(
            task_id=result.task_id, submission=Submission(submission_id="s", patch=diff(BUG, FIX)), run_id="r"
        ),
        task=load_task(tmp_path / "task.yaml"),
        content_key="k",
        patch_hash="h",
        repository_revision="rev",
    )
    # The evaluate flow records the flow's own result, which still has the tests step's time.
    unwithheld = result.model_copy(update={"timings": {**result.timings, "tests": 9.0}})
    record = record_for(planned, unwithheld, 1.0)
    assert (record.tests_passed, record.tests_failed) == (3, 0)
    assert "tests" not in record.timings and "total" not in record.timings
    assert set(record.timings) == set(result.timings)


def test_a_task_that_opts_in_publishes_the_details(repo_task: Callable[..., Path], tmp_path: Path) -> None:
    tests = _grade(repo_task, tmp_path, publish_hidden_details=True).component("tests")
    assert tests.details["counts"]["skipped"] == LEAKED
    assert tests.details["duration"] == float(LEAKED)
