"""One trial's steps outside Prefect: the fresh checkout, the agent's run in its sandbox, the grade's codes.

A sandbox that cannot start (``SandboxUnavailable``) is an :class:`AgentRun` with ``unavailable`` set:
the trial is inconclusive. What the agent left in a sandbox working on a copy (docker) comes back to the host
counted as it is copied: past the checkout's limits the copy stops, ``oversize`` says why, and the trial is
graded 0 as ``submission-too-large`` (a sparse file counts by its apparent size, as in ``gradeflow grade``).
An agent past its budget or exiting non-zero is graded on what it left
with ``agent-timeout`` / ``agent-failed`` added to the result's reason codes.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from gradeflow.agents.config import SUMMARY_FILE, SUMMARY_MAX_BYTES, AgentSummary, PlannedTrial, parse_summary
from gradeflow.agents.sandboxes import ISSUE_NAME, agent_command, agent_env, agent_factory, issue_text
from gradeflow.errors import SandboxUnavailable, SubmissionTooLarge
from gradeflow.graders.verdict import inconclusive_result, refused_result
from gradeflow.models import GradeResult, TaskSpec
from gradeflow.models.spec import patch_bytes
from gradeflow.profiles import Profile
from gradeflow.sandbox.base import CommandResult, OutputTooLarge, Sandbox, replace_tree
from gradeflow.tasks.repo import resolve_base, write_agent_checkout
from gradeflow.tasks.snapshot import MAX_CHECKOUT_BYTES, MAX_CHECKOUT_FILES

__all__ = [
    "AgentRun",
    "agent_codes",
    "bring_back",
    "make_checkout",
    "oversize_result",
    "run_agent",
    "unavailable_result",
    "with_agent_codes",
]


class AgentRun(BaseModel):
    """What the agent did: its status, duration and summary, and its output (for the artifact only)."""

    exit_code: int | None = None
    """``None`` when stopped at the timeout or never started."""
    timed_out: bool = False
    seconds: float = 0.0
    summary: AgentSummary = Field(default_factory=AgentSummary)
    unavailable: str | None = None
    """Why the agent's sandbox could not start (the trial is then inconclusive)."""
    oversize: str | None = None
    """Why what the agent left could not be brought back: over the checkout's limits (graded 0)."""
    stdout: str = ""
    stderr: str = ""


def make_checkout(planned: PlannedTrial, folder: Path) -> Path:
    """The scrubbed starting tree ``gradeflow checkout`` makes, in ``folder/repo``."""
    workspace = folder / "repo"
    write_agent_checkout(resolve_base(planned.task), workspace)
    return workspace


def run_agent(planned: PlannedTrial, workspace: Path) -> AgentRun:
    """Run the agent's command once from ``workspace`` in a fresh sandbox; the workspace keeps what it left."""
    config = planned.config
    factory = agent_factory(planned.task, config.sandbox, network=planned.network, agent_dir=config.agent_dir)
    started = time.perf_counter()
    refused = _apply_reference(planned, workspace)
    if refused is not None:
        return _agent_run(refused, AgentSummary())
    try:
        with factory, factory.open(workspace) as sandbox:  # the factory holds the task's root until the end
            folder = sandbox.install_harness({ISSUE_NAME: issue_text(planned.task).encode()})
            done = sandbox.run(
                agent_command(config.command(), config.agent_dir),
                env=agent_env(planned, sandbox, folder),
                timeout=config.timeout,
            )
            summary = parse_summary(_summary_bytes(sandbox))
            bring_back(sandbox, workspace)
    except SandboxUnavailable as exc:
        return AgentRun(unavailable=str(exc), seconds=round(time.perf_counter() - started, 4))
    except SubmissionTooLarge as exc:
        return _agent_run(done, summary).model_copy(update={"oversize": str(exc)})
    return _agent_run(done, summary)


def _apply_reference(planned: PlannedTrial, workspace: Path) -> CommandResult | None:
    """The oracle's edit, by the grader's git on the host: its failure as a command's, else ``None``."""
    if planned.config.agent != "oracle" or planned.reference is None:
        return None
    command = ["git", "apply", "--whitespace=nowarn", "-"]
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=workspace, input=patch_bytes(planned.reference), capture_output=True, check=False
    )
    if done.returncode == 0:
        return None
    return CommandResult(
        command=" ".join(command),
        exit_code=done.returncode,
        stderr=done.stderr.decode(errors="replace"),
        duration=time.perf_counter() - started,
    )


def _agent_run(done: CommandResult, summary: AgentSummary) -> AgentRun:
    return AgentRun(
        exit_code=None if done.timed_out else done.exit_code,
        timed_out=done.timed_out,
        seconds=round(done.duration, 4),
        summary=summary,
        stdout=done.stdout,
        stderr=done.stderr,
    )


def _summary_bytes(sandbox: Sandbox) -> bytes | None:
    try:
        found = sandbox.read_output(SUMMARY_FILE, SUMMARY_MAX_BYTES)
    except (OutputTooLarge, OSError):
        return None
    return found[0] if found else None


EXPORT_LIMIT = MAX_CHECKOUT_BYTES + MAX_CHECKOUT_FILES * 5 * 1024
"""Bytes the archive of an agent's workspace may take: the checkout's limit in all, and room for a tar's
headers (and long names') for as many files as a checkout may hold. More is a tree over the limits."""


def bring_back(sandbox: Sandbox, workspace: Path) -> None:
    """A sandbox working on a copy (docker) hands its workspace back to the host folder.

    ``SubmissionTooLarge`` when the copy passes :data:`EXPORT_LIMIT`; the host folder is then left as it was."""
    if Path(sandbox.workspace) == workspace:
        return
    with tempfile.TemporaryDirectory(prefix="gradeflow-trial-export-") as scratch:
        archive = Path(scratch) / "workspace.tar"
        try:
            sandbox.export_workspace(archive, max_bytes=EXPORT_LIMIT)
        except OutputTooLarge as exc:
            raise SubmissionTooLarge(
                f"what the agent left is over the checkout's limits ({MAX_CHECKOUT_BYTES} bytes, "
                f"{MAX_CHECKOUT_FILES} files): {exc}"
            ) from None
        replace_tree(workspace, archive)


def agent_codes(run: AgentRun) -> list[str]:
    """``agent-timeout`` or ``agent-failed`` when the agent did not end well, else nothing."""
    if run.timed_out:
        return ["agent-timeout"]
    if run.exit_code not in (0, None):
        return ["agent-failed"]
    return []


def with_agent_codes(result: GradeResult, run: AgentRun) -> GradeResult:
    """``result`` with the agent's codes after its own (graded on what the agent left)."""
    codes = [c for c in agent_codes(run) if c not in result.reason_codes]
    return result.model_copy(update={"reason_codes": [*result.reason_codes, *codes]}) if codes else result


def oversize_result(task: TaskSpec, submission_id: str, profile: Profile, detail: str) -> GradeResult:
    """The grade of what an agent left when it is more than a checkout may hold (a trial's tree, an episode's):
    0, ``submission-too-large``, as ``gradeflow grade --workspace`` grades an oversized tree."""
    message = f"{SubmissionTooLarge.reason_code}: {detail}"
    return refused_result(task, submission_id, SubmissionTooLarge.reason_code, message, profile, patch="")


def unavailable_result(planned: PlannedTrial, submission_id: str, profile: str, run: AgentRun) -> GradeResult:
    """The inconclusive grade of a trial whose sandbox never started."""
    message = f"the agent's sandbox could not start: {run.unavailable}"
    return inconclusive_result(planned.task, submission_id, "sandbox-unavailable", message, profile)
