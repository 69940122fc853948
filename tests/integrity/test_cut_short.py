"""A candidate's run killed before pytest finished: the report is cut short (``no-junit-output``), whatever moment
the kill landed on; a run that ends early without a signal still disagrees with its record (``junit-tampered``).

Real pytest in the local sandbox, through the calls a grade makes. The conftest (the base's too) ends the
process at pytest's unconfigure, after the JUnit report is written and before the harness's record is: the
moment a ``kill(-1)`` from the code under test lands on when the sandbox reaps the test process late.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from builders import make_task
from gradeflow.graders import GradingContext, InMemoryWorkspace, TestGrader
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import TestRunEvidence
from gradeflow.sandbox.local import LocalSandboxFactory
from gradeflow.tasks._testrun import run_test_command, start_harness

CONFTEST = """
import os, signal

def pytest_unconfigure(config):
    if os.path.exists("END"):
        how = open("END").read()
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(0)
"""
TESTS = "import calc\n\n\ndef test_divide():\n    assert calc.divide(4, 2) == 2\n"


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "repo"
    files = {"src/calc.py": "def divide(a, b):\n    return a / b\n", "tests/conftest.py": CONFTEST}
    for name, text in {**files, "tests/test_calc.py": TESTS}.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    return tree


def _task() -> TaskSpec:
    tests = {
        "command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}",
        "fail_to_pass": [],
        "pass_to_pass": ["tests/test_calc.py::test_divide"],
    }
    return TaskSpec.model_validate(make_task(env={"PYTHONPATH": "src"}, tests=tests))


def _run(tree: Path, task: TaskSpec, base: TestRunEvidence | None) -> TestRunEvidence:
    harness = start_harness(task, tree, None, base)
    assert harness is not None
    with LocalSandboxFactory().open(tree) as sandbox:
        return run_test_command(task, sandbox, harness=harness, base=base)


@pytest.mark.parametrize(("how", "code"), [("kill", "no-junit-output"), ("exit", "junit-tampered")])
def test_a_run_ended_before_its_record_is_cut_short_only_when_a_signal_ended_it(
    tmp_path: Path, how: str, code: str
) -> None:
    tree, task = _tree(tmp_path), _task()
    base = _run(tree, task, None)
    assert base.harness is not None and base.outcomes == {"tests/test_calc.py::test_divide": "passed"}
    (tree / "END").write_text(how)
    run = _run(tree, task, base)
    assert run.junit_found, run.output_tail  # pytest wrote its report before the end
    assert run.junit_error and run.junit_tampered == (how == "exit"), run.junit_error
    if how == "kill":
        assert "killed" in run.junit_error
    else:
        assert "before pytest finished" in run.junit_error
    context = GradingContext(task=task, workspace=InMemoryWorkspace(), tests=run, baseline_tests=base)
    component = TestGrader().grade(context)
    assert component.score == 0.0 and component.reason_codes == [code]
