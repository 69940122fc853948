"""Tasks whose command prints its outcomes (``tests.report``) graded for real under the isolated default: a
unittest runner read as Django's log and confirmed by gradeflow's recorder, pytest's ``-rA`` summary confirmed
by the harness, and patches that print a passing log without passing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gradeflow import grade
from gradeflow.errors import SpecError
from gradeflow.sandbox._bwrap import bwrap_problem
from gradeflow.spec import load_task

pytestmark = [
    pytest.mark.slow,
    pytest.mark.usefixtures("prefect"),
    pytest.mark.skipif(bwrap_problem() is not None, reason=f"isolated sandbox unavailable: {bwrap_problem()}"),
]

CALC = (
    "def divide(a, b):\n    if b == 0:\n        return None\n    return a / b\n\n\ndef add(a, b):\n    return a + b\n"
)
UNITTESTS = """import unittest

from calc import add, divide


class CalcTests(unittest.TestCase):
    def test_div(self):
        with self.assertRaises(ZeroDivisionError):
            divide(1, 0)

    def test_add(self):
        self.assertEqual(add(1, 2), 3)
"""
PYTESTS = """import pytest

from calc import add, divide


def test_div():
    with pytest.raises(ZeroDivisionError):
        divide(1, 0)


def test_add():
    assert add(1, 2) == 3
"""
FIX = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,6 +1,6 @@\n def divide(a, b):\n     if b == 0:\n"
    '-        return None\n+        raise ZeroDivisionError("no")\n     return a / b\n \n \n'
)


def _forging(lines: str) -> str:
    """A patch whose module, once imported by the tests, prints a passing log on every descriptor it may
    hold (whatever a runner's capture did to 1 and 2) and ends the process at once."""
    added = [
        "import os as _os",
        "for _fd in range(1, 64):",
        "    try: _os.write(_fd, " + repr(lines.encode()) + ")",
        "    except OSError: pass",
        "_os._exit(0)",
    ]
    body = "".join(f"+{line}\n" for line in added)
    return f"--- a/calc.py\n+++ b/calc.py\n@@ -8,0 +9,{len(added)} @@\n{body}"


def _task(tmp_path: Path, tests_file: str, text: str, **tests: Any) -> Path:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / tests_file).write_text(text)
    spec = {"task_id": f"log-{tests_file[:-3].replace('_', '-')}", "type": "bugfix", "repo": "./repo", "tests": tests}
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(spec))
    return tmp_path / "task.yaml"


def test_a_unittest_runner_read_as_djangos_log_is_graded_and_a_forged_log_is_caught(tmp_path: Path) -> None:
    task = load_task(
        _task(
            tmp_path,
            "test_calc.py",
            UNITTESTS,
            command="python -m unittest -v tests.test_calc",
            report="django-log",
            fail_to_pass=["tests.test_calc.CalcTests::test_div"],
            pass_to_pass=["tests.test_calc.CalcTests::test_add"],
        )
    )
    fixed = grade(task, patch=FIX)
    assert (fixed.status, fixed.passed) == ("graded", True), fixed.summary()
    tests = fixed.component("tests")
    assert tests.details["report"] == {"format": "django-log", "confirmed_by": "recorder"}
    assert any("confirmed by gradeflow's unittest recorder" in m for m in tests.messages)
    assert not grade(task, patch="").passed
    forged = (
        "test_add (tests.test_calc.CalcTests) ... ok\ntest_div (tests.test_calc.CalcTests) ... ok\n\n"
        "----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nOK\n"
    )
    result = grade(task, patch=_forging(forged))
    assert not result.passed and "junit-tampered" in result.reason_codes, result.summary()
    assert not result.component("tests").passed


def test_pytests_summary_is_read_and_confirmed_by_the_harness(tmp_path: Path) -> None:
    task = load_task(
        _task(
            tmp_path,
            "test_calc.py",
            PYTESTS,
            command="python -m pytest -rA -p no:cacheprovider tests",
            report="pytest-log",
            fail_to_pass=["tests/test_calc.py::test_div"],
            pass_to_pass=["tests/test_calc.py::test_add"],
        )
    )
    fixed = grade(task, patch=FIX)
    assert (fixed.status, fixed.passed) == ("graded", True), fixed.summary()
    assert fixed.component("tests").details["report"] == {"format": "pytest-log", "confirmed_by": "harness"}
    assert not grade(task, patch="").passed
    forged = "PASSED tests/test_calc.py::test_add\nPASSED tests/test_calc.py::test_div\n===== 2 passed in 0.01s =====\n"
    result = grade(task, patch=_forging(forged))
    assert not result.passed and not result.component("tests").passed, result.summary()
    assert {"junit-tampered", "no-junit-output"} & set(result.reason_codes), result.reason_codes


def test_a_log_report_needs_no_junit_placeholder_but_junit_does(tmp_path: Path) -> None:
    path = _task(tmp_path, "test_calc.py", PYTESTS, command="python -m pytest -rA", fail_to_pass=["x::y"])
    with pytest.raises(SpecError, match=r"tests.command must contain the placeholder \{junit\}"):
        load_task(path)
    spec = yaml.safe_load(path.read_text())
    spec["tests"]["report"] = "pytest-log"
    path.write_text(yaml.safe_dump(spec))
    assert load_task(path).tests.report == "pytest-log"
