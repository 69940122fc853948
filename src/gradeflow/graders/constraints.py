"""ConstraintGrader: the gate on what the diff may touch and contain.

Each declared rule is one check: protected files (always on), ``allowed_files``, ``max_files_changed``,
``max_lines_changed``, each forbidden pattern and each required pattern. With ``allow_new_tests``, a
test file the patch adds (``tests.test_files``) is exempt from ``protected`` and ``allowed_files``.
score = 1 − violations / checks; passed needs zero violations.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from gradeflow.globs import matches_any
from gradeflow.graders.base import Grader, GradingContext
from gradeflow.models import ChangedFile, GradeComponent, TaskSpec
from gradeflow.testids import file_of_test_id

__all__ = ["ConstraintGrader", "protected_globs"]


def protected_globs(task: TaskSpec) -> list[str]:
    """The task's protected globs plus every file its test ids name."""
    named = [file_of_test_id(t) for t in [*task.tests.fail_to_pass, *task.tests.pass_to_pass]]
    return sorted({*task.constraints.protected, *(f for f in named if f)})


@dataclass
class _Check:
    rule: str
    violations: list[str] = field(default_factory=list)
    reason: str = ""


class ConstraintGrader(Grader):
    """Gate: the patch respects the task's protected files, scope, size and pattern rules."""

    name = "constraints"
    role = "gate"

    def grade(self, context: GradingContext) -> GradeComponent:
        checks = [check(context) for check in self._rules(context.task)]
        failed = [c for c in checks if c.violations]
        score = 1.0 - len(failed) / len(checks)
        return self.component(
            score,
            not failed,
            details={"checks": {c.rule: {"passed": not c.violations, "violations": c.violations} for c in checks}},
            messages=[f"{c.rule}: {v}" for c in failed for v in c.violations],
            reason_codes=sorted({c.reason for c in failed}),
        )

    def _rules(self, task: TaskSpec) -> list[Callable[[GradingContext], _Check]]:
        rules = task.constraints
        checks: list[Callable[[GradingContext], _Check]] = [_protected]
        if rules.allowed_files is not None:
            checks.append(_allowed_files)
        if rules.max_files_changed is not None:
            checks.append(_max_files)
        if rules.max_lines_changed is not None:
            checks.append(_max_lines)
        checks += [_forbidden(p) for p in rules.forbidden_patterns]
        checks += [_required(r.path, r.pattern) for r in rules.required_patterns]
        return checks


def _touched(change: ChangedFile) -> list[str]:
    return [p for p in (change.path, change.old_path) if p]


def _scoped(ctx: GradingContext) -> list[ChangedFile]:
    """The changes the scope rules look at: all, less the new test files ``allow_new_tests`` permits."""
    task = ctx.task
    if not task.constraints.allow_new_tests:
        return list(ctx.workspace.changes)
    return [
        c for c in ctx.workspace.changes if not (c.status == "added" and matches_any(c.path, task.tests.test_files))
    ]


def _protected(ctx: GradingContext) -> _Check:
    globs = protected_globs(ctx.task)
    hits = sorted({p for c in _scoped(ctx) for p in _touched(c) if matches_any(p, globs)})
    return _Check("protected", [f"{p} is protected and was {_status(ctx, p)}" for p in hits], "protected-file-modified")


def _status(ctx: GradingContext, path: str) -> str:
    return next((c.status for c in ctx.workspace.changes if path in _touched(c)), "modified")


def _allowed_files(ctx: GradingContext) -> _Check:
    allowed = ctx.task.constraints.allowed_files or []
    outside = sorted({p for c in _scoped(ctx) for p in _touched(c) if not matches_any(p, allowed)})
    return _Check("allowed_files", [f"{p} is outside the allowed files" for p in outside], "scope-expansion")


def _max_files(ctx: GradingContext) -> _Check:
    limit = ctx.task.constraints.max_files_changed or 0
    count = len(ctx.workspace.changes)
    bad = [f"{count} files changed, limit {limit}"] if count > limit else []
    return _Check("max_files_changed", bad, "too-many-files")


def _max_lines(ctx: GradingContext) -> _Check:
    limit = ctx.task.constraints.max_lines_changed or 0
    count = sum(c.lines_added + c.lines_removed for c in ctx.workspace.changes)
    bad = [f"{count} lines changed, limit {limit}"] if count > limit else []
    return _Check("max_lines_changed", bad, "too-many-lines")


def _forbidden(pattern: str) -> Callable[[GradingContext], _Check]:
    regex = re.compile(pattern)

    def check(ctx: GradingContext) -> _Check:
        hits = [
            f"{path}: added line matches {pattern!r}"
            for path in ctx.workspace.changed_files()
            if any(regex.search(line) for line in ctx.workspace.added_lines(path))
        ]
        return _Check(f"forbidden_pattern {pattern!r}", hits, "forbidden-pattern")

    return check


def _required(path: str, pattern: str) -> Callable[[GradingContext], _Check]:
    regex = re.compile(pattern, re.MULTILINE)

    def check(ctx: GradingContext) -> _Check:
        try:
            found = bool(regex.search(ctx.workspace.read(path)))
        except (FileNotFoundError, UnicodeDecodeError):
            found = False
        bad = [] if found else [f"{path} does not match {pattern!r}"]
        return _Check(f"required_pattern {path}", bad, "required-pattern-missing")

    return check
