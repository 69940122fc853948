"""The agent's sandbox: the task's kind and limits, the agent's own network, its installation read-only.

The isolated sandbox shows the agent the workspace, the system and interpreter folders, the folder
the issue file is in and ``agent_dir`` (read-only), and nothing else of the host: never the task
folder, the hidden tests, the reference, the task spec, gradeflow's home or the ledger. An agent given
the network gets a network namespace of its own whose way out is slirp4netns, which never reaches the
host's loopback (:mod:`gradeflow.sandbox._uplink`); without slirp4netns its sandbox cannot start. Docker
copies the workspace into a container of the task's image. Variables are the sandbox's own plus the ones
listed in :mod:`gradeflow.agents.config`; nothing of the caller's environment leaks in unless named.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from gradeflow.agents.config import ISSUE_VARIABLE, SUMMARY_FILE, SUMMARY_VARIABLE, PlannedTrial
from gradeflow.errors import SpecError
from gradeflow.models import TaskSpec
from gradeflow.sandbox.base import Sandbox, SandboxFactory
from gradeflow.sandbox.factory import sandbox_factory
from gradeflow.sandbox.isolated import IsolatedSandboxFactory
from gradeflow.sandbox.local import LocalSandboxFactory

__all__ = ["agent_command", "agent_env", "agent_factory", "issue_text"]

ISSUE_NAME = "ISSUE.md"


def agent_factory(task: TaskSpec, kind: str | None, *, network: bool, agent_dir: str | None = None) -> SandboxFactory:
    """The factory of the agent's sandbox; ``SpecError`` for an unknown kind or a missing ``agent_dir``."""
    kind = kind or task.environment.sandbox
    if agent_dir is not None and not Path(agent_dir).is_dir():
        raise SpecError(f"--agent-dir: {agent_dir} is not a folder")
    if kind == "isolated":
        read_only = (agent_dir,) if agent_dir else ()
        return IsolatedSandboxFactory(task.environment, read_only=read_only, network=network).show(task)
    if agent_dir is not None:
        raise SpecError(f"--agent-dir: only the isolated sandbox shows a host folder (not {kind}); use an image")
    if kind == "docker":
        return sandbox_factory(task.environment.model_copy(update={"sandbox": "docker", "network": network}))
    if kind == "local":
        return LocalSandboxFactory()
    raise SpecError(f"--sandbox: unknown sandbox {kind!r}")


def issue_text(task: TaskSpec) -> str:
    """The task's issue text (``issue`` or ``issue_file``); ``SpecError`` when the file cannot be read."""
    if task.issue_file is None:
        return task.issue or ""
    try:
        return Path(task.issue_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"issue_file: cannot read {task.issue_file}: {exc}") from None


def agent_env(planned: PlannedTrial, sandbox: Sandbox, issue_folder: str) -> dict[str, str]:
    """The variables the agent's command gets (beside the sandbox's own ``HOME``, ``PATH``, ``TMPDIR``)."""
    passed = {name: os.environ[name] for name in planned.config.passed_env if name in os.environ}
    return {
        **planned.task.candidate_env(),
        **passed,
        ISSUE_VARIABLE: f"{issue_folder}/{ISSUE_NAME}",
        SUMMARY_VARIABLE: sandbox.output_path(SUMMARY_FILE),
        "GRADEFLOW_TASK_ID": planned.task.task_id,
        "GRADEFLOW_MODEL_ID": planned.config.model_id,
        "GRADEFLOW_PROMPT_REVISION": planned.config.prompt_revision,
        "GRADEFLOW_TRIAL": planned.run_id,
    }


def agent_command(command: str, agent_dir: str | None) -> str:
    """``command``, with the agent's installation (its ``bin`` and itself) first on ``PATH`` when given."""
    if agent_dir is None:
        return command
    folder = str(Path(agent_dir).resolve())
    return f'export PATH={shlex.quote(folder + "/bin")}:{shlex.quote(folder)}:"$PATH"\n{command}'
