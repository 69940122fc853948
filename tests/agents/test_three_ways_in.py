"""One hostile patch, three ways in: ``gradeflow grade --patch``, an agent of ``gradeflow run`` that applies it, and a
``RepoEnv`` episode that writes it. The integrity checks are the same on every path: each grade is rejected for
the same reason, and the honest fix passes each way."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gradeflow.agents import RepoEnv, Run, Submit, Write
from gradeflow.cli.main import main
from gradeflow.evaluation.ledger import Ledger

HOSTILE = Path(__file__).resolve().parent.parent / "hostile"
TASK = HOSTILE / "task" / "task.yaml"
# pytest.raises' own helpers swapped inside the call and put back as they are called: "nothing raised" passes.
SWAP = HOSTILE / "patches" / "c3-raises-restoring-swap.diff"
FIX = HOSTILE / "patches" / "control-reference-fix.diff"

pytestmark = [pytest.mark.usefixtures("prefect"), pytest.mark.slow]


def _by_grade(patch: Path, capsys: pytest.CaptureFixture[str]) -> tuple[bool, list[str]]:
    capsys.readouterr()
    main(["grade", str(TASK), "--patch", str(patch), "--json"])
    result = json.loads(capsys.readouterr().out)
    return result["passed"], result["reason_codes"]


def _by_run(patch: Path, tmp_path: Path) -> tuple[bool, list[str]]:
    tools = tmp_path / f"agent-{patch.stem}"
    tools.mkdir()
    shutil.copy(patch, tools / "change.diff")
    ledger = tmp_path / f"{patch.stem}.db"
    agent = f"git apply {tools}/change.diff"
    argv = ["run", str(TASK), "--agent", agent, "--agent-dir", str(tools), "--ledger", str(ledger), "--no-progress"]
    main(argv)
    records = Ledger(str(ledger)).records()
    assert len(records) == 1, records
    return records[0].passed, records[0].reason_codes


def _by_episode(patch: Path) -> tuple[bool, list[str]]:
    with RepoEnv(TASK) as env:
        env.reset()
        env.step(Write("change.diff", patch.read_text()))
        applied = env.step(Run("git apply change.diff && rm change.diff"))[0]
        assert applied.exit_code == 0, applied.error
        _, _, terminated, _, info = env.step(Submit())
    assert terminated
    return info["result"].passed, info["result"].reason_codes


@pytest.mark.skipif(os.geteuid() != 0, reason="the isolated sandbox's bounds need root here")
def test_a_hostile_patch_is_rejected_alike_through_grade_run_and_repoenv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ways = {
        "grade": lambda patch: _by_grade(patch, capsys),
        "run": lambda patch: _by_run(patch, tmp_path),
        "RepoEnv": _by_episode,
    }
    for way, graded in ways.items():
        passed, codes = graded(SWAP)
        assert not passed and "junit-tampered" in codes, (way, codes)
        assert graded(FIX) == (True, []), way
