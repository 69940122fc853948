"""The ``run-trials`` flow: each pending trial is a ``run-and-record-trial`` task running an ``agent-trial``
subflow (fresh checkout → ``run-agent`` → the agent's output as an artifact → ``grade-submission``).

The flow's task runner bounds how many trials run at once (threads, or a Dask cluster's workers). A
trial is recorded when it finishes, its grade under its content key and run id and its agent facts in
the trials table, both in one transaction. A trial is complete only when the ledger holds both records:
a run that is stopped loses only the trials in flight, and running it again runs the trials that are
not complete, whole (the agent again, then the grade), replacing whatever record an earlier attempt left.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.concurrency.sync import concurrency
from prefect.futures import PrefectFuture, as_completed
from prefect.runtime import flow_run
from pydantic import BaseModel, Field

from gradeflow.agents.config import PlannedTrial
from gradeflow.agents.trial import (
    AgentRun,
    make_checkout,
    oversize_result,
    run_agent,
    unavailable_result,
    with_agent_codes,
)
from gradeflow.evaluation.ledger import GradeRecord, Ledger, TrialRecord
from gradeflow.evaluation.progress import Progress
from gradeflow.evaluation.records import PlannedGrade, record_for
from gradeflow.evaluation.suite import SuiteItem, patch_hash
from gradeflow.flows.evaluate import warm_baseline
from gradeflow.flows.grade import grade_submission
from gradeflow.flows.session import profile_for
from gradeflow.graders.withheld import withhold_hidden_timings
from gradeflow.logs import redacting, scrub
from gradeflow.models import GradeResult, Submission
from gradeflow.sandbox.base import remove_tree

__all__ = ["RecordedTrial", "TrialOutcome", "TrialRun", "agent_trial", "run_trials_flow"]


class TrialOutcome(BaseModel):
    """An ``agent-trial`` run's result: the agent's facts (its output left out) and the grade."""

    run: AgentRun
    result: GradeResult
    flow_run_id: str = ""


class TrialRun(BaseModel):
    """What one ``run-trials`` call did; ``records`` and ``trials`` follow the plan's order."""

    records: list[GradeRecord] = Field(default_factory=list)
    trials: list[TrialRecord] = Field(default_factory=list)
    ran: int = 0
    """Trials run and recorded by this call."""
    skipped: int = 0
    """Trials the ledger already held, not run again."""
    failed: list[str] = Field(default_factory=list)
    """Trials that crashed (not an inconclusive grade): run again on the next call."""
    unavailable: list[str] = Field(default_factory=list)
    """Why the agent's sandbox could not start, one line per trial of this call it made inconclusive."""


class RecordedTrial(BaseModel):
    """What ``run-and-record-trial`` returns: the grade record, and why the agent's sandbox could not start."""

    record: GradeRecord
    unavailable: str | None = None


def _submission_id(planned: PlannedTrial) -> str:
    name = f"{planned.config.model_id}.{planned.run_id}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:128] or planned.run_id


@task(name="run-agent", cache_policy=NO_CACHE, task_run_name="agent-{planned.task.task_id}-{planned.run_id}")
def run_agent_step(planned: PlannedTrial, workspace: str) -> AgentRun:
    """The agent's command, once, in its sandbox over ``workspace``."""
    return run_agent(planned, Path(workspace))


def publish_agent_output(planned: PlannedTrial, run: AgentRun) -> None:
    """The agent's output, redacted (the task's ``env``, passed variables, token-like strings), as an artifact."""
    lines = [f"# agent {planned.config.agent_digest} on {planned.task.task_id} / {planned.run_id}", ""]
    lines.append(f"- exit: `{run.exit_code}`, timed out: `{run.timed_out}`, seconds: {run.seconds}")
    if run.unavailable:
        lines.append(f"- sandbox unavailable: {scrub(run.unavailable)}")
    for name, text in (("stdout", run.stdout), ("stderr", run.stderr)):
        fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", text)), default=0))
        lines += ["", f"## {name}", "", fence, scrub(text), fence]
    key = re.sub(r"[^a-z0-9-]+", "-", f"agent-{planned.task.task_id}-{planned.run_id}".lower())[:100]
    create_markdown_artifact(key=key, markdown="\n".join(lines), description="the agent's output (redacted)")


@flow(
    name="agent-trial",
    flow_run_name="trial-{planned.task.task_id}-{planned.run_id}",
    persist_result=False,
    validate_parameters=False,
)
def agent_trial(planned: PlannedTrial) -> TrialOutcome:
    """Fresh checkout, the agent, its artifact, and the grade of what it left (by ``grade-submission``)."""
    folder = Path(tempfile.mkdtemp(prefix="gradeflow-trial-"))
    submission_id = _submission_id(planned)
    secrets = [*planned.task.candidate_env().values(), *_passed_values(planned)]
    try:
        workspace = make_checkout(planned, folder)
        with redacting(secrets):
            run = run_agent_step(planned, str(workspace))
            publish_agent_output(planned, run)
        if run.unavailable is not None:
            profile = profile_for(planned.task, planned.profile).name
            result = unavailable_result(planned, submission_id, profile, run)
        elif run.oversize is not None:
            policy = profile_for(planned.task, planned.profile)
            result = oversize_result(planned.task, submission_id, policy, run.oversize)
        else:
            result = _grade(planned, Submission(submission_id=submission_id, workspace=workspace))
    finally:
        remove_tree(folder)
    return TrialOutcome(
        run=run.model_copy(update={"stdout": "", "stderr": ""}),
        result=with_agent_codes(result, run),
        flow_run_id=str(flow_run.id or ""),
    )


