"""What a trial is: the agent's configuration, the variables it is given, its summary file, and its keys.

An agent is a shell command run from the workspace (the task's scrubbed checkout) with these variables:

- ``GRADEFLOW_ISSUE_FILE``: the path of a read-only file holding the task's issue text;
- ``GRADEFLOW_AGENT_SUMMARY``: where the agent may write its summary, a small JSON object
  (:class:`AgentSummary`: ``tool_calls``, ``input_tokens``, ``output_tokens``, each optional);
- ``GRADEFLOW_TASK_ID``, ``GRADEFLOW_MODEL_ID``, ``GRADEFLOW_PROMPT_REVISION``, ``GRADEFLOW_TRIAL``.

Two agents are built in: ``oracle`` applies the task's reference patch (``reference.diff`` beside the
task spec) with the grader's own git to the host's copy of the workspace, before its sandbox runs
``true`` (so the reference never enters a sandbox and an image needs no git), and ``nop`` changes nothing.
Pure: no file system, no Prefect.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gradeflow.config import gradeflow_version
from gradeflow.evaluation.suite import content_key
from gradeflow.models import TaskSpec

__all__ = [
    "BUILTIN_AGENTS",
    "ISSUE_VARIABLE",
    "SUMMARY_MAX_BYTES",
    "SUMMARY_VARIABLE",
    "AgentSummary",
    "PlannedTrial",
    "TrialConfig",
    "parse_summary",
    "trial_key",
]

ISSUE_VARIABLE = "GRADEFLOW_ISSUE_FILE"
SUMMARY_VARIABLE = "GRADEFLOW_AGENT_SUMMARY"
SUMMARY_FILE = "agent-summary.json"
SUMMARY_MAX_BYTES = 64 * 1024
"""A summary file larger than this is ignored (it is a few counts, not a transcript)."""
BUILTIN_AGENTS = ("oracle", "nop")


class TrialConfig(BaseModel):
    """One configuration of ``gradeflow run``: the agent, how it is identified, and its sandbox."""

    model_config = ConfigDict(frozen=True)

    agent: str
    """A shell command, or ``oracle`` / ``nop``."""
    model_id: str = "unknown"
    prompt_revision: str = "unknown"
    timeout: float = Field(default=1800.0, gt=0)
    """The agent's wall-time budget in seconds."""
    sandbox: str | None = None
    """The sandbox kind (``None``: the task's ``environment.sandbox``)."""
    agent_dir: str | None = None
    """A host folder holding the agent's installation, shown read-only (its ``bin`` first on ``PATH``)."""
    network: bool | None = None
    """The agent's network (``None``: the task's ``agent.network``); the tests never get it."""
    passed_env: tuple[str, ...] = ()
    """Names of host variables the agent receives (an API key); their values are redacted from its output."""

    @property
    def builtin(self) -> bool:
        return self.agent in BUILTIN_AGENTS

    @property
    def agent_digest(self) -> str:
        """sha256 of the agent command, 16 hex digits: the ledger's name for the agent."""
        return hashlib.sha256(self.agent.encode()).hexdigest()[:16]

    def command(self) -> str:
        """The shell command the sandbox runs."""
        if self.builtin:
            return "true"
        return self.agent


class AgentSummary(BaseModel):
    """The summary file an agent may leave at ``$GRADEFLOW_AGENT_SUMMARY`` (every field optional)."""

    model_config = ConfigDict(extra="ignore")

    tool_calls: int | None = Field(default=None, ge=0)
    """Tool calls the agent made."""
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)


def parse_summary(data: bytes | None) -> AgentSummary:
    """The summary in ``data``; an empty one when absent, too large, not JSON or not the right shape."""
    if not data or len(data) > SUMMARY_MAX_BYTES:
        return AgentSummary()
    try:
        return AgentSummary.model_validate(json.loads(data))
    except (ValueError, ValidationError):
        return AgentSummary()


class PlannedTrial(BaseModel):
    """One trial to run: the task spec, the configuration, and the keys of its ledger record."""

    model_config = ConfigDict(frozen=True)

    task: TaskSpec
    config: TrialConfig
    index: int
    """1-based: the trial's number within its configuration and task."""
    content_key: str
    profile: str | None = None
    reference: str | None = Field(default=None, exclude=True, repr=False)
    """The reference patch's text, for the oracle only; never in the JSON Prefect stores of a run's parameters
    (the flow and its tasks receive the object itself, a Dask worker its pickle)."""
    repository_revision: str = ""

    @property
    def run_id(self) -> str:
        return f"trial-{self.index}"

    @property
    def key(self) -> tuple[str, str]:
        return self.content_key, self.run_id

    @property
    def label(self) -> str:
        return f"{self.task.task_id} {self.config.model_id} {self.run_id}"

    @property
    def network(self) -> bool:
        return self.task.agent.network if self.config.network is None else self.config.network


def trial_key(task: TaskSpec, config: TrialConfig, profile: str | None) -> str:
    """The content key of a configuration's trials on ``task``: a resumed run skips the trials recorded under it.

    Like a suite's content keys (task spec hash, profile, gradeflow version) with the agent's configuration
    standing in for the patch, which is not known before the agent runs.
    """
    network = task.agent.network if config.network is None else config.network
    agent = json.dumps(
        [config.agent_digest, config.model_id, config.prompt_revision, config.timeout, network],
        sort_keys=True,
    )
    return content_key(task, hashlib.sha256(f"trial\0{agent}\0{gradeflow_version()}".encode()).hexdigest(), profile)
