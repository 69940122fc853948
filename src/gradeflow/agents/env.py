"""``RepoEnv``: the grader as the reward of an environment an agent acts in, with Gymnasium's API shape.

``reset()`` makes a fresh scrubbed checkout and opens the agent's sandbox over it (the sandbox
``gradeflow run`` gives an agent: whatever an action reaches, an agent's command would reach);
``step(action)`` runs one action there. ``Submit()`` grades the workspace through ``grade-submission``
(as ``gradeflow grade --workspace``) and ends the episode: the reward is the score, or the dimension
named by ``reward``. A workspace that could not be graded (the environment's fault: a sandbox that
cannot start, a broken base) has no reward at all, never a fake zero: ``step`` raises
:class:`InconclusiveGrade` carrying the inconclusive ``GradeResult``, and the episode is over (as an
environment's own failure ends a Gymnasium episode with an exception). Every other step rewards 0.0.
Past ``max_steps`` steps or ``time_limit`` seconds the episode is truncated.
"""

from __future__ import annotations

import shlex
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from gradeflow.agents.config import ISSUE_VARIABLE
from gradeflow.agents.sandboxes import ISSUE_NAME, agent_factory, issue_text
from gradeflow.agents.trial import bring_back, oversize_result
from gradeflow.engine.local_server import use_local_server
from gradeflow.errors import InfraError, SpecError, SubmissionTooLarge, prefect_server_errors
from gradeflow.flows.grade import grade_submission
from gradeflow.flows.session import flow_runs_without_heartbeat, open_session
from gradeflow.graders.withheld import withhold_hidden_timings
from gradeflow.logs import quiet_prefect
from gradeflow.models import GradeResult, Submission, TaskSpec
from gradeflow.sandbox.base import CommandResult, Sandbox, remove_tree
from gradeflow.spec import load_task
from gradeflow.tasks.artifacts import deferred_artifacts, flush_artifacts
from gradeflow.tasks.clients import shared_client_context
from gradeflow.tasks.repo import resolve_base, write_agent_checkout

__all__ = ["Action", "InconclusiveGrade", "Observation", "Read", "RepoEnv", "Run", "Submit", "Write"]


class InconclusiveGrade(InfraError):
    """``Submit`` could not grade the workspace (the environment failed, not the agent): there is no reward.

    ``result`` is the inconclusive :class:`GradeResult` (its reason codes and messages say why);
    ``reason_code`` is its first code. The episode is over: ``reset()`` starts another, ``close()`` ends.
    """

    def __init__(self, result: GradeResult) -> None:
        codes = ", ".join(result.reason_codes) or "no reason code"
        super().__init__(
            f"task {result.task_id}: the workspace could not be graded ({codes}); no reward",
            reason_code=result.reason_codes[0] if result.reason_codes else None,
        )
        self.result = result


@dataclass(frozen=True)
class Run:
    """Run a shell command from the workspace."""

    command: str
    timeout: float = 120.0


@dataclass(frozen=True)
class Read:
    """Read a file (a path relative to the workspace)."""

    path: str


@dataclass(frozen=True)
class Write:
    """Write ``text`` to a file (relative to the workspace), making its folders."""

    path: str
    text: str


@dataclass(frozen=True)
class Submit:
    """Grade the workspace as it is; ends the episode."""


Action = Run | Read | Write | Submit


class Observation(BaseModel):
    """What the agent sees after a reset or a step."""

    output: str = ""
    """A command's stdout (a file's text for ``Read``)."""
    error: str = ""
    """A command's stderr."""
    exit_code: int | None = None
    """``None`` when the command ran past its timeout."""
    issue: str = ""
    """The task's issue text (on reset)."""
    files: list[str] = Field(default_factory=list)
    """The workspace's files (on reset), relative, sorted."""


def _reward_time(brought: float, graded: float, result: GradeResult) -> dict[str, float]:
    """Where a reward's seconds went: handing the workspace back, each step of the grade (its ``timings``) and
    the engine (the grade's flow and task runs: the rest). A task that withholds its hidden tests' details has
    no tests step in ``timings``, and then no engine figure either (it would be the tests step's time)."""
    spent = {"bring_back": round(brought, 3), **{name: round(s, 3) for name, s in result.timings.items()}}
    if "tests" in result.timings:
        spent["engine"] = round(max(graded - sum(result.timings.values()), 0.0), 3)
    return spent


