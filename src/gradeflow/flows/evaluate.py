"""The ``evaluate-suite`` flow: plan → skip what the ledger has → warm baselines → grade and record each.

Each submission is a ``grade-and-record`` task that runs the ``grade-submission`` subflow and writes
one ledger record; the flow's ``ThreadPoolTaskRunner`` bounds how many run at once (grading is mostly
waiting on subprocesses, so threads overlap well). Each task's baseline is built once, by a
``warm-baseline`` task its submissions wait for, then served from the cache. A run that is killed
loses only the submissions in flight: run again and it grades only what the ledger lacks.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.concurrency.sync import concurrency
from prefect.futures import PrefectFuture, as_completed
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner
from pydantic import BaseModel, Field

from gradeflow.errors import InfraError
from gradeflow.evaluation.ledger import GradeRecord, Ledger
from gradeflow.evaluation.progress import Progress
from gradeflow.evaluation.records import PlannedGrade, crash_result, record_for
from gradeflow.evaluation.suite import Suite, content_key, patch_hash
from gradeflow.flows.grade import grade_submission
from gradeflow.flows.session import factory_in, flow_runs_without_heartbeat, open_session, prepare_base
from gradeflow.models import GradeResult, TaskSpec
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.tasks.environment import pin_base
from gradeflow.tasks.repo import resolve_base

__all__ = ["Evaluation", "evaluate", "evaluate_suite", "plan_suite"]


class Evaluation(BaseModel):
    """What one ``evaluate`` run did; ``records`` follow the suite's order."""

    records: list[GradeRecord] = Field(default_factory=list)
    """The ledger record of every suite item that has one (graded now or before)."""
    graded: int = 0
    """Submissions graded and recorded by this run (a grade that crashed is in ``failed``)."""
    skipped: int = 0
    """Submissions already in the ledger, not graded again."""
    failed: list[str] = Field(default_factory=list)
    """Submissions whose grade crashed instead of returning a result, each with its error. Each is still
    recorded with its status and reason (see :func:`~gradeflow.evaluation.records.crash_result`); one the
    ledger could not take is graded again by the next run."""


def plan_suite(suite: Suite, profile: str | None) -> list[PlannedGrade]:
    """Content keys and pinned base revisions for every item of ``suite``."""
    revisions = {task_id: resolve_base(spec).revision for task_id, spec in suite.tasks.items()}
    plan = []
    for item in suite.items:
        spec = suite.tasks[item.task_id]
        digest = patch_hash(item.submission)
        plan.append(
            PlannedGrade(
                item=item,
                task=spec,
                content_key=content_key(spec, digest, profile),
                patch_hash=digest,
                repository_revision=revisions[item.task_id],
            )
        )
    return plan


@task(name="warm-baseline", cache_policy=NO_CACHE)
def warm_baseline(task_spec: TaskSpec, sandbox: str | SandboxFactory | None) -> bool:
    """Build (or find cached) the task's baseline; ``False`` when the environment failed (grades say why)."""
    try:
        with factory_in(task_spec, sandbox) as factory:
            prepare_base(task_spec, factory, pin_base(task_spec))
    except InfraError:
        return False
    return True


@task(
    name="grade-and-record", cache_policy=NO_CACHE, task_run_name="grade-{planned.item.task_id}-{planned.item.run_id}"
)
def grade_and_record(
    planned: PlannedGrade,
    ledger: Ledger,
    sandbox: str | SandboxFactory | None,
    profile: str | None,
    slot: str | None = None,
) -> GradeRecord:
    """Grade one submission through the ``grade-submission`` subflow and add its record to the ledger; the
    grade holds a slot of the global concurrency limit ``slot`` when one is named (a served evaluation's
    ``gradeflow-sandbox``, shared with every served grade)."""
    started = time.perf_counter()
    with concurrency(slot, occupy=1) if slot else nullcontext():
        state = grade_submission(
            planned.task, planned.item.submission, sandbox=sandbox, profile=profile, return_state=True
        )
    result = state.result()
    if not isinstance(result, GradeResult):
        raise TypeError(f"grade-submission returned {type(result).__name__}, not a GradeResult")
    record = record_for(planned, result, time.perf_counter() - started)
    ledger.add(record)
    return record


