"""Tests that run pytest inside their own call (pytester's ``inline_run``, pytest's own ``testdir``): the harness is
loaded into those inner sessions too, and records only the run's own session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from builders import calc_with_tests
from gradeflow import grade, load_task
from integrity.plugin_run import install_plugin, read_record

INNER = """\
pytest_plugins = ["pytester"]


def test_inner_sessions_alike(pytester):
    # Two inner sessions whose one test has the same id each time, as pytest's own tests make them.
    pytester.makepyfile(test_one="def test_this():\\n    pass\\n")
    for _ in range(2):
        pytester.inline_run().assertoutcome(passed=1)


def test_inner_failure_is_the_inner_sessions(pytester):
    pytester.makepyfile(test_one="def test_this():\\n    assert 0\\n")
    pytester.runpytest_inprocess().assert_outcomes(failed=1)
"""
OUTER = [
    "tests/test_inner.py::test_inner_sessions_alike",
    "tests/test_inner.py::test_inner_failure_is_the_inner_sessions",
]


def test_an_inner_session_records_nothing_of_its_own(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_inner.py").write_text(INNER)
    plugin = install_plugin(tmp_path, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONDONTWRITEBYTECODE"))}
    env["PYTHONPATH"] = str(tmp_path)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "tests"]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr  # the inner sessions saw their own outcomes only
    record = read_record(tmp_path)
    assert record["collected"] == OUTER
    assert record["calls"] == dict.fromkeys(OUTER, "ok")
    assert record["exitstatus"] == 0 and record["finished"]
    logged = (tmp_path / "calls.log").read_text().splitlines()
    assert [line.split(", ")[1].strip('"') for line in logged] == OUTER  # one line per outer test, no inner one
    # (pytest writes its own modules and classes during an inner session: noted, and the same on the base, as the
    # grade below shows.)


@pytest.mark.usefixtures("prefect")
def test_a_task_whose_tests_run_inner_sessions_grades_as_its_tests_say(tmp_path: Path) -> None:
    # Before, the inner sessions' calls reached the signed call log (two results for ``test_one.py::test_this``):
    # every patch of such a repository, the fix included, was junit-tampered.
    task = calc_with_tests(tmp_path, "calc-inner-sessions", {"test_inner.py": INNER}, OUTER)
    spec = yaml.safe_load(task.read_text())
    fixed = grade(load_task(task), patch=tmp_path / "calc" / "reference.diff")
    assert (fixed.status, fixed.decision, fixed.reason_codes) == ("graded", "merge-candidate", [])
    assert fixed.component("tests").details["pass_to_pass"] == {
        **dict.fromkeys(spec["tests"]["pass_to_pass"], "passed")
    }
    unfixed = grade(load_task(task), patch="")
    assert "junit-tampered" not in unfixed.reason_codes and "fail-to-pass-failing" in unfixed.reason_codes
