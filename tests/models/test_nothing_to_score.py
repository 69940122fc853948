"""A task spec that leaves nothing to score is a spec error at load naming the key, never a silent 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import make_task
from gradeflow.cli.main import main
from gradeflow.errors import SpecError
from gradeflow.spec import load_task

TESTS = {"command": "pytest --junitxml={junit}", "fail_to_pass": [], "pass_to_pass": ["t.py::g"]}
CASES: dict[str, tuple[dict[str, Any], str | None]] = {
    "no-objective": ({"tests": TESTS}, "tests.fail_to_pass: no test to fix"),
    "all-quarantined": (
        {"tests": {**TESTS, "fail_to_pass": ["t.py::f"], "quarantine": ["t.py::f"]}},
        "tests.fail_to_pass: no test to fix",
    ),
    "objective-weighs-zero": (
        {"tests": {**TESTS, "fail_to_pass": ["t.py::f"]}, "grading": {"weights": {"tests": 0.0, "quality": 1.0}}},
        "grading.weights: every objective of the task (tests) weighs 0",
    ),
    "a-test-to-fix": ({"tests": {**TESTS, "fail_to_pass": ["t.py::f"]}}, None),
    "a-refactor-with-limits": ({"type": "refactor", "tests": TESTS, "quality": {"max_function_length": 9}}, None),
    "an-objective-grader": ({"tests": TESTS, "graders": [{"use": "mypkg.checks:Check"}]}, None),
}


def _task_file(folder: Path, overrides: dict[str, Any]) -> Path:
    (folder / "repo").mkdir(exist_ok=True)
    task = folder / "task.yaml"
    task.write_text(yaml.safe_dump(make_task(repo="./repo", **overrides)))
    return task


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_spec_with_nothing_to_score_is_refused_at_load(tmp_path: Path, case: str) -> None:
    overrides, problem = CASES[case]
    task = _task_file(tmp_path, overrides)
    if problem is None:
        load_task(task)
        return
    with pytest.raises(SpecError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        load_task(task)


@pytest.mark.parametrize("command", ["grade", "validate"])
def test_the_cli_says_it_in_one_line_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    task = _task_file(tmp_path, {"tests": TESTS})
    args = ["grade", str(task), "--patch", str(task)] if command == "grade" else ["validate", str(task)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"{task}: tests.fail_to_pass: no test to fix" in err
