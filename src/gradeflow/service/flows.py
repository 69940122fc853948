"""The flows the service deployments run.

``grade-request`` loads the task spec a :class:`GradeRequest` names and runs the grading graph of
``grade-submission`` in its own flow run (tasks, artifacts and the ``Inconclusive`` state land on the
run the UI shows), inside one slot of the ``gradeflow-sandbox`` global concurrency limit, then tags the
run with the task id, model, profile and decision. ``evaluate-request`` runs ``evaluate-suite`` on a
suite file into a ledger. What a caller may rely on: a grade request whose spec cannot be loaded, or
whose ``task_id`` differs from the spec's, fails the run with a ``SpecError`` message; nothing is graded.
"""

from __future__ import annotations

import re
from pathlib import Path
from uuid import UUID

from prefect import flow, get_run_logger
from prefect.client.orchestration import get_client
from prefect.concurrency.sync import concurrency
from prefect.runtime import deployment, flow_run
from prefect.states import State

from gradeflow.engine import SANDBOX_LIMIT
from gradeflow.engine.credentials import private_ledger
from gradeflow.engine.trust import check_request_sandbox
from gradeflow.errors import SpecError
from gradeflow.evaluation.ledger import Ledger
from gradeflow.flows.grade import grade_submission
from gradeflow.flows.session import Session, flow_runs_without_heartbeat, open_session
from gradeflow.graders.withheld import withhold_hidden_timings
from gradeflow.models import GradeResult, Submission
from gradeflow.service.params import EvaluateRequest, GradeRequest
from gradeflow.service.runners import task_runner
from gradeflow.service.suite_artifacts import publish_report, suite_progress
from gradeflow.spec import load_task

__all__ = ["evaluate_request", "grade_request", "run_tags"]


def run_tags(request: GradeRequest, result: GradeResult | None) -> list[str]:
    """The tags of a grade's flow run: ``task:…``, ``model:…``, ``profile:…`` and ``decision:…``."""
    tags = [f"task:{request.task_id}", f"model:{request.metadata.get('model', 'unknown')}"]
    if result is not None:
        tags += [f"profile:{result.profile}", f"decision:{result.decision}", f"status:{result.status}"]
    return [re.sub(r"[^A-Za-z0-9._:/@+-]", "-", tag)[:100] for tag in tags]


def _tag_run(tags: list[str]) -> None:
    run_id = flow_run.get_id()
    if run_id is None:
        return
    with get_client(sync_client=True) as client:
        current = client.read_flow_run(UUID(run_id)).tags
        client.update_flow_run(UUID(run_id), tags=sorted({*current, *tags}))


@flow(name="grade-request", flow_run_name="grade-{request.task_id}-{request.submission_id}", persist_result=False)
def grade_request(request: GradeRequest) -> GradeResult | State:
    """Grade the request's patch against its task spec; returns what ``grade-submission`` returns."""
    task_spec = load_task(request.task_path)
    if task_spec.task_id != request.task_id:
        raise SpecError(f"{request.task_path}: task_id is {task_spec.task_id!r}, the request says {request.task_id!r}")
    check_request_sandbox(task_spec, request.sandbox)
    submission = Submission.of_patch(request.submission_id, request.diff())
    _tag_run(run_tags(request, None))
    session = open_session(task_spec, request.sandbox, request.profile)
    with session, concurrency(SANDBOX_LIMIT, occupy=1):
        outcome = grade_submission.fn(
            task_spec, submission, sandbox=session.factory, profile=session.profile, base=session.base
        )
    result = outcome if isinstance(outcome, GradeResult) else outcome.data
    if isinstance(result, GradeResult):
        result = withhold_hidden_timings(task_spec, result)
        _tag_run(run_tags(request, result))
        content_key = _record(request, session, submission, result)
        get_run_logger().info("%s", result.summary())
        _ask_for_review(request, session, result, content_key)
    return outcome


def _ask_for_review(request: GradeRequest, session: Session, result: GradeResult, content_key: str) -> None:
    """Start a ``review-grade`` run when a served grade needs a person (see :mod:`gradeflow.service.review`)."""
    policy = session.profile.review
    if result.status != "graded" or deployment.get_id() is None:
        return  # a one-shot call, or nothing a person could judge
    if result.decision != "human-review" and not set(result.reason_codes) & set(policy.ask_human):
        return
    from prefect.deployments import run_deployment

    from gradeflow.service.review import REVIEW_DEPLOYMENT, ReviewRequest

    review = ReviewRequest.for_grade(
        result,
        content_key=content_key,
        run_id=request.submission_id,
        ledger=request.ledger,
        questions=session.task_spec.review.questions,
        timeout_hours=policy.timeout_hours,
    )
    try:
        started = run_deployment(
            REVIEW_DEPLOYMENT, parameters={"request": review.model_dump(mode="json")}, timeout=0, as_subflow=False
        )
    except Exception as exc:  # the grade stands; the missing review is in the run's log
        get_run_logger().error("could not start the review run (%s): %s", REVIEW_DEPLOYMENT, type(exc).__name__)
        return
    get_run_logger().info("asked for a review: flow run %s", getattr(started, "id", started))


def _record(request: GradeRequest, session: Session, submission: Submission, result: GradeResult) -> str:
    """Add the grade to the request's ledger (when it names one); a re-run of the same submission adds
    nothing. Returns the grade's content key."""
    from gradeflow.evaluation.ledger import Ledger
    from gradeflow.evaluation.records import PlannedGrade, record_for
    from gradeflow.evaluation.suite import SuiteItem, content_key, patch_hash

    item = SuiteItem(
        task_id=request.task_id,
        submission=submission,
        run_id=request.submission_id,
        model_id=request.metadata.get("model", "unknown"),
    )
    digest = patch_hash(submission)
    task_spec = session.task_spec
    planned = PlannedGrade(
        item=item,
        task=task_spec,
        content_key=content_key(task_spec, digest, request.profile),
        patch_hash=digest,
        repository_revision=session.base.revision,
    )
    if request.ledger:
        ledger = Ledger(private_ledger(request.ledger))
        try:
            ledger.add(record_for(planned, result, sum(result.timings.values())))
        finally:
            ledger.close()
    return planned.content_key


@flow(name="evaluate-request", flow_run_name="evaluate-nightly", persist_result=False)
def evaluate_request(request: EvaluateRequest) -> dict[str, int]:
    """Evaluate the suite into the ledger on threads or a Dask cluster, with a progress artifact and a
    link artifact to the HTML report; returns the graded, skipped and failed counts."""
    from gradeflow.evaluation.suite import load_suite
    from gradeflow.flows.evaluate import evaluate_suite, plan_suite

    suite = load_suite(request.suite)
    for task_id in dict.fromkeys(item.task_id for item in suite.items):
        check_request_sandbox(suite.tasks[task_id], request.sandbox)
        open_session(suite.tasks[task_id], request.sandbox, request.profile)
    ledger = Ledger(private_ledger(request.ledger))
    keys = {planned.key for planned in plan_suite(suite, request.profile)}
    try:
        # Each grade is its own subflow run: the heartbeat thread would add about a second to each.
        with suite_progress(ledger, keys), flow_runs_without_heartbeat():
            outcome = evaluate_suite.with_options(task_runner=task_runner(request))(
                suite, ledger, request.profile, request.sandbox, False, SANDBOX_LIMIT
            )
        publish_report(ledger, keys, Path(request.reports), f"{Path(request.suite).stem}-{flow_run.get_id()}")
    finally:
        ledger.close()
    return {"graded": outcome.graded, "skipped": outcome.skipped, "failed": len(outcome.failed)}
