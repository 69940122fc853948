"""Measuring the functions a patch touched in one file, before (pristine base) and after (candidate)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gradeflow.graders.base import WorkspaceView
from gradeflow.graders.quality import SourceError, measure_source
from gradeflow.integrity.files import HostWorkspace
from gradeflow.models import ChangedFile
from gradeflow.models.evidence import FunctionChange, FunctionMetrics, TouchedLines
from gradeflow.tasks._functions import touched_functions

__all__ = ["FileFunctions", "file_functions"]


@dataclass(frozen=True)
class FileFunctions:
    """The functions of one changed Python file after the patch, and those the patch touched."""

    after: list[FunctionMetrics]
    touched: list[FunctionChange]


def _measure(view: WorkspaceView, path: str | None) -> list[FunctionMetrics] | None:
    """The file's functions; ``[]`` when it does not exist, ``None`` when it does not parse."""
    if path is None:
        return []
    try:
        return measure_source(path, view.read(path))
    except FileNotFoundError:
        return []
    except SourceError:
        return None


def file_functions(
    change: ChangedFile, candidate: WorkspaceView, pristine: Path, lines: TouchedLines | None
) -> FileFunctions | None:
    """Touched functions of ``change``; ``None`` when either version of the file does not parse."""
    old_path = change.old_path or (None if change.status == "added" else change.path)
    before = _measure(HostWorkspace(root=pristine), old_path)
    after = _measure(candidate, change.path)
    if before is None or after is None:
        return None
    touched = touched_functions(change.path, before, after, lines or TouchedLines())
    return FileFunctions(after, touched)
