"""A base run that gives no usable report explains itself: the inconclusive grade's message (and what
``validate`` prints) holds the test command, the exit code with pytest's meaning, and the last lines of
the run's output with the task's secret values redacted.

Real input: a src-layout repository whose command passes pytest an option it does not know (exit 4), after
printing a secret from the task's ``env``; graded in the local sandbox.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gradeflow import grade
from gradeflow.cli import main

pytestmark = [pytest.mark.usefixtures("prefect"), pytest.mark.slow]

SECRET = "s3cr3t-value-0123456789"
COMMAND = "echo token is $API_TOKEN; PYTHONPATH=src python -m pytest --no-such-option --junitxml={junit}"


def _task(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    test = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    (repo / "tests" / "test_calc.py").write_text(test)
    spec = {
        "task_id": "base-explains",
        "type": "bugfix",
        "repo": "./repo",
        "env": {"API_TOKEN": SECRET},
        "tests": {"command": COMMAND, "fail_to_pass": ["tests/test_calc.py::test_add"], "timeout": 120},
        "environment": {"sandbox": "local"},
    }
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(spec))
    return tmp_path / "task.yaml"


def test_the_inconclusive_grade_names_the_command_exit_code_and_output(tmp_path: Path) -> None:
    result = grade(_task(tmp_path), patch="")
    assert (result.status, result.reason_codes) == ("inconclusive", ["baseline-broken"])
    (message,) = result.messages
    assert f"command: {COMMAND}" in message
    assert "exit code 4: pytest's usage error" in message
    assert "last output:" in message and "unrecognized arguments: --no-such-option" in message
    assert "token is [redacted]" in message and SECRET not in result.model_dump_json()
    assert "\n" not in message


def test_validate_prints_the_same_explanation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", str(_task(tmp_path))])
    captured = capsys.readouterr()
    shown = captured.out + captured.err
    assert code != 0 and "Traceback" not in shown
    assert "unrecognized arguments: --no-such-option" in shown and "command: echo token" in shown
    assert SECRET not in shown
