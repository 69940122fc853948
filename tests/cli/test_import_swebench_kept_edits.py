"""Imported SWE-bench tasks keep the candidate's edits to test files the test patch does not touch, as SWE-bench
does; the strict reading runs the tests with them reset, as gradeflow's own reading (``hidden_edits: fail``) does.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gradeflow.cli import main

COMMAND = "python -m pytest -q -p no:cacheprovider --junitxml={junit} tests/test_calc.py"
CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
HELPERS = "from calc import sub\n\n\ndef minus(a, b):\n    return sub(a, b)\n"
TESTS = "from helpers import minus\n\n\ndef test_sub():\n    assert minus(3, 1) == 2\n"
TEST_ADD = "\n\ndef test_add():\n    from calc import add\n\n    assert add(1, 2) == 3\n"


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    env |= {"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """An imported task (add() subtracts; the test patch adds test_add to tests/test_calc.py, whose test_sub
    goes through the helper tests/helpers.py) and a mirror of its base to make the candidate's patch in."""
    repo = tmp_path / "repos" / "acme__calc"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "tests" / "helpers.py").write_text(HELPERS)
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text(CALC.replace("return a - b", "return a + b", 1))
    gold = _git(repo, "diff", "--", "calc.py")
    (repo / "tests" / "test_calc.py").write_text(TESTS + TEST_ADD)
    test_patch = _git(repo, "diff", "--", "tests/test_calc.py")
    _git(repo, "checkout", "-q", "--", ".")
    row = {
        "repo": "acme/calc",
        "instance_id": "acme__calc-1",
        "version": "1.0",
        "base_commit": base,
        "environment_setup_commit": base,
        "patch": gold,
        "test_patch": test_patch,
        "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),
        "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_sub"]),
    }
    (tmp_path / "instances.jsonl").write_text(json.dumps(row) + "\n")
    commands = tmp_path / "commands.yaml"
    commands.write_text(yaml.safe_dump({"acme/calc": {"1.0": {"setup": None, "test_command": COMMAND}}}))
    argv = ["task", "import-swebench", str(tmp_path / "instances.jsonl"), "--repos", str(tmp_path / "repos")]
    assert main([*argv, "--commands", str(commands), "--out", str(tmp_path / "tasks")]) == 0
    capsys.readouterr()
    mirror = tmp_path / "agent"
    subprocess.run(["git", "clone", "-q", str(repo), str(mirror)], check=True)
    return tmp_path / "tasks" / "acme__calc-1", mirror


def _grade(task: Path, mirror: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    patch = mirror.parent / "agent.diff"
    patch.write_text(_git(mirror, "diff"))
    capsys.readouterr()
    main(["grade", str(task / "task.yaml"), "--patch", str(patch), "--json"])
    return json.loads(capsys.readouterr().out)


def _tests(result: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in result["components"] if c["name"] == "tests")


@pytest.mark.usefixtures("prefect")
def test_a_fix_that_needs_its_edit_to_a_test_helper_is_resolved_and_the_strict_reading_runs_without_it(
    imported: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    task, mirror = imported
    # The agent's way: the fix, and a rename of sub() carried through to the helper the tests import.
    (mirror / "calc.py").write_text(CALC.replace("return a - b", "return a + b", 1).replace("def sub", "def subtract"))
    (mirror / "tests" / "helpers.py").write_text(HELPERS.replace("import sub", "import subtract as sub"))
    result = _grade(task, mirror, capsys)
    assert (result["passed"], result["decision"]) == (True, "merge-candidate"), result["messages"]
    tests = _tests(result)
    assert tests["details"]["kept_test_edits"] == ["tests/helpers.py"]
    assert "tests/helpers.py" not in tests["details"]["sealed"]
    # gradeflow's reading resets the helper: the tests cannot import it, and that reading does not pass.
    strict = result["strict_reading"]
    assert not strict["passed"] and "test-edit-kept" in strict["reason_codes"]
    assert {"fail-to-pass-failing", "pass-to-pass-broken"} <= set(strict["reason_codes"])
    assert strict["messages"][0] == (
        "tests/helpers.py: a test edit the hidden tests do not replace, reset under gradeflow's reading"
    )
    assert tests["details"]["strict_tests"]["passed"] is False

    # Under gradeflow's own reading, asked for in the task: the helper is sealed, as before.
    spec = yaml.safe_load((task / "task.yaml").read_text())
    spec["tests"]["hidden_edits"] = "fail"
    (task / "task.yaml").write_text(yaml.safe_dump(spec))
    result = _grade(task, mirror, capsys)
    assert not result["passed"] and result["strict_reading"] is None
    assert _tests(result)["details"]["sealed"]["tests/helpers.py"] == "test folder"
    assert "kept_test_edits" not in _tests(result)["details"]


@pytest.mark.usefixtures("prefect")
def test_a_helper_edit_that_breaks_the_hidden_tests_fails_as_in_swebench_and_passes_the_strict_reading(
    imported: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    task, mirror = imported
    # As a model's patch of django__django-11999 does: the fix, plus an edit in the tests folder that breaks the
    # hidden tests' run (there, a model of the name the test patch's model has; here, a helper that raises).
    (mirror / "calc.py").write_text(CALC.replace("return a - b", "return a + b", 1))
    (mirror / "tests" / "helpers.py").write_text(HELPERS + "\nraise ImportError('the agent broke the helper')\n")
    result = _grade(task, mirror, capsys)
    assert not result["passed"] and "pass-to-pass-broken" in result["reason_codes"]
    strict = result["strict_reading"]
    assert (strict["passed"], strict["decision"]) == (True, "merge-candidate")
    assert strict["reason_codes"] == ["test-edit-kept"]
    assert strict["messages"][-1] == "tests with those edits reset: 1.00, passed"
