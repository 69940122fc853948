"""Fixtures for trials: the calc example, a fresh ledger, and a call of ``gradeflow run``'s Python entry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from builders import EXAMPLES
from gradeflow.agents import TrialConfig, TrialRun, plan_trials, reference_beside, run_trials
from gradeflow.evaluation.ledger import Ledger
from gradeflow.spec import load_task

CALC = EXAMPLES / "calc" / "task.yaml"


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(str(tmp_path / "ledger.db"))


@pytest.fixture
def trials(prefect: None, ledger: Ledger) -> Callable[..., TrialRun]:
    """Run ``repeat`` trials of ``agent`` on the calc task in the real isolated sandbox."""

    def run(agent: str, repeat: int = 1, concurrency: int = 1, **config: Any) -> TrialRun:
        task = load_task(CALC)
        references = {task.task_id: reference_beside(CALC)}
        plan = plan_trials([task], TrialConfig(agent=agent, **config), repeat, None, references)
        return run_trials(plan, ledger, concurrency=concurrency, show_progress=False)

    return run
