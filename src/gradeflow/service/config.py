"""The service config file: nightly schedule, the suite it evaluates, sandbox slots, GitHub routing,
and what the webhook accepts (profiles a payload may name, how long a body may take).

Found at ``--config PATH``, else ``$GRADEFLOW_CONFIG``, else ``gradeflow.yaml`` in the current folder
when it exists; otherwise every default applies. Relative paths resolve against the file's folder.
An unknown key or a bad value is a ``SpecError`` naming the file and the key.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from gradeflow.spec import load_model

__all__ = ["DEFAULT_SCHEDULE", "GitHubConfig", "ServiceConfig", "WebhookConfig", "load_service_config"]

DEFAULT_SCHEDULE = "0 2 * * *"


class GitHubConfig(BaseModel):
    """How ``/hooks/github`` turns a pull request into a grade."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repos: dict[str, str] = Field(default_factory=dict)
    """``owner/name`` → ``task_id``: the task spec a pull request of that repository is graded against."""
    fetch_diffs: bool = True
    """Fetch the pull request's diff from its ``diff_url``; off where the network is closed."""
    token_env: str = "GITHUB_TOKEN"
    """Environment variable holding a token for private repositories (sent only to the diff URL)."""


class WebhookConfig(BaseModel):
    """What ``gradeflow webhook`` accepts beyond the signature."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    profiles: list[str] = Field(default_factory=list)
    """Profile YAML files a payload may name (by the profile's ``name``) besides the shipped profiles;
    relative to the config file. A payload cannot name a file path."""
    body_timeout: float = Field(default=10.0, gt=0, le=300)
    """Seconds a request's headers, and then its body, may take to arrive before the connection is dropped."""


class ServiceConfig(BaseModel):
    """Settings of ``gradeflow serve``, ``deploy`` and ``webhook``; every field has a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schedule: str = DEFAULT_SCHEDULE
    """Cron expression of the ``evaluate-suite`` deployment (default: nightly at 02:00)."""
    timezone: str = "UTC"
    suite: str = "suite.yaml"
    """The suite the scheduled evaluation grades."""
    ledger: str | None = None
    """Ledger URL of the scheduled evaluation; default ``$GRADEFLOW_DATABASE_URL`` or ``.gradeflow/ledger.db``."""
    reports: str = ".gradeflow/reports"
    """Folder of the scheduled evaluation's HTML reports (linked from its flow run)."""
    concurrency: int = Field(default=2, ge=1, le=64)
    """Submissions graded at once inside one evaluation."""
    dask_address: str | None = None
    """A Dask scheduler the scheduled evaluation grades on (``prefect-dask``); default: threads in the run."""
    sandbox_slots: int = Field(default=4, ge=1)
    """Size of the ``gradeflow-sandbox`` global concurrency limit: grades running at once, all workers together."""
    crash_after: int = Field(default=90, ge=45)
    """Seconds without a heartbeat after which a running grade is marked ``Crashed`` (heartbeats every 30 s)."""
    github: GitHubConfig = Field(default_factory=GitHubConfig)
    webhook: WebhookConfig = Field(default_factory=WebhookConfig)
    trust_local_code: bool = False
    """Allow tasks and requests that grade in the local sandbox (the submission's code runs with the
    service's rights). Off: ``serve``, ``deploy`` and ``webhook`` refuse such tasks, and served runs refuse
    such requests."""


def _config_path(path: str | Path | None) -> Path | None:
    if path is not None:
        return Path(path)
    if os.environ.get("GRADEFLOW_CONFIG"):
        return Path(os.environ["GRADEFLOW_CONFIG"])
    default = Path("gradeflow.yaml")
    return default if default.is_file() else None


def load_service_config(path: str | Path | None = None) -> ServiceConfig:
    """The service config (defaults when there is no file); ``SpecError`` on a bad file."""
    file = _config_path(path)
    if file is None:
        return ServiceConfig(suite=str(Path("suite.yaml").resolve()), reports=str(Path(".gradeflow/reports").resolve()))
    config = load_model(file, ServiceConfig, "service config", allow_empty=True)
    folder = file.resolve().parent
    profiles = [str((folder / profile).resolve()) for profile in config.webhook.profiles]
    return config.model_copy(
        update={
            "suite": str((folder / config.suite).resolve()),
            "reports": str((folder / config.reports).resolve()),
            "webhook": config.webhook.model_copy(update={"profiles": profiles}),
        }
    )