def _passed_values(planned: PlannedTrial) -> list[str]:
    return [os.environ[name] for name in planned.config.passed_env if name in os.environ]


def _grade(planned: PlannedTrial, submission: Submission) -> GradeResult:
    state = grade_submission(
        planned.task, submission, sandbox=planned.config.sandbox, profile=planned.profile, return_state=True
    )
    result = state.result()
    if not isinstance(result, GradeResult):
        raise TypeError(f"grade-submission returned {type(result).__name__}, not a GradeResult")
    return withhold_hidden_timings(planned.task, result)


@task(name="run-and-record-trial", cache_policy=NO_CACHE, task_run_name="{planned.task.task_id}-{planned.run_id}")
def run_and_record(planned: PlannedTrial, ledger: Ledger, slot: str | None = None) -> RecordedTrial:
    """One trial through the ``agent-trial`` subflow; its trial and grade records written together, replacing
    any an interrupted attempt left. ``slot``: a global concurrency limit the trial holds one slot of while its
    agent and its grade run (a served run's ``gradeflow-sandbox``, shared with served grades)."""
    started = time.perf_counter()
    with concurrency(slot, occupy=1) if slot else nullcontext():
        outcome = agent_trial(planned)
    run, result = outcome.run, outcome.result
    record = record_for(_planned_grade(planned, result, run), result, time.perf_counter() - started)
    ledger.record_trial(_trial_record(planned, outcome), record)
    note = None if run.unavailable is None else f"{planned.label}: {scrub(run.unavailable)}"
    return RecordedTrial(record=record, unavailable=note)


def _trial_record(planned: PlannedTrial, outcome: TrialOutcome) -> TrialRecord:
    run = outcome.run
    return TrialRecord(
        content_key=planned.content_key,
        run_id=planned.run_id,
        task_id=planned.task.task_id,
        model_id=planned.config.model_id,
        prompt_revision=planned.config.prompt_revision,
        agent_digest=planned.config.agent_digest,
        exit_code=run.exit_code,
        timed_out=run.timed_out,
        agent_seconds=run.seconds,
        tool_calls=run.summary.tool_calls,
        input_tokens=run.summary.input_tokens,
        output_tokens=run.summary.output_tokens,
        flow_run_id=outcome.flow_run_id,
    )


def _planned_grade(planned: PlannedTrial, result: GradeResult, run: AgentRun) -> PlannedGrade:
    item = SuiteItem(
        task_id=planned.task.task_id,
        submission=Submission.of_patch(result.submission_id, result.patch),
        run_id=planned.run_id,
        model_id=planned.config.model_id,
        prompt_revision=planned.config.prompt_revision,
        tool_calls=run.summary.tool_calls,
        labels={"agent": planned.config.agent_digest},
    )
    return PlannedGrade(
        item=item,
        task=planned.task,
        content_key=planned.content_key,
        patch_hash=patch_hash(item.submission),
        repository_revision=planned.repository_revision,
    )


@flow(name="run-trials", flow_run_name="run-trials-{label}", persist_result=False, validate_parameters=False)
def run_trials_flow(
    plan: list[PlannedTrial], ledger: Ledger, label: str = "agent", show_progress: bool = True, slot: str | None = None
) -> TrialRun:
    """Run every trial of ``plan`` the ledger does not hold yet, recording each as it finishes."""
    complete = ledger.recorded_keys() & ledger.trial_keys()
    pending = [p for p in plan if p.key not in complete]
    progress = Progress(len(plan), len(plan) - len(pending), enabled=show_progress)
    tasks = {p.task.task_id: p.task for p in pending}
    sandbox = {p.task.task_id: p.config.sandbox for p in pending}
    warm = {task_id: warm_baseline.submit(spec, sandbox[task_id]) for task_id, spec in tasks.items()}
    futures: dict[PrefectFuture[RecordedTrial], PlannedTrial] = {
        run_and_record.submit(p, ledger, slot, return_state=False, wait_for=[warm[p.task.task_id]]): p for p in pending
    }
    failed, unavailable = [], []
    for future in as_completed(list(futures)):
        planned = futures[future]
        try:
            recorded = future.result()
            outcome: str = recorded.record.status
            unavailable += [recorded.unavailable] if recorded.unavailable else []
        except Exception as exc:  # the one boundary: a crash is reported, never recorded, run again next call
            failed.append(f"{planned.label}: {type(exc).__name__}: {exc}")
            outcome = "failed"
        progress.advance(planned.label, outcome)
    keys = {p.key: i for i, p in enumerate(plan)}
    records = sorted(ledger.records(keys), key=lambda r: keys[r.key])
    trials = sorted(
        (t for t in ledger.trials() if (t.content_key, t.run_id) in keys), key=lambda t: keys[(t.content_key, t.run_id)]
    )
    return TrialRun(
        records=records,
        trials=trials,
        ran=len(pending) - len(failed),
        skipped=len(plan) - len(pending),
        failed=failed,
        unavailable=unavailable,
    )
