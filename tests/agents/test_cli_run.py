"""``gradeflow run`` as a command: its output, exit codes, resuming, and one-line errors for bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agents.conftest import CALC
from gradeflow.cli.main import main


@pytest.mark.usefixtures("prefect")
def test_oracle_passes_nop_fails_and_a_second_call_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = str(tmp_path / "ledger.db")
    common = ["--ledger", ledger, "--no-progress", "--model", "cli"]
    assert main(["run", str(CALC), "--agent", "oracle", "--repeat", "2", *common]) == 0
    out = capsys.readouterr()
    assert "calc-divzero trial-1: graded 1.000 passed=True agent exit 0" in out.out
    assert "ran 2, skipped 0" in out.err
    assert main(["run", str(CALC), "--agent", "oracle", "--repeat", "2", *common]) == 0
    assert "ran 0, skipped 2" in capsys.readouterr().err
    assert main(["run", str(CALC), "--agent", "nop", *common]) == 1


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = tmp_path / "calc"
    shutil.copytree(CALC.parent, task, ignore=shutil.ignore_patterns("reference*.diff"))
    cases = [
        (["--agent", "nop", "--repeat", "0"], "--repeat"),
        (["--agent", "nop", "--timeout", "0"], "--timeout"),
        (["--agent", "oracle"], "no reference patch"),
        (["--agent", "nop", "--agent-dir", str(tmp_path / "absent")], "--agent-dir"),
    ]
    for extra, said in cases:
        assert main(["run", str(task / "task.yaml"), "--ledger", str(tmp_path / "l.db"), *extra]) == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
