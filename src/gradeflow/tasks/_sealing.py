"""The acceptance runs' sealing, under the task's reading of edits to its tests (``tests.hidden_edits``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gradeflow.graders.constraints import protected_globs
from gradeflow.integrity.sealing import kept_test_edits, seal_acceptance_tree
from gradeflow.models import ChangedFile, TaskSpec
from gradeflow.tasks.baseline import replaced_by_hidden

__all__ = ["SealedTree", "kept_in_run", "seal_for_run"]


@dataclass(frozen=True)
class SealedTree:
    """What sealing did to a run's tree: the paths reset with why, and the test edits kept in the run."""

    sealed: dict[str, str]
    """Repository path → why it was reset to the base."""
    kept: list[str]
    """Edits to test folders and test files kept in the run (``tests.hidden_edits: reset`` only)."""


def seal_for_run(
    task_spec: TaskSpec, changes: list[ChangedFile], tree: Path, pristine: Path, *, strict: bool = False
) -> SealedTree:
    """Seal ``tree`` (base plus patch, a disposable copy) for an acceptance run. Under ``tests.hidden_edits:
    reset`` the candidate's edits to test folders that the hidden tests do not replace are kept, as SWE-bench
    keeps them (:func:`~gradeflow.integrity.sealing.kept_test_edits`); ``strict`` seals them too, as
    gradeflow's own reading (``fail``) does, for the grade's ``strict_reading``."""
    kept = [] if strict else kept_in_run(task_spec, changes, tree, pristine)
    sealed = seal_acceptance_tree(task_spec, changes, tree, pristine, protected_globs(task_spec), kept)
    return SealedTree(sealed, kept)


def kept_in_run(task_spec: TaskSpec, changes: list[ChangedFile], tree: Path, pristine: Path) -> list[str]:
    """The candidate's test edits an acceptance run keeps (``tests.hidden_edits: reset`` only; ``tree`` is base
    plus patch, unsealed): what they are is :func:`~gradeflow.integrity.sealing.kept_test_edits`'s to say."""
    if task_spec.tests.hidden_edits != "reset":
        return []
    replaced = replaced_by_hidden(task_spec)
    return kept_test_edits(task_spec, changes, tree, pristine, protected_globs(task_spec), replaced)
