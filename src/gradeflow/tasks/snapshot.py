"""Task: the submission as a private workspace plus the graded patch and what it changes."""

from __future__ import annotations

import shutil
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, Field

from gradeflow.errors import SubmissionError
from gradeflow.models import ChangedFile, Submission, TaskSpec
from gradeflow.tasks._binary_patch import omit_large_binaries
from gradeflow.tasks._diff import added_by_path
from gradeflow.tasks._files import HostWorkspace
from gradeflow.tasks._patching import apply_patch, changed_files, graded_patch, stage_checkout
from gradeflow.tasks.baseline import Baseline, ensure_pristine, working_copy

__all__ = ["Snapshot", "discard", "take_snapshot"]


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
    del task_spec
    workspace = working_copy(ensure_pristine(baseline.base, baseline.key))
    try:
        if submission.patch is not None:
            apply_patch(workspace, submission.patch)
        else:
            assert submission.workspace is not None
            stage_checkout(workspace, submission.workspace)
    except SubmissionError as exc:
        discard(workspace)
        patch = omit_large_binaries(submission.patch or "")
        return Snapshot(workspace=None, patch=patch, refusal=exc.reason_code, message=str(exc))
    patch = omit_large_binaries(graded_patch(workspace), workspace)
    added = {path: [text for _, text in lines] for path, lines in added_by_path(patch.encode()).items()}
    return Snapshot(workspace=workspace, patch=patch, changes=changed_files(workspace), added=added)


def discard(workspace: Path | None) -> None:
    """Remove a private workspace (and the temporary folder around it)."""
    if workspace is not None:
        shutil.rmtree(workspace.parent, ignore_errors=True)