class RepoEnv:
    """One task as an environment: ``reset``, ``step``, ``close`` (Gymnasium's signatures, no dependency on it)."""

    def __init__(
        self,
        task: TaskSpec | str | Path,
        *,
        sandbox: str | None = None,
        keep_workspace: bool = False,
        profile: str | None = None,
        reward: str = "score",
        max_steps: int = 100,
        time_limit: float = 3600.0,
        agent_dir: str | None = None,
        network: bool | None = None,
    ) -> None:
        """Check the task and sandbox now (``SpecError``); ``reward``: ``score`` or a dimension of the profile.

        Grades run, as ``gradeflow.grade()``'s do, on the server ``PREFECT_API_URL`` names, else on gradeflow's
        local server (started once, reused), with Prefect's console output kept to warnings.
        """
        self.task = task if isinstance(task, TaskSpec) else load_task(task)
        self._session = open_session(self.task, sandbox, profile)
        if reward != "score" and reward not in self._session.profile.dimensions:
            raise SpecError(f"reward: {reward!r} is neither 'score' nor a dimension of profile {profile!r}")
        quiet_prefect()
        with prefect_server_errors():
            use_local_server()
        net = self.task.agent.network if network is None else network
        self._factory = agent_factory(self.task, sandbox, network=net, agent_dir=agent_dir)
        self.reward_name, self.keep_workspace = reward, keep_workspace
        self.max_steps, self.time_limit = max_steps, time_limit
        self.workspace: Path | None = None
        self._folder: Path | None = None
        self._sandbox: Sandbox | None = None
        self._env: dict[str, str] = {}
        self._steps, self._started, self._over = 0, 0.0, True

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """A fresh checkout in a fresh sandbox; the observation holds the issue and the file list."""
        del seed, options  # the checkout is deterministic
        self._end_episode()
        self._folder = Path(tempfile.mkdtemp(prefix="gradeflow-env-"))
        self.workspace = self._folder / "repo"
        write_agent_checkout(resolve_base(self.task), self.workspace)
        self._sandbox = self._factory.open(self.workspace)
        issue = issue_text(self.task)
        folder = self._sandbox.install_harness({ISSUE_NAME: issue.encode()})
        self._env = {**self.task.candidate_env(), ISSUE_VARIABLE: f"{folder}/{ISSUE_NAME}"}
        self._steps, self._started, self._over = 0, time.monotonic(), False
        files = sorted(p.relative_to(self.workspace).as_posix() for p in self.workspace.rglob("*") if p.is_file())
        observation = Observation(issue=issue, files=[f for f in files if not f.startswith(".git/")])
        return observation, {"task_id": self.task.task_id, "workspace": str(self.workspace)}

    def step(self, action: Action) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Run ``action``; ``(observation, reward, terminated, truncated, info)``."""
        if self._over or self._sandbox is None:
            raise RuntimeError("the episode is over: call reset()")
        self._steps += 1
        if isinstance(action, Submit):
            return self._submit()
        done = self._command(action)
        observation = Observation(output=done.stdout, error=done.stderr, exit_code=done.exit_code)
        truncated = self._steps >= self.max_steps or self._remaining() <= 0
        self._over = truncated
        return observation, 0.0, False, truncated, {"steps": self._steps, "timed_out": done.timed_out}

    def _remaining(self) -> float:
        return self.time_limit - (time.monotonic() - self._started)

    def _command(self, action: Run | Read | Write) -> CommandResult:
        assert self._sandbox is not None
        stdin: bytes | None = None
        timeout = max(1.0, self._remaining())
        if isinstance(action, Run):
            command, timeout = action.command, min(action.timeout, timeout)
        elif isinstance(action, Read):
            command = f"cat -- {shlex.quote(action.path)}"
        else:
            path = shlex.quote(action.path)
            command, stdin = f'mkdir -p -- "$(dirname -- {path})" && cat > {path}', action.text.encode()
        return self._sandbox.run(command, env=self._env, timeout=timeout, stdin=stdin)

    def _submit(self) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        assert self._sandbox is not None and self.workspace is not None
        self._over = True
        started, spent = time.perf_counter(), dict[str, float]()
        try:
            bring_back(self._sandbox, self.workspace)
        except SubmissionTooLarge as exc:
            result = oversize_result(self.task, "episode", self._session.profile, str(exc))
        else:
            brought = time.perf_counter()
            result = self._grade(Submission(submission_id="episode", workspace=self.workspace))
            spent = _reward_time(brought - started, time.perf_counter() - brought, result)
        if result.status == "inconclusive":
            raise InconclusiveGrade(result)
        info: dict[str, Any] = {"result": result}
        if spent:
            info["time"] = spent
        return Observation(output=result.summary()), self._reward(result), True, False, info

    def _grade(self, submission: Submission) -> GradeResult:
        """What ``gradeflow grade --workspace`` does with an opened session."""
        session = self._session
        # The grade's artifacts are posted after the reward is returned (flushed by close and at exit).
        with flow_runs_without_heartbeat(), deferred_artifacts(), shared_client_context():
            state = grade_submission(
                session.task_spec, submission, session.factory, session.profile, session.base, return_state=True
            )
        result = state.result()
        assert isinstance(result, GradeResult)
        return withhold_hidden_timings(session.task_spec, result)

    def _reward(self, result: GradeResult) -> float:
        value = result.score if self.reward_name == "score" else result.dimensions.get(self.reward_name)
        if value is None:
            raise SpecError(
                f"reward: {self.reward_name!r} was not measured for task {result.task_id} (none of its graders "
                "ran for this grade): no reward; name 'score' or a dimension the task measures"
            )
        return float(value)

    def close(self) -> None:
        """End the sandbox; remove the workspace unless ``keep_workspace``; wait until the rewards' artifacts
        are posted to Prefect. Idempotent."""
        self._end_episode()
        flush_artifacts()

    def _end_episode(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        if self._folder is not None and not self.keep_workspace:
            remove_tree(self._folder)
            self.workspace = None
        self._folder, self._over = None, True

    def __enter__(self) -> RepoEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
