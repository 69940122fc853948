"""The Python entry points: ``grade`` one submission, from a harness or the CLI."""

from __future__ import annotations

import tarfile
from pathlib import Path

from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from pydantic import ValidationError

from gradeflow.errors import SpecError
from gradeflow.graders.composite import load_custom_grader
from gradeflow.models import GradeResult, Submission, TaskSpec
from gradeflow.profiles import load_profile
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.sandbox.factory import sandbox_factory
from gradeflow.spec import load_task
from gradeflow.tasks.repo import resolve_base

__all__ = ["grade", "load_task", "make_submission", "preflight"]


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
    return Submission(submission_id=submission_id, patch=text)


def preflight(task: TaskSpec, sandbox: str | SandboxFactory | None, profile: str | None) -> None:
    """Fail fast, before any flow run, on what is the caller's mistake (exit 2 in the CLI).

    Checks the repository (not a URL, not a plain file), the base revision, the profile, the sandbox
    settings (with docker, ``environment.cpus`` against the engine's CPUs when the engine answers),
    the hidden tests folder, and imports every custom grader.
    """
    _check_repo(task)
    resolve_base(task)
    load_profile(profile or task.grading.profile)
    if not isinstance(sandbox, SandboxFactory):
        sandbox_factory(task.environment, sandbox)
        if (sandbox or task.environment.sandbox) == "docker":
            _check_engine_cpus(task)
    if task.tests.hidden and not Path(task.tests.hidden).is_dir():
        raise SpecError(f"tests.hidden: {task.tests.hidden} is not a folder (task {task.task_id})")
    for spec in task.graders:
        try:
            load_custom_grader(spec)
        except (SyntaxError, TypeError) as exc:  # a module that does not compile, a class that needs arguments
            raise SpecError(f"graders: cannot load {spec.use!r}: {type(exc).__name__}: {exc}") from None


def _check_repo(task: TaskSpec) -> None:
    location = task.repo
    if "://" in location or location.startswith("git@"):
        raise SpecError(f"repo: {location} is a URL; clone it and set repo to the checkout (task {task.task_id})")
    path = Path(location)
    if path.is_file() and not (location.endswith((".tar.gz", ".tgz")) and tarfile.is_tarfile(path)):
        raise SpecError(
            f"repo: {location} is a file, not a git repository, a folder or a .tar.gz (task {task.task_id})"
        )


def _check_engine_cpus(task: TaskSpec) -> None:
    """``environment.cpus`` at most the engine's CPUs; an engine that does not answer is the grade's to report."""
    import docker

    from gradeflow.sandbox._docker_engine import ENGINE_ERRORS

    unanswered: tuple[type[Exception], ...] = (*ENGINE_ERRORS, KeyError, ValueError)
    try:
        client = docker.from_env(timeout=5)
        try:
            available = int(client.info()["NCPU"])
        finally:
            client.close()
    except unanswered:
        return
    if task.environment.cpus > available:
        raise SpecError(
            f"environment.cpus: {task.environment.cpus:g} is more than the {available} CPUs of the docker engine "
            f"(task {task.task_id})"
        )


def grade(
    task: TaskSpec | str | Path,
    *,
    patch: str | Path | None = None,
    workspace: str | Path | None = None,
    submission_id: str = "submission",
    sandbox: str | SandboxFactory | None = None,
    profile: str | None = None,
) -> GradeResult:
    """Grade one submission through the ``grade-submission`` flow and return its result."""
    from gradeflow.flows.grade import grade_submission
    from gradeflow.tasks.tests import withhold_hidden_timings

    spec = task if isinstance(task, TaskSpec) else load_task(task)
    submission = make_submission(patch=patch, workspace=workspace, submission_id=submission_id)
    preflight(spec, sandbox, profile)
    # One flow per grade: Prefect's heartbeat thread would add about a second to each.
    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        result = grade_submission(spec, submission, sandbox=sandbox, profile=profile)
    assert isinstance(result, GradeResult)
    return withhold_hidden_timings(spec, result)
