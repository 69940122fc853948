"""The harness under the commands real tasks use, graded end to end with real pytest in the local sandbox.

Whatever the task's command narrows (``-x``, ``--maxfail``, ``-k``, test paths, node ids) or however it
wraps pytest's status, the canaries run, an honest fix passes, an honest miss fails on its tests and
neither is called tampered; the canaries never show in the published result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from fakes import diff
from gradeflow import grade
from gradeflow.models import GradeResult, TaskSpec

pytestmark = [pytest.mark.usefixtures("prefect"), pytest.mark.slow]

BUG = "def divide(a, b):\n    return a / b if b else None\n\n\ndef add(a, b):\n    return a + b\n"
FIX = BUG.replace("return a / b if b else None", "if b == 0:\n        raise ZeroDivisionError('no')\n    return a / b")
TESTS = (
    "import pytest\n\nfrom calc import add, divide\n\n\n"
    "def test_divide_by_zero():\n    with pytest.raises(ZeroDivisionError):\n        divide(1, 0)\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n\n\n"
    "def test_divide():\n    assert divide(6, 3) == 2\n"
)
OTHER = """import functools
import unittest

import pytest

from helpers import logged


def _retry(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return function(*args, **kwargs)

    return wrapper


def _made(value):
    def test():
        assert value

    return test


test_made = _made(1)
test_lambda = lambda: None  # noqa: E731


@_retry
@logged
def test_decorated():
    assert True


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n


class TestGroup:
    def test_method(self):
        assert True


class Case(unittest.TestCase):
    def test_unit(self):
        self.assertTrue(True)
"""
"""Tests of the shapes real suites have: decorators from the file and from a helper, factories, lambdas,
classes, unittest. None of them is tampering, on the base or on the candidate."""
HELPERS = (
    "import functools\n\n\n"
    "def logged(f):\n    @functools.wraps(f)\n    def inner(*a, **k):\n        return f(*a, **k)\n\n    return inner\n"
)
FILES = {
    "src/calc.py": BUG,
    "tests/test_calc.py": TESTS,
    "tests/test_other.py": OTHER,
    "tests/helpers.py": HELPERS,
    "pytest.ini": "[pytest]\npythonpath = src tests\n",
}
PYTEST = "python -m pytest -q -p no:cacheprovider --junitxml={junit}"

COMMANDS = {
    "plain": PYTEST,
    "stop-at-first-failure": f"{PYTEST} -x",
    "maxfail": f"{PYTEST} --maxfail=1",
    "keyword": f"{PYTEST} -k 'divide or add'",
    "one-path": f"{PYTEST} tests/test_calc.py",
    "node-ids": f"{PYTEST} tests/test_calc.py::test_divide_by_zero tests/test_calc.py::test_add",
    "status-swallowed": f"{PYTEST}; true",
    "in-a-shell-script": "sh run-tests.sh {junit}",
}


@pytest.fixture
def grade_with(tmp_path: Path) -> Callable[[str, str], GradeResult]:
    def run(command: str, source: str) -> GradeResult:
        repo = tmp_path / "repo"
        for name, text in FILES.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        (repo / "run-tests.sh").write_text(PYTEST.replace("{junit}", '"$1"') + "\n")
        task = TaskSpec.model_validate(
            {
                "task_id": "harness-commands",
                "type": "bugfix",
                "repo": str(repo),
                "tests": {
                    "command": command,
                    "fail_to_pass": ["tests/test_calc.py::test_divide_by_zero"],
                    "pass_to_pass": ["tests/test_calc.py::test_add"],
                    "timeout": 120,
                },
                "grading": {"weights": {"tests": 1.0}},
            }
        )
        patch = diff(BUG, source) if source != BUG else ""
        return grade(task, patch=patch, sandbox="local")

    return run


def _canary_free(result: GradeResult) -> None:
    published = json.dumps(result.model_dump(mode="json"))
    assert "sum(range(" not in published
    tests = result.component("tests")
    names = set(tests.details.get("outcomes", {})) if isinstance(tests.details.get("outcomes"), dict) else set()
    assert names <= {"tests/test_calc.py::test_divide_by_zero", "tests/test_calc.py::test_add"}, names


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_harness_holds_under_the_tasks_command(name: str, grade_with: Callable[[str, str], GradeResult]) -> None:
    fixed = grade_with(COMMANDS[name], FIX)
    assert (fixed.status, fixed.passed, fixed.reason_codes) == ("graded", True, []), fixed.messages
    assert fixed.component("tests").details["canaries"] == "checked"
    _canary_free(fixed)
    missed = grade_with(COMMANDS[name], BUG)
    assert missed.status == "graded" and not missed.passed
    assert "fail-to-pass-failing" in missed.reason_codes and "junit-tampered" not in missed.reason_codes
    _canary_free(missed)


def test_a_runner_the_harness_cannot_join_says_canaries_unsupported(
    grade_with: Callable[[str, str], GradeResult], tmp_path: Path
) -> None:
    # A runner of the task's own writes the JUnit report: no pytest, so no plugin and no canary can join.
    runner = (
        "import sys\n"
        "sys.path.insert(0, 'src')\n"
        "import calc\n\n\n"
        "def test_divide_by_zero():\n"
        "    try:\n        calc.divide(1, 0)\n    except ZeroDivisionError:\n        return\n"
        "    raise AssertionError('no error')\n\n\n"
        "def test_add():\n    assert calc.add(1, 2) == 3\n\n\n"
        "body = ''\n"
        "for check in (test_divide_by_zero, test_add):\n"
        "    try:\n        check()\n        failure = ''\n"
        "    except AssertionError:\n        failure = '<failure message=\"no\"/>'\n"
        '    body += f\'<testcase classname="tests.test_calc" name="{check.__name__}">{failure}</testcase>\'\n'
        "open(sys.argv[1], 'w').write(f'<testsuite name=\"u\">{body}</testsuite>')\n"
    )
    FILES["runner.py"] = runner
    try:
        fixed = grade_with("python runner.py {junit}", FIX)
    finally:
        del FILES["runner.py"]
    tests = fixed.component("tests")
    assert tests.details["canaries"] == "unsupported"
    assert fixed.status == "graded" and fixed.passed, fixed.messages
    FILES["runner.py"] = runner
    try:
        missed = grade_with("python runner.py {junit}", BUG)
    finally:
        del FILES["runner.py"]
    assert "fail-to-pass-failing" in missed.reason_codes and "junit-tampered" not in missed.reason_codes


def test_a_command_that_selects_none_of_the_tasks_tests_is_not_passed_on_canaries(
    grade_with: Callable[[str, str], GradeResult],
) -> None:
    # Only the grader's two canaries run: they are not tests of the task, so nothing of the task passed.
    result = grade_with(f"{PYTEST} -k no_test_has_this_name", FIX)
    assert not result.passed
    assert (result.status, result.reason_codes) == ("graded", ["no-tests-ran"]), result
