"""An object of the repository that claims a class (``__class__`` answered by its type) is not believed by the verdict
helpers that decide by ``isinstance``: unittest's ``assertIsInstance``, pytest's ``raises`` and
``ExceptionInfo.errisinstance``; the claim is noted (``patched``), an object of elsewhere (a mock's ``spec``) is not."""

from __future__ import annotations

import subprocess
from pathlib import Path

from builders import make_task
from gradeflow.models import TaskSpec
from gradeflow.sandbox.local import LocalSandboxFactory
from gradeflow.tasks._testrun import run_test_command, start_harness

CLAIMS = """_NAME = "_" * 2 + "class" + "_" * 2


class Claims(ValueError):
    def __getattribute__(self, name):
        if name == _NAME:
            return ZeroDivisionError
        return super().__getattribute__(name)
"""
TESTS = """import unittest
from unittest import mock

import pytest

from claims import Claims


class TestClaims(unittest.TestCase):
    def test_assert_is_instance(self):
        self.assertIsInstance(Claims(), ZeroDivisionError)

    def test_a_mock_spec_is_left_alone(self):
        self.assertIsInstance(mock.Mock(spec=ZeroDivisionError), ZeroDivisionError)


def test_raises():
    with pytest.raises(ZeroDivisionError):
        raise Claims()


def test_errisinstance():
    with pytest.raises(ValueError) as info:
        raise Claims()
    assert info.errisinstance(ZeroDivisionError)


def test_an_honest_exception():
    with pytest.raises(ZeroDivisionError) as info:
        1 / 0
    assert info.errisinstance(ArithmeticError)
"""


def test_a_claimed_class_is_not_believed_and_is_noted(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    (tree / "tests").mkdir(parents=True)
    (tree / "src").mkdir()
    (tree / "src" / "claims.py").write_text(CLAIMS)
    (tree / "tests" / "test_claims.py").write_text(TESTS)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    tests = {
        "command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}",
        "fail_to_pass": ["tests/test_claims.py::test_an_honest_exception"],
        "pass_to_pass": [],
    }
    task = TaskSpec.model_validate(make_task(env={"PYTHONPATH": "src"}, tests=tests))
    harness = start_harness(task, tree, None, None)
    assert harness is not None
    with LocalSandboxFactory().open(tree) as sandbox:
        evidence = run_test_command(task, sandbox, harness=harness, base=None)
    assert evidence.harness is not None, evidence.output_tail
    outcomes = {case.name: case.outcome for case in evidence.cases}
    assert outcomes == {
        "test_assert_is_instance": "failed",
        "test_a_mock_spec_is_left_alone": "passed",
        "test_raises": "failed",
        "test_errisinstance": "failed",
        "test_an_honest_exception": "passed",
    }, evidence.output_tail
    assert evidence.harness.patched == ["claimed class claims.Claims"]
