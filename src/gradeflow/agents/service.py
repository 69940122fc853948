"""``gradeflow run`` as a service deployment: ``run-trials-request/agent-trials`` runs an agent's trials on a
worker (``gradeflow serve``, or ``gradeflow deploy --pool`` and ``prefect worker start``).

A run's parameters are one :class:`TrialsRequest` (the Prefect UI renders it as a form); the flow checks
the request as ``gradeflow run`` checks its arguments (a ``SpecError`` fails the run, nothing runs), then
runs the ``run-trials`` flow as its subflow into the ledger. Like the other deployments it refuses the
local sandbox unless the service config trusts every submission, and never carries a ledger password.
"""

from __future__ import annotations

from prefect import flow
from prefect.deployments.runner import RunnerDeployment
from prefect.types.entrypoint import EntrypointType
from pydantic import BaseModel, ConfigDict, Field, field_validator

from gradeflow.agents.config import TrialConfig
from gradeflow.agents.run import oracle_references, plan_trials, run_trials
from gradeflow.engine import SANDBOX_LIMIT
from gradeflow.engine.credentials import has_password, private_ledger
from gradeflow.engine.trust import check_request_sandbox
from gradeflow.evaluation.ledger import Ledger
from gradeflow.models.spec import SANDBOX_KINDS
from gradeflow.spec import load_task

__all__ = ["TRIALS_DEPLOYMENT", "TrialsRequest", "run_trials_request", "trials_deployment"]

TRIALS_DEPLOYMENT = "run-trials-request/agent-trials"
"""Full name (``flow/deployment``) of the deployment that runs an agent's trials."""


class TrialsRequest(BaseModel):
    """One ``gradeflow run`` call: the tasks, the agent and its configuration, the ledger."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: list[str] = Field(min_length=1)
    """Paths of ``task.yaml`` files as the worker sees them."""
    agent: str = Field(min_length=1)
    """A shell command run from the workspace, or ``oracle`` / ``nop``."""
    repeat: int = Field(default=1, ge=1, le=1000)
    model_id: str = "unknown"
    prompt_revision: str = "unknown"
    timeout: float = Field(default=1800.0, gt=0)
    """The agent's wall time in seconds."""
    concurrency: int = Field(default=1, ge=1, le=64)
    """Trials at once (threads), unless ``dask_address``."""
    sandbox: str | None = Field(default=None, pattern="^(" + "|".join(SANDBOX_KINDS) + ")$")
    profile: str | None = None
    agent_dir: str | None = None
    """A folder on the worker holding the agent's installation, shown read-only."""
    network: bool | None = None
    """The agent's network (``None``: each task's ``agent.network``)."""
    agent_env: list[str] = Field(default_factory=list)
    """Names of the worker's variables the agent receives (an API key), never their values."""
    ledger: str | None = None
    """Ledger database URL (never with a password: the worker's ``$GRADEFLOW_DATABASE_URL`` has it) or
    SQLite path; default ``$GRADEFLOW_DATABASE_URL`` or ``.gradeflow/ledger.db``."""
    dask_address: str | None = None

    @field_validator("ledger")
    @classmethod
    def _no_password(cls, value: str | None) -> str | None:
        if has_password(value):
            raise ValueError("a ledger URL with a password would be readable through the Prefect API: give it without")
        return value

    def config(self) -> TrialConfig:
        return TrialConfig(
            agent=self.agent,
            model_id=self.model_id,
            prompt_revision=self.prompt_revision,
            timeout=self.timeout,
            sandbox=self.sandbox,
            agent_dir=self.agent_dir,
            network=self.network,
            passed_env=tuple(self.agent_env),
        )


@flow(name="run-trials-request", flow_run_name="trials-{request.model_id}", persist_result=False)
def run_trials_request(request: TrialsRequest) -> dict[str, int]:
    """Run the request's trials into the ledger; the counts of trials run, skipped, crashed and inconclusive."""
    specs = [load_task(path) for path in request.tasks]
    for spec in specs:
        check_request_sandbox(spec, request.sandbox)
    references = oracle_references(specs, request.tasks, request.agent)
    plan = plan_trials(specs, request.config(), request.repeat, request.profile, references)
    ledger = Ledger(private_ledger(request.ledger))
    try:
        done = run_trials(
            plan,
            ledger,
            concurrency=request.concurrency,
            show_progress=False,
            dask_address=request.dask_address,
            slot=SANDBOX_LIMIT,
        )
    finally:
        ledger.close()
    inconclusive = sum(r.status == "inconclusive" for r in done.records)
    return {"ran": done.ran, "skipped": done.skipped, "failed": len(done.failed), "inconclusive": inconclusive}


def trials_deployment(work_pool: str | None = None) -> RunnerDeployment:
    """The ``agent-trials`` deployment (no schedule: each run names its request)."""
    deployment = run_trials_request.to_deployment(
        name="agent-trials",
        description="Run an agent's trials on tasks in their sandboxes, graded and recorded (gradeflow run).",
        tags=["gradeflow", "trials"],
        work_pool_name=work_pool,
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    assert isinstance(deployment, RunnerDeployment)
    return deployment
