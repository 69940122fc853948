"""The errors gradeflow raises, and what a caller may do about each.

::

    GradeflowError                 base class; never escapes the CLI as a traceback
    ├── SpecError                  the task spec (or another input file) is wrong: exit 2
    ├── SubmissionError            the submission itself is at fault (graded, never retried)
    │   ├── PatchDoesNotApply      the diff does not apply to the base revision
    │   ├── PathEscape             the diff or checkout reaches outside the repository
    │   ├── UnsupportedFileType    the checkout holds a file the grader cannot copy (a FIFO, a link loop)
    │   └── SubmissionTooLarge     a file (apparent size) or the checkout is over its limit: refused before any copy
    └── InfraError                 the environment failed, not the patch: inconclusive (``retryable`` ones
        │                          are retried first by the Prefect tasks, see ``tasks/_retry.py``;
    │                          a plain ``InfraError`` is not)
        ├── SandboxUnavailable     the sandbox could not start or run a command (retried)
        ├── SandboxBroken          a command left its sandbox unusable (not retried: it would break again)
        ├── GitFailed              git failed on the grader's side: ``git-failed`` (retried)
        └── BaselineBroken         the pristine base cannot be materialized, set up or tested (not retried)

Every message says what was wrong and where (a file, a key, a path), on one line.
An ``InfraError`` carries the reason code that ends up in an inconclusive result. Once the base is
healthy, an ``InfraError`` in a step that runs the candidate is the candidate's fault when a fresh
sandbox still works (:mod:`gradeflow.tasks.attribution`): a graded 0, not an inconclusive grade.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "BaselineBroken",
    "GitFailed",
    "GradeflowError",
    "InfraError",
    "PatchDoesNotApply",
    "PathEscape",
    "SandboxBroken",
    "SandboxUnavailable",
    "SpecError",
    "SubmissionError",
    "SubmissionTooLarge",
    "UnsupportedFileType",
    "prefect_server_errors",
]


class GradeflowError(Exception):
    """Base class of every error gradeflow raises on purpose."""

    exit_code: int = 2


class SpecError(GradeflowError):
    """A task spec, profile, suite or other input file is missing or invalid."""

    exit_code = 2


class SubmissionError(GradeflowError):
    """The submission is at fault; it is graded (not passed), never retried."""

    reason_code: str = "submission-error"


class PatchDoesNotApply(SubmissionError):
    """The patch cannot be applied to the base revision."""

    reason_code = "patch-does-not-apply"


class PathEscape(SubmissionError):
    """The patch or checkout touches a path outside the repository."""

    reason_code = "path-escape"


class UnsupportedFileType(SubmissionError):
    """The submission holds a file the grader cannot copy or follow: a FIFO, socket, device or link loop."""

    reason_code = "unsupported-file-type"


class SubmissionTooLarge(SubmissionError):
    """A candidate file (by apparent size, so a sparse one counts whole) or the checkout is over its limit."""

    reason_code = "submission-too-large"


class InfraError(GradeflowError):
    """The environment failed; the grade becomes inconclusive, after bounded retries when ``retryable``."""

    exit_code = 3
    reason_code: str = "sandbox-unavailable"
    retryable: bool = False
    """Whether running the same step again may succeed (a transient failure), so the task retries it."""

    def __init__(self, message: str, *, reason_code: str | None = None) -> None:
        super().__init__(message)
        if reason_code is not None:
            self.reason_code = reason_code


@contextmanager
def prefect_server_errors() -> Iterator[None]:
    """Within the block, Prefect's temporary server not coming up (a ``RuntimeError`` with its whole output) is
    an ``InfraError`` on one line: ``prefect-unavailable``, exit 3, like any environment failure."""
    try:
        yield
    except RuntimeError as exc:
        text = str(exc)
        if "ephemeral Prefect API server" not in text:
            raise
        what = " ".join(text.split(" stdout:")[0].split())
        raise InfraError(f"the Prefect server did not come up: {what}", reason_code="prefect-unavailable") from None


class SandboxUnavailable(InfraError):
    """The sandbox could not be created or could not run a command."""

    reason_code = "sandbox-unavailable"
    retryable = True


class SandboxBroken(InfraError):
    """A command left its sandbox unusable (processes that cannot be reaped); the sandbox was killed.

    Never retried: running the same command again breaks the sandbox again. The flow probes a fresh
    sandbox to decide whether the candidate or the environment is at fault.
    """

    reason_code = "sandbox-unavailable"
    retryable = False


class GitFailed(InfraError):
    """git, run by the grader on its own copies, failed or could not start."""

    reason_code = "git-failed"
    retryable = True


class BaselineBroken(InfraError):
    """The pristine base cannot be materialized, set up, or yields no test report: the same again next time."""

    reason_code = "baseline-broken"
