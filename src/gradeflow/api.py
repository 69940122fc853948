"""The Python entry points: ``grade`` one submission, from a harness or the CLI."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from gradeflow.engine.local_server import use_local_server
from gradeflow.errors import SpecError, prefect_server_errors
from gradeflow.flows.session import Session, flow_runs_without_heartbeat, open_session
from gradeflow.logs import quiet_prefect
from gradeflow.models import GradeResult, Submission, TaskSpec
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.spec import load_task

__all__ = ["grade", "grade_in", "load_task", "make_submission", "open_session"]


def make_submission(
    *, patch: str | Path | None = None, workspace: str | Path | None = None, submission_id: str = "submission"
) -> Submission:
    """A submission from a diff (file path or diff text) or a checkout folder; ``SpecError`` when unreadable."""
    if (patch is None) == (workspace is None):
        raise SpecError("give exactly one of a patch or a workspace")
    try:
        Submission(submission_id=submission_id, patch="")
    except ValidationError:
        raise SpecError(
            f"--submission-id: {submission_id!r} is not an id (letters, digits, . _ -, at most 128, "
            "starting with a letter or digit)"
        ) from None
    if workspace is not None:
        folder = Path(workspace)
        if not folder.is_dir():
            raise SpecError(f"--workspace: {folder} is not a folder")
        return Submission(submission_id=submission_id, workspace=folder.resolve())
    text = str(patch)
    if isinstance(patch, Path) or (text and "\n" not in text):
        try:
            text = Path(text).read_bytes().decode("utf-8", errors="surrogateescape")
        except OSError as exc:
            raise SpecError(f"--patch: cannot read {patch}: {exc.strerror or exc}") from None
    return Submission.of_patch(submission_id, text)


def grade(
    task: TaskSpec | str | Path,
    *,
    patch: str | Path | None = None,
    workspace: str | Path | None = None,
    submission_id: str = "submission",
    sandbox: str | SandboxFactory | None = None,
    profile: str | None = None,
) -> GradeResult:
    """Grade one submission through the ``grade-submission`` flow and return its result.

    Bad input (the task spec, the submission, the profile, the sandbox settings) raises ``SpecError``
    before any flow runs. As the CLI does, it runs on the Prefect server ``PREFECT_API_URL`` names, else
    on gradeflow's local server (started once, reused: not Prefect's temporary one per process), with
    Prefect's console output kept to warnings.
    """
    spec = task if isinstance(task, TaskSpec) else load_task(task)
    submission = make_submission(patch=patch, workspace=workspace, submission_id=submission_id)
    with open_session(spec, sandbox, profile) as session:
        quiet_prefect()
        with prefect_server_errors():
            use_local_server()
        return grade_in(session, submission)


def grade_in(session: Session, submission: Submission) -> GradeResult:
    """Grade ``submission`` in an opened session (what :func:`grade` does once its input is checked)."""
    from gradeflow.flows.grade import grade_submission
    from gradeflow.graders.withheld import withhold_hidden_timings
    from gradeflow.tasks.clients import shared_client_context

    spec = session.task_spec
    with prefect_server_errors(), flow_runs_without_heartbeat(), shared_client_context():
        result = grade_submission(spec, submission, sandbox=session.factory, profile=session.profile, base=session.base)
    assert isinstance(result, GradeResult)
    return withhold_hidden_timings(spec, result)
