"""The varied re-run end to end with real pytest in the local sandbox: honest suites of every common shape keep
passing with pytest's marks off the process, code that behaves only under test does not, and a failing
candidate pays for no second run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fakes import diff
from gradeflow import grade
from gradeflow.models import GradeResult, TaskSpec

pytestmark = [pytest.mark.usefixtures("prefect"), pytest.mark.slow]

CALC = "def divide(a, b):\n    return a / b if b else None\n"
ADD = "\n\ndef add(a, b):\n    return a + b\n"
SHAPES = """import logging
import os
import sys
import threading
import unittest

import pytest

import calc


@pytest.fixture
def opened(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("x")
    yield path
    assert path.read_text() == "x"


def test_plain():
    assert calc.add(1, 2) == 3


def test_prints_and_logs():
    print("out")
    logging.getLogger(__name__).warning("logged")
    assert calc.add(2, 2) == 4


def test_caplog(caplog):
    with caplog.at_level(logging.INFO):
        logging.getLogger("calc").info("seen %s", calc.add(1, 1))
    assert "seen 2" in caplog.text


def test_capsys(capsys):
    print(calc.add(3, 4))
    assert capsys.readouterr().out == "7\\n"


def test_capfd(capfd):
    os.write(1, b"fd\\n")
    assert capfd.readouterr().out == "fd\\n"


def test_fixture_and_monkeypatch(opened, monkeypatch):
    monkeypatch.setenv("CALC_MODE", "x")
    assert os.environ["CALC_MODE"] == "x" and opened.exists()


@pytest.fixture
def doubler():
    import queue

    requests, replies = queue.Queue(), queue.Queue()

    def serve():
        while (value := requests.get()) is not None:
            replies.put(value * 2)

    worker = threading.Thread(target=serve, daemon=True)
    worker.start()
    yield lambda value: (requests.put(value), replies.get(timeout=20))[1]
    requests.put(None)
    worker.join()


def test_served_by_a_fixture_s_thread(doubler):
    assert doubler(calc.add(1, 1)) == 4


def test_thread():
    found = []
    worker = threading.Thread(target=lambda: found.append(calc.add(1, 1)))
    worker.start()
    worker.join()
    assert found == [2]


def test_recursion_is_not_smaller():
    def down(n):
        return 0 if n == 0 else 1 + down(n - 1)

    assert down(sys.getrecursionlimit() - 100) > 0


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert calc.add(n, 0) == n


class TestGroup:
    def test_method(self):
        assert calc.add(0, 0) == 0


class Case(unittest.TestCase):
    def test_unit(self):
        self.assertEqual(calc.add(2, 3), 5)
"""
IDS = [
    "test_plain",
    "test_prints_and_logs",
    "test_caplog",
    "test_capsys",
    "test_capfd",
    "test_fixture_and_monkeypatch",
    "test_served_by_a_fixture_s_thread",
    "test_thread",
    "test_recursion_is_not_smaller",
    "test_param[1]",
    "test_param[2]",
    "TestGroup::test_method",
    "Case::test_unit",
]
SHAPE_IDS = [f"tests/test_shapes.py::{name}" for name in IDS]
DIVIDE = "tests/test_divide.py::test_divide_by_zero"
DIVIDE_TEST = (
    "import pytest\n\nfrom calc import divide\n\n\n"
    "def test_divide_by_zero():\n    with pytest.raises(ZeroDivisionError):\n        divide(1, 0)\n"
)
# Raises only where pytest's faulthandler plugin runs: passes every test, fixes nothing for a real caller.
NOTICING = (
    "def divide(a, b):\n    import faulthandler\n\n    if b == 0 and faulthandler.is_enabled():\n"
    "        raise ZeroDivisionError('no')\n    return a / b if b else None\n"
)
FIX = CALC.replace("return a / b if b else None", "return a / b")


@pytest.fixture
def grade_with(tmp_path: Path) -> Callable[[list[str], str], GradeResult]:
    repo = tmp_path / "repo"
    files = {"src/calc.py": CALC, "tests/test_shapes.py": SHAPES, "tests/test_divide.py": DIVIDE_TEST}
    files["pytest.ini"] = "[pytest]\npythonpath = src tests\n"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)

    def run(fail_to_pass: list[str], source: str) -> GradeResult:
        tests = {
            "command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}",
            "fail_to_pass": fail_to_pass,
            "timeout": 120,
        }
        task = TaskSpec.model_validate({"task_id": "varied", "type": "bugfix", "repo": str(repo), "tests": tests})
        return grade(task, patch=diff(CALC, source, "src/calc.py"), sandbox="local")

    return run


def test_an_honest_suite_of_every_shape_passes_its_varied_run(
    grade_with: Callable[[list[str], str], GradeResult],
) -> None:
    # Every fixed test is run again: caplog, capsys, capfd, unittest, threads (a fixture's too: that call runs in
    # the process, not a forked child without the thread), fixtures with a teardown...
    result = grade_with(SHAPE_IDS, CALC + ADD)
    assert (result.status, result.passed, result.reason_codes) == ("graded", True, []), result.messages
    varied = result.component("tests").details["varied_run"]
    assert varied == {"outcomes": dict.fromkeys(SHAPE_IDS, "passed"), "problem": None}


def test_code_that_behaves_only_under_pytest_is_for_review(grade_with: Callable[[list[str], str], GradeResult]) -> None:
    noticed = grade_with([DIVIDE], NOTICING)
    assert (noticed.status, noticed.passed, noticed.decision) == ("graded", False, "human-review"), noticed.messages
    assert noticed.reason_codes == ["outcome-varies-with-environment"]
    assert noticed.component("tests").details["varied_run"]["outcomes"] == {DIVIDE: "failed"}
    fixed = grade_with([DIVIDE], FIX)
    assert (fixed.passed, fixed.decision, fixed.reason_codes) == (True, "merge-candidate", [])


def test_a_failing_candidate_gets_no_varied_run(grade_with: Callable[[list[str], str], GradeResult]) -> None:
    missed = grade_with([DIVIDE], CALC + ADD)
    assert "fail-to-pass-failing" in missed.reason_codes
    assert "varied_run" not in missed.component("tests").details
