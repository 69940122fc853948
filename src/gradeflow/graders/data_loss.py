"""DataLossGrader: the gate on a patch that deletes tests, data or files outside its scope (``data-loss``).

Three kinds of loss, each a :class:`DataLossFinding`:

* ``test-removed``: a test (``file::function``) the base defines that the candidate no longer does. A
  test file git reports as renamed keeps its tests under the new path: moved is not deleted.
* ``file-removed``: a file the patch deletes (git's ``removed``, not ``renamed``) outside the task's scope.
* ``data-removed`` / ``data-truncated``: a data file (``DEFAULT_DATA_GLOBS`` unless the task names its
  own) deleted, or left with half or fewer of its base lines or bytes.

No finding scores 1 and passes; any scores 0 and fails. Pure: the evidence arrives as values.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from gradeflow.graders.base import FindingsGate
from gradeflow.models import ChangedFile
from gradeflow.models.globs import matches_any

__all__ = ["DEFAULT_DATA_GLOBS", "DataLossFinding", "DataLossGrader", "FileSize", "data_loss_findings"]

DEFAULT_DATA_GLOBS: tuple[str, ...] = ("**/*.json", "**/*.csv", "**/migrations/**")
"""Data files when the task names none: JSON, CSV and anything under a ``migrations`` folder."""


class FileSize(BaseModel):
    """A file's size on the base and on the candidate."""

    lines: int
    """Number of lines."""
    size: int
    """Number of bytes."""


class DataLossFinding(BaseModel):
    """One thing the patch loses."""

    kind: Literal["test-removed", "file-removed", "data-removed", "data-truncated"]
    """What was lost."""
    path: str
    """The file, as on the base."""
    detail: str = ""
    """The test's name, or the before/after sizes of a truncated file."""


def _renames(changes: list[ChangedFile]) -> dict[str, str]:
    return {c.old_path: c.path for c in changes if c.status == "renamed" and c.old_path}


def _lost_tests(base: set[str], candidate: set[str], renames: dict[str, str]) -> list[DataLossFinding]:
    found = []
    for test_id in sorted(base):
        path, _, name = test_id.partition("::")
        if f"{renames.get(path, path)}::{name}" not in candidate:
            found.append(DataLossFinding(kind="test-removed", path=path, detail=name))
    return found


def _lost_files(
    changes: list[ChangedFile], scope: list[str], data: list[str], sizes: dict[str, tuple[FileSize, FileSize]]
) -> list[DataLossFinding]:
    found = []
    for c in changes:
        if c.status == "removed" and matches_any(c.path, data):
            found.append(DataLossFinding(kind="data-removed", path=c.path))
        elif c.status == "removed" and not matches_any(c.path, scope):
            found.append(DataLossFinding(kind="file-removed", path=c.path))
    for path, (before, after) in sorted(sizes.items()):
        halved = after.lines * 2 <= before.lines or after.size * 2 <= before.size
        # An empty base file has nothing to lose: 0 <= 0 would call it truncated.
        if matches_any(path, data) and before.size > 0 and halved:
            detail = f"{before.lines}->{after.lines} lines, {before.size}->{after.size} bytes"
            found.append(DataLossFinding(kind="data-truncated", path=path, detail=detail))
    return found


def data_loss_findings(
    changes: list[ChangedFile],
    base_tests: set[str],
    candidate_tests: set[str],
    sizes: dict[str, tuple[FileSize, FileSize]],
    scope: list[str],
    data: list[str] | None = None,
) -> list[DataLossFinding]:
    """Everything the patch loses: tests, out-of-scope files, data files removed or cut by half or more.

    ``sizes`` maps a modified file to its base and candidate sizes; ``scope`` holds the globs of the
    files the task may change (a deletion inside them is the task's business).
    """
    globs = list(data) if data is not None else list(DEFAULT_DATA_GLOBS)
    renamed = _renames(changes)
    return _lost_tests(base_tests, candidate_tests, renamed) + _lost_files(changes, scope, globs, sizes)


class DataLossGrader(FindingsGate[DataLossFinding]):
    """Gate: the patch deletes no test, no data and no file outside the task's scope."""

    name = "data-loss"
    violation = "data-loss"

    def describe(self, finding: DataLossFinding) -> str:
        return f"{finding.path}: {finding.kind}{f': {finding.detail}' if finding.detail else ''}"
