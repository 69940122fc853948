"""Task: the submission as a private workspace plus the graded patch and what it changes.

Entries the grader cannot copy or follow (:mod:`gradeflow.tasks._filetypes`: a FIFO, socket or
device in a checkout, a symlink loop, an unreadable file, folders nested too deep) refuse the
submission with ``unsupported-file-type`` naming the path, unless git ignores them (they are left out
of the copy then, as every ignored file is). A file or checkout over its size limit
(:mod:`gradeflow.tasks._sizes`, apparent sizes) refuses it with ``submission-too-large`` before the
private copy is even made.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, Field

from gradeflow.errors import SubmissionError, UnsupportedFileType
from gradeflow.integrity.files import HostWorkspace
from gradeflow.models import ChangedFile, Submission, TaskSpec
from gradeflow.sandbox.base import remove_tree
from gradeflow.tasks._binary_patch import omit_large_binaries
from gradeflow.tasks._diff import added_by_path
from gradeflow.tasks._filetypes import MAX_DEPTH, too_deep, unsupported_entries
from gradeflow.tasks._git import git
from gradeflow.tasks._patching import apply_patch, changed_files, graded_patch, stage_checkout
from gradeflow.tasks._sizes import (
    MAX_CHECKOUT_BYTES,
    MAX_CHECKOUT_FILES,
    check_checkout_size,
    check_patch_size,
    file_limit,
)
from gradeflow.tasks.baseline import Baseline, ensure_pristine, working_copy
from gradeflow.tasks.repo import skipped_by_copy

__all__ = ["MAX_CHECKOUT_BYTES", "MAX_CHECKOUT_FILES", "Snapshot", "discard", "take_snapshot"]


class Snapshot(BaseModel):
    """The graded workspace and the patch that made it, or why the submission was refused."""

    workspace: Path | None
    """Private copy of base + patch; ``None`` when the submission was refused."""
    patch: str = ""
    """The graded diff; a large binary file's content is left out (path, size and hash instead)."""
    changes: list[ChangedFile] = Field(default_factory=list)
    added: dict[str, list[str]] = Field(default_factory=dict)
    """The lines the patch adds, keyed by the real path after the patch (as in ``changes``)."""
    refusal: str | None = None
    """Reason code when the patch could not be graded (``patch-does-not-apply``, ``path-escape``)."""
    message: str = ""

    def view(self) -> HostWorkspace:
        """A read-only view for the graders."""
        if self.workspace is None:
            raise ValueError("a refused submission has no workspace")
        return HostWorkspace(root=self.workspace, changes=self.changes, patch=self.patch, added=self.added)


@task(name="snapshot", cache_policy=NO_CACHE)
def take_snapshot(task_spec: TaskSpec, submission: Submission, baseline: Baseline) -> Snapshot:
    """Apply the diff to (or diff the checkout against) a fresh copy of the pristine base."""
    try:
        _check_size(submission, file_limit(task_spec.environment))
    except SubmissionError as exc:
        return Snapshot(workspace=None, patch=_summary(submission), refusal=exc.reason_code, message=str(exc))
    workspace = working_copy(ensure_pristine(baseline.base, baseline.key))
    try:
        _stage(workspace, submission)
        changes = changed_files(workspace)
        _refuse_unsupported({c.path: f"nested deeper than {MAX_DEPTH} folders" for c in changes if too_deep(c.path)})
    except SubmissionError as exc:
        discard(workspace)
        return Snapshot(workspace=None, patch=_summary(submission), refusal=exc.reason_code, message=str(exc))
    except BaseException:
        discard(workspace)
        raise
    patch = omit_large_binaries(graded_patch(workspace), workspace)
    added = {path: [text for _, text in lines] for path, lines in added_by_path(patch.encode()).items()}
    return Snapshot(workspace=workspace, patch=patch, changes=changes, added=added)


def _summary(submission: Submission) -> str:
    """The refused submission's diff as recorded (large binary content left out); empty for a checkout."""
    return omit_large_binaries(submission.diff() or "")


def _check_size(submission: Submission, per_file: int) -> None:
    """``SubmissionTooLarge`` before anything is copied or applied, when the submission is over a limit."""
    text = submission.diff()
    if text is not None:
        check_patch_size(text, per_file)
    else:
        assert submission.workspace is not None
        check_checkout_size(submission.workspace, skipped_by_copy, per_file)


def _stage(workspace: Path, submission: Submission) -> None:
    """Apply the diff or stage the checkout; ``UnsupportedFileType`` for what neither can hold."""
    text = submission.diff()
    if text is not None:
        try:
            apply_patch(workspace, text)
        except (RuntimeError, OSError):
            # Checking the links resolves each one: a link loop the patch made raises there.
            _refuse_unsupported(unsupported_entries(workspace, skip=lambda name: name == ".git"))
            raise
        return
    assert submission.workspace is not None
    found = unsupported_entries(submission.workspace, skip=skipped_by_copy)
    stage_checkout(workspace, submission.workspace)  # the copy leaves out what was found
    _refuse_unsupported({path: why for path, why in found.items() if not _ignored(workspace, path)})


def _ignored(workspace: Path, path: str) -> bool:
    """Whether the checkout's own ignore rules (now in ``workspace``) leave ``path`` out of the patch."""
    return git(workspace, "check-ignore", "-q", "--", path, check=False).returncode == 0


def _refuse_unsupported(found: dict[str, str]) -> None:
    if found:
        listed = [f"{path} is {why}" for path, why in list(found.items())[:5]]
        more = f" (and {len(found) - 5} more)" if len(found) > 5 else ""
        raise UnsupportedFileType(f"the submission holds what gradeflow cannot copy: {'; '.join(listed)}{more}")


def discard(workspace: Path | None) -> None:
    """Remove a private workspace (and the temporary folder around it), whatever modes a command left; never raises."""
    if workspace is not None:
        remove_tree(workspace.parent, ignore_errors=True)