@flow(name="evaluate-suite", flow_run_name="evaluate-{suite.source}", persist_result=False, validate_parameters=False)
def evaluate_suite(
    suite: Suite,
    ledger: Ledger,
    profile: str | None = None,
    sandbox: str | SandboxFactory | None = None,
    show_progress: bool = True,
    slot: str | None = None,
) -> Evaluation:
    """Grade every submission of ``suite`` that ``ledger`` does not hold yet, recording each as it finishes."""
    plan = plan_suite(suite, profile)
    recorded = ledger.recorded_keys()
    pending = list({p.key: p for p in plan if p.key not in recorded}.values())
    progress = Progress(len(plan), len(plan) - len(pending), enabled=show_progress)
    warm = {
        task_id: warm_baseline.submit(suite.tasks[task_id], sandbox)
        for task_id in dict.fromkeys(p.item.task_id for p in pending)
    }
    futures: dict[PrefectFuture[GradeRecord], PlannedGrade] = {
        grade_and_record.submit(
            p, ledger, sandbox, profile, slot, return_state=False, wait_for=[warm[p.item.task_id]]
        ): p
        for p in pending
    }
    failed = []
    for future in as_completed(list(futures)):
        planned = futures[future]
        try:
            outcome: str = future.result().status
        except Exception as exc:  # the one boundary: a crash is reported and recorded with its status and reason
            failed.append(
                f"{planned.label}: {type(exc).__name__}: {exc}; {_record_crash(planned, ledger, profile, exc)}"
            )
            outcome = "failed"
        progress.advance(planned.label, outcome)
    order = {p.key: i for i, p in enumerate(plan)}
    records = sorted(ledger.records(order), key=lambda r: order[r.key])
    return Evaluation(
        records=records, graded=len(pending) - len(failed), skipped=len(plan) - len(pending), failed=failed
    )


def _record_crash(planned: PlannedGrade, ledger: Ledger, profile: str | None, error: Exception) -> str:
    """Record the grade that raised ``error`` (see :func:`crash_result`); what was recorded, in words."""
    result = crash_result(planned, error, profile)
    try:
        ledger.add(record_for(planned, result, 0.0))
    except InfraError as exc:
        return f"not recorded ({exc}): graded again by the next run"
    return f"recorded {result.status} {', '.join(result.reason_codes)}"


def evaluate(
    suite: Suite,
    ledger: Ledger,
    *,
    concurrency: int = 1,
    profile: str | None = None,
    sandbox: str | SandboxFactory | None = None,
    show_progress: bool = True,
    dask_address: str | None = None,
) -> Evaluation:
    """Check every task spec up front (``SpecError``), then run ``evaluate-suite`` with ``concurrency`` threads,
    or on the workers of the Dask scheduler at ``dask_address``."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    for task_id in dict.fromkeys(item.task_id for item in suite.items):
        open_session(suite.tasks[task_id], sandbox, profile)
    ledger.recorded_keys()  # a ledger that cannot be read is one line here, not a failed flow run's traceback
    runner: TaskRunner[Any] = ThreadPoolTaskRunner(max_workers=concurrency)
    if dask_address:
        from prefect_dask import DaskTaskRunner

        runner = DaskTaskRunner(address=dask_address)
    # Each grade is its own flow run: the heartbeat thread would add about a second to every one.
    with flow_runs_without_heartbeat():
        result = evaluate_suite.with_options(task_runner=runner)(suite, ledger, profile, sandbox, show_progress)
    assert isinstance(result, Evaluation)
    return result
