"""``gradeflow task strength``: do the task's tests catch wrong fixes? Mutants of the reference, graded.

The wrong patches: up to ``limit`` mutants of the reference fix (:mod:`gradeflow.authoring.mutants`,
taken round-robin over the operators so each kind is tried), the do-nothing patch, and, when the fix
has more than one changed block, the fix with each block reverted (with one block, reverting the fix is
the do-nothing patch). Each is a whole patch against the base, graded by the real ``grade-submission``
flow with the task's profile, after the reference itself (which must pass, or strength means nothing).

A wrong patch is killed when its grade does not pass, survives when it passes; an inconclusive grade is
neither and stays out of the kill rate (killed / (killed + survived)).
"""

from __future__ import annotations

import difflib
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, Field, computed_field

from gradeflow.authoring.mutants import Mutant, mutate, reverted_blocks
from gradeflow.authoring.patches import is_test_path, run_git, split_diff
from gradeflow.errors import SpecError
from gradeflow.models import TaskSpec
from gradeflow.profiles import Profile
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.tasks.repo import resolve_base, write_agent_checkout

__all__ = ["StrengthReport", "WrongPatch", "WrongPatchOutcome", "measure_strength", "wrong_patches"]


class WrongPatch(BaseModel):
    """A patch the task's grading should reject."""

    submission_id: str
    kind: str
    """A mutant operator, ``do-nothing`` or ``revert-block``."""
    path: str = ""
    line: int = 0
    patch: str
    """The whole patch, base → wrong tree, as graded."""
    change: str = ""
    """What it changes in the fixed file: a unified diff, reference fix → wrong patch."""


def _change(path: str, fixed: str, text: str) -> str:
    lines = difflib.unified_diff(
        fixed.splitlines(keepends=True), text.splitlines(keepends=True), f"a/{path} (fix)", f"b/{path}", n=2
    )
    return "".join(lines)


class WrongPatchOutcome(WrongPatch):
    """A wrong patch with its grade."""

    status: str
    passed: bool
    score: float | None
    reason_codes: list[str] = Field(default_factory=list)

    @property
    def killed(self) -> bool | None:
        """``None`` when the grade was inconclusive."""
        return None if self.status != "graded" else not self.passed


