"""``run_trials``: plan the trials of one call, check what is the caller's to fix, run ``run-trials``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from gradeflow.agents.config import PlannedTrial, TrialConfig, trial_key
from gradeflow.agents.flows import TrialRun, run_trials_flow
from gradeflow.agents.sandboxes import agent_factory
from gradeflow.errors import SpecError
from gradeflow.evaluation.ledger import Ledger
from gradeflow.flows.session import flow_runs_without_heartbeat, open_session
from gradeflow.models import TaskSpec
from gradeflow.tasks.clients import shared_client_context
from gradeflow.tasks.repo import resolve_base

__all__ = ["oracle_references", "plan_trials", "preflight", "reference_beside", "run_trials"]


def reference_beside(task_path: str | Path) -> str:
    """The task's reference patch, ``reference.diff`` beside its task spec (as ``task strength`` reads it)."""
    path = Path(task_path).parent / "reference.diff"
    try:
        return path.read_bytes().decode("utf-8", errors="surrogateescape")
    except OSError as exc:
        raise SpecError(f"--agent oracle: no reference patch at {path}: {exc.strerror or exc}") from None


def oracle_references(tasks: Sequence[TaskSpec], paths: Sequence[str | Path], agent: str) -> dict[str, str]:
    """The reference patch beside each task spec of ``paths`` when ``agent`` is the oracle; none otherwise."""
    if agent != "oracle":
        return {}
    return {task.task_id: reference_beside(path) for task, path in zip(tasks, paths, strict=True)}


def plan_trials(
    tasks: Sequence[TaskSpec],
    config: TrialConfig,
    repeat: int,
    profile: str | None = None,
    references: Mapping[str, str] | None = None,
) -> list[PlannedTrial]:
    """``repeat`` trials of ``config`` on each task, keyed for the ledger; the oracle needs ``references``."""
    plan = []
    for task in tasks:
        reference = (references or {}).get(task.task_id)
        if config.agent == "oracle" and reference is None:
            raise SpecError(f"--agent oracle: task {task.task_id} has no reference patch")
        key = trial_key(task, config, profile)
        revision = resolve_base(task).revision
        plan += [
            PlannedTrial(
                task=task,
                config=config,
                index=i,
                content_key=key,
                profile=profile,
                reference=reference,
                repository_revision=revision,
            )
            for i in range(1, repeat + 1)
        ]
    return plan


def preflight(plan: Sequence[PlannedTrial]) -> None:
    """``SpecError`` for what is the caller's to fix in any task of ``plan`` (its spec, its sandboxes), before
    any flow runs."""
    for planned in {p.task.task_id: p for p in plan}.values():
        open_session(planned.task, planned.config.sandbox, planned.profile)
        agent_factory(planned.task, planned.config.sandbox, network=planned.network, agent_dir=planned.config.agent_dir)


def run_trials(
    plan: list[PlannedTrial],
    ledger: Ledger,
    *,
    concurrency: int = 1,
    show_progress: bool = True,
    dask_address: str | None = None,
    slot: str | None = None,
) -> TrialRun:
    """Check every task spec and sandbox up front (``SpecError``), then run ``run-trials`` with ``concurrency``
    threads, or on the workers of the Dask scheduler at ``dask_address``; each trial holds a slot of the global
    concurrency limit ``slot`` when one is named."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    preflight(plan)
    runner: TaskRunner[Any] = ThreadPoolTaskRunner(max_workers=concurrency)
    if dask_address:
        from prefect_dask import DaskTaskRunner

        runner = DaskTaskRunner(address=dask_address)
    label = plan[0].config.model_id if plan else "empty"
    with flow_runs_without_heartbeat(), shared_client_context():
        result = run_trials_flow.with_options(task_runner=runner)(plan, ledger, label, show_progress, slot)
    assert isinstance(result, TrialRun)
    return result
