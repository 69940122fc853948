"""``gradeflow serve`` and ``gradeflow deploy --pool NAME``: the service deployments.

- ``grade-request/grade-submission``: grades one :class:`GradeRequest`; the webhook receiver starts its runs.
- ``evaluate-request/evaluate-suite``: evaluates the configured suite on the configured cron schedule
  (default nightly, 02:00 UTC).
- ``review-grade/ask-reviewer``: asks a person about one grade (:mod:`gradeflow.service.review`); a
  served grade that needs a review starts its runs.
- ``run-trials-request/agent-trials``: runs an agent's trials into the ledger, as ``gradeflow run``
  (:mod:`gradeflow.agents.service`).

``serve`` runs both in this process (``prefect.serve``); ``deploy`` registers them on a ``process``
work pool (created when missing) for ``prefect worker start --pool NAME`` processes to pull. Both make
sure the ``gradeflow-sandbox`` global concurrency limit exists with the configured number of slots, and
that the automation marking runs without heartbeats ``Crashed`` exists (:mod:`gradeflow.service.automations`).
Entry points are module paths, so any worker with gradeflow installed can run them.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path
from typing import cast

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.deployments.runner import RunnerDeployment
from prefect.exceptions import ObjectAlreadyExists
from prefect.schedules import Cron
from prefect.types.entrypoint import EntrypointType

from gradeflow.agents.service import trials_deployment
from gradeflow.engine import SANDBOX_LIMIT
from gradeflow.engine.credentials import public_ledger
from gradeflow.engine.trust import refuse_untrusted_local, trusted_environment
from gradeflow.service.automations import ensure_zombie_automation
from gradeflow.service.config import ServiceConfig
from gradeflow.service.flows import evaluate_request, grade_request
from gradeflow.service.params import EvaluateRequest
from gradeflow.service.review import review_grade
from gradeflow.service.serving import await_server, serve_until_stopped

__all__ = [
    "EVALUATE_DEPLOYMENT",
    "GRADE_DEPLOYMENT",
    "build_deployments",
    "deploy_to_pool",
    "ensure_sandbox_limit",
    "serve_deployments",
]

GRADE_DEPLOYMENT = "grade-request/grade-submission"
"""Full name (``flow/deployment``) of the deployment that grades one request."""
EVALUATE_DEPLOYMENT = "evaluate-request/evaluate-suite"
"""Full name of the scheduled suite evaluation."""
SERVER_WAIT_SECONDS = 60.0
"""How long ``serve`` and ``deploy`` wait for a Prefect server that is starting beside them."""


def build_deployments(config: ServiceConfig, work_pool: str | None = None) -> list[RunnerDeployment]:
    """The two deployments, with the schedule, default parameters and tags from ``config``."""
    grade = grade_request.to_deployment(
        name="grade-submission",
        description="Grade one submission (started by the webhook receiver or from the UI form).",
        tags=["gradeflow"],
        work_pool_name=work_pool,
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    nightly = EvaluateRequest(
        suite=config.suite,
        ledger=public_ledger(config.ledger),
        concurrency=config.concurrency,
        reports=config.reports,
        dask_address=config.dask_address,
    )
    evaluate = evaluate_request.to_deployment(
        name="evaluate-suite",
        description=f"Evaluate {config.suite} into the ledger on the schedule {config.schedule!r}.",
        schedules=[Cron(config.schedule, timezone=config.timezone)],
        parameters={"request": nightly.model_dump(mode="json")},
        tags=["gradeflow", "nightly"],
        work_pool_name=work_pool,
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    review = review_grade.to_deployment(
        name="ask-reviewer",
        description="Ask a person about one grade (started by a served grade that needs a review).",
        tags=["gradeflow", "review"],
        work_pool_name=work_pool,
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    deployments = [grade, evaluate, review, trials_deployment(work_pool)]
    assert all(isinstance(d, RunnerDeployment) for d in deployments)
    built = cast(list[RunnerDeployment], deployments)
    if config.trust_local_code:  # a worker's run learns the config's trust from its job's environment
        for served in built:
            served.job_variables = {**(served.job_variables or {}), "env": trusted_environment(True)}
    return built


def refuse_local_suite(config: ServiceConfig, what: str) -> None:
    """``SpecError`` when the scheduled suite grades a task in the local sandbox without the config's trust."""
    if Path(config.suite).is_file():
        from gradeflow.evaluation.suite import load_suite

        refuse_untrusted_local(config.trust_local_code, load_suite(config.suite).tasks.values(), what)


def ensure_sandbox_limit(slots: int) -> None:
    """Create (or resize) the ``gradeflow-sandbox`` global concurrency limit to ``slots`` slots."""
    with get_client(sync_client=True) as client:
        client.upsert_global_concurrency_limit_by_name(SANDBOX_LIMIT, slots)


def serve_deployments(
    config: ServiceConfig, limit: int | None = None, server_wait: float = SERVER_WAIT_SECONDS
) -> None:
    """Serve the deployments in this process until SIGTERM or Ctrl-C; ``limit`` bounds concurrent runs;
    ``server_wait``: seconds to wait for a Prefect server that is starting."""
    refuse_local_suite(config, "serve")
    await_server(server_wait)
    os.environ.update(trusted_environment(config.trust_local_code))
    ensure_sandbox_limit(config.sandbox_slots)
    ensure_zombie_automation(config.crash_after)
    serve_until_stopped(build_deployments(config), limit=limit)


def _ensure_process_pool(name: str) -> None:
    from prefect.workers.process import ProcessWorker

    template = ProcessWorker.get_default_base_job_template()
    with get_client(sync_client=True) as client, suppress(ObjectAlreadyExists):
        client.create_work_pool(WorkPoolCreate(name=name, type="process", base_job_template=template))


def deploy_to_pool(config: ServiceConfig, pool: str, server_wait: float = SERVER_WAIT_SECONDS) -> list[str]:
    """Register both deployments on the ``process`` work pool ``pool``; returns their ids (``server_wait``: as
    :func:`serve_deployments`)."""
    refuse_local_suite(config, "deploy")
    await_server(server_wait)
    _ensure_process_pool(pool)
    ensure_sandbox_limit(config.sandbox_slots)
    ensure_zombie_automation(config.crash_after)
    return [str(deployment.apply(work_pool_name=pool)) for deployment in build_deployments(config, pool)]
