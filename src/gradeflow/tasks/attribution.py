"""Task: whose fault a failure in a candidate's step is, the candidate's or the environment's.

Once the pristine baseline is healthy, a step that copies or runs the candidate's tree can still fail
the way a broken environment does: the sandbox cannot run a command or clean up after one
(``InfraError``, after the task's retries), or copying or restoring the tree fails (``OSError``).
Before the candidate is blamed, a fresh sandbox is probed (:meth:`SandboxFactory.probe`: the engine
answers, a fresh sandbox runs ``true``, the disks have room):

- the probe passes: the candidate broke its own sandbox. The step's component is a graded 0 with
  reason ``candidate-broke-sandbox`` and one message naming what broke (no traceback, no file
  contents), and the grade goes on;
- the probe fails: the environment is at fault and the grade is inconclusive, as before.

A broken base is never the candidate's: ``BaselineBroken`` and the ``baseline-broken`` and
``setup-failed`` codes are passed through untouched.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.errors import BaselineBroken, InfraError, SandboxUnavailable
from gradeflow.models import GradeComponent, Role, TaskSpec
from gradeflow.sandbox.base import SandboxFactory

__all__ = ["CANDIDATE_BROKE_SANDBOX", "attributable", "attributed", "broken_component", "probe_sandbox"]

CANDIDATE_BROKE_SANDBOX = "candidate-broke-sandbox"
_BASE_CODES = {"baseline-broken", "setup-failed"}
_TEMP_FOLDER = re.compile(r"/\S*?/tmp[a-z0-9_]{8}/(?:repo/)?")
"""A workspace's or sandbox's temporary folder (``tempfile.mkdtemp``'s own names) in a message."""
_MAX_DETAIL = 300

T = TypeVar("T")


def attributable(exc: BaseException) -> bool:
    """Whether ``exc`` looks like an environment failure the candidate may have caused."""
    if isinstance(exc, BaselineBroken):
        return False
    if isinstance(exc, InfraError):
        return exc.reason_code not in _BASE_CODES
    return isinstance(exc, OSError)


@task(name="probe-sandbox", cache_policy=NO_CACHE)
def probe_sandbox(sandboxes: SandboxFactory) -> str | None:
    """``None`` when a fresh sandbox works now, else why it does not."""
    try:
        sandboxes.probe()
    except (InfraError, OSError) as exc:
        return _one_line(exc)
    return None


def _one_line(exc: BaseException) -> str:
    """The error's type and message on one bounded line, the host's temporary folders cut from paths."""
    detail = _TEMP_FOLDER.sub("", " ".join(str(exc).split()))
    if len(detail) > _MAX_DETAIL:
        detail = detail[: _MAX_DETAIL - 1] + "…"
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _shape(task_spec: TaskSpec, step: str) -> tuple[Role, str]:
    """The role and dimension the step's grader gives its component (see each grader's rule)."""
    if step == "tests":
        return ("objective" if task_spec.tests.fail_to_pass else "gate"), "behavior"
    if step == "quality":
        return ("objective" if task_spec.type == "refactor" else "gate"), "behavior"
    if step == "test_evidence":
        return "objective", "test_evidence"
    return "objective", "behavior"


def broken_component(task_spec: TaskSpec, step: str, exc: BaseException) -> GradeComponent:
    """The step's component when the candidate broke its sandbox: a graded 0 naming what broke."""
    role, dimension = _shape(task_spec, step)
    message = (
        f"{step}: the candidate's run broke its sandbox ({_one_line(exc)}); "
        "a fresh sandbox works, so the submission is at fault"
    )
    return GradeComponent(
        name=step,
        role=role,
        dimension=dimension,
        score=0.0,
        passed=False,
        messages=[message],
        reason_codes=[CANDIDATE_BROKE_SANDBOX],
    )


def attributed(
    task_spec: TaskSpec,
    step: str,
    sandboxes: SandboxFactory,
    call: Callable[[], T],
    broken: Callable[[GradeComponent], T],
) -> T:
    """``call()``; an attributable failure becomes ``broken(component)`` when a fresh sandbox works.

    When the probe fails too, an ``InfraError`` is raised (the original's reason code, or
    ``sandbox-unavailable`` for an ``OSError``) naming both failures: the grade is inconclusive.
    """
    try:
        return call()
    except (InfraError, OSError) as exc:
        if not attributable(exc):
            raise
        problem = probe_sandbox(sandboxes)
        if problem is None:
            return broken(broken_component(task_spec, step, exc))
        code = exc.reason_code if isinstance(exc, InfraError) else SandboxUnavailable.reason_code
        raise InfraError(f"{step}: {_one_line(exc)}; a fresh sandbox fails too ({problem})", reason_code=code) from exc