class StrengthReport(BaseModel):
    """The kill rate of a task's grading over wrong patches, and every survivor's diff."""

    task_id: str
    task_spec_hash: str
    reference_passed: bool
    reference_seconds: float
    """One grade of the reference, in this run: the unit of the run's cost."""
    total_seconds: float
    """Every grade of the run (reference included), excluding making the mutants."""
    outcomes: list[WrongPatchOutcome] = Field(default_factory=list)

    @property
    def survivors(self) -> list[WrongPatchOutcome]:
        return [o for o in self.outcomes if o.killed is False]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def killed(self) -> int:
        return sum(o.killed is True for o in self.outcomes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def survived(self) -> int:
        return len(self.survivors)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def kill_rate(self) -> float | None:
        """killed / (killed + survived); ``None`` when every grade was inconclusive."""
        decided = self.killed + self.survived
        return round(self.killed / decided, 6) if decided else None


def _pick(mutants: list[Mutant], limit: int) -> list[Mutant]:
    """Up to ``limit`` mutants, one of each operator in turn, each operator's in file order."""
    by_operator: dict[str, list[Mutant]] = defaultdict(list)
    for mutant in mutants:
        by_operator[mutant.operator].append(mutant)
    queues = [list(reversed(found)) for found in by_operator.values()]
    picked: list[Mutant] = []
    while len(picked) < limit and any(queues):
        picked += [queue.pop() for queue in queues if queue][: limit - len(picked)]
    return picked


def _staged_diff(tree: Path) -> str:
    run_git(tree, "add", "-A", "-f")
    return run_git(tree, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "HEAD").stdout


def _with_file(tree: Path, path: str, text: str, fixed: str) -> str:
    """The whole patch (base → fixed tree with ``path`` holding ``text``), the tree left fixed again."""
    (tree / path).write_text(text, encoding="utf-8")
    try:
        return _staged_diff(tree)
    finally:
        (tree / path).write_text(fixed, encoding="utf-8")


def _base_text(tree: Path, path: str) -> str:
    shown = run_git(tree, "show", f"HEAD:{path}", check=False)
    return shown.stdout if shown.returncode == 0 else ""


def _file_patches(tree: Path, path: str) -> tuple[list[Mutant], list[WrongPatch]]:
    base, fixed = _base_text(tree, path), (tree / path).read_text(encoding="utf-8")
    mutants = mutate(path, base, fixed) if path.endswith(".py") else []
    reverts = [
        WrongPatch(
            submission_id=f"revert-{path.replace('/', '_')}-{i}",
            kind="revert-block",
            path=path,
            patch=patch,
            change=_change(path, fixed, text),
        )
        for i, text in enumerate(reverted_blocks(base, fixed, path.endswith(".py")), 1)
        if (patch := _with_file(tree, path, text, fixed)).strip()
    ]
    return mutants, reverts


def wrong_patches(task: TaskSpec, reference: str, limit: int = 20) -> list[WrongPatch]:
    """The do-nothing patch, the reverted blocks and up to ``limit`` mutants, each a patch on the base."""
    root = Path(tempfile.mkdtemp(prefix="gradeflow-strength-"))
    try:
        tree = root / "tree"
        write_agent_checkout(resolve_base(task), tree)
        (root / "reference.diff").write_text(reference, encoding="utf-8", errors="surrogateescape")
        applied = run_git(tree, "apply", "--binary", "--whitespace=nowarn", str(root / "reference.diff"), check=False)
        if applied.returncode != 0:
            raise SpecError(f"task strength: the reference does not apply to the base: {applied.stderr.strip()}")
        _staged_diff(tree)
        paths = [d.new for d in split_diff(reference) if d.new and d.adds_or_edits]
        found = [WrongPatch(submission_id="do-nothing", kind="do-nothing", patch="")]
        mutants: list[Mutant] = []
        for path in paths:
            if is_test_path(path, task.tests.test_files):
                continue
            file_mutants, reverts = _file_patches(tree, path)
            mutants += file_mutants
            found += reverts
        fixed = {p: (tree / p).read_text(encoding="utf-8") for p in {m.path for m in mutants}}
        for number, mutant in enumerate(_pick(mutants, limit), 1):
            patch = _with_file(tree, mutant.path, mutant.source, fixed[mutant.path])
            sid = f"mutant-{number}-{mutant.operator}"
            change = _change(mutant.path, fixed[mutant.path], mutant.source)
            found.append(
                WrongPatch(
                    submission_id=sid,
                    kind=mutant.operator,
                    path=mutant.path,
                    line=mutant.line,
                    patch=patch,
                    change=change,
                )
            )
        return found
    finally:
        shutil.rmtree(root, ignore_errors=True)


def measure_strength(
    task: TaskSpec,
    reference: str,
    sandbox: str | SandboxFactory | None = None,
    profile: str | Profile | None = None,
    limit: int = 20,
) -> StrengthReport:
    """Grade the reference and every wrong patch through the ``task-strength`` flow; ``SpecError`` when the
    reference does not apply."""
    from gradeflow.flows.strength import task_strength

    wrong = wrong_patches(task, reference, limit)
    graded = task_strength(
        task, [("reference", reference), *((w.submission_id, w.patch) for w in wrong)], sandbox, profile
    )
    first, rest = graded[0], graded[1:]
    outcomes = [
        WrongPatchOutcome(
            **w.model_dump(),
            status=g.result.status,
            passed=g.result.passed,
            score=g.result.score,
            reason_codes=list(g.result.reason_codes),
        )
        for w, g in zip(wrong, rest, strict=True)
    ]
    return StrengthReport(
        task_id=task.task_id,
        task_spec_hash=task.spec_hash(),
        reference_passed=first.result.passed,
        reference_seconds=first.seconds,
        total_seconds=sum(g.seconds for g in graded),
        outcomes=outcomes,
    )
