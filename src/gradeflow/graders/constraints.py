"""ConstraintGrader: the gate on what the diff may touch and contain.

Each declared rule is one check: protected files (always on), ``allowed_files``, ``max_files_changed``,
``max_lines_changed``, each forbidden pattern and each required pattern. With ``allow_new_tests``, a
test file the patch adds (``tests.test_files``) is exempt from ``protected`` and ``allowed_files``.
score = 1 − violations / checks; passed needs zero violations. Under ``tests.hidden_edits: reset``
(SWE-bench's procedure), a protected file the hidden tests replace is reset before every run, so an edit to
it is reported in ``details["reset_by_hidden_tests"]`` and ``details["strict_reason_codes"]``, not failed.

The patterns are matched by the constraints task (:class:`~gradeflow.models.evidence.PatternEvidence`); this
grader scores the matches. A forbidden pattern that matched an added line is ``forbidden-pattern``, a
required one that matched nothing ``required-pattern-missing``. A pattern whose matching ran out of time
(or failed) is a violation with ``pattern-timeout``: the text it hung on is the patch's. A pattern with no
evidence at all is a violation with ``pattern-evidence-missing``, never a silent pass.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from gradeflow.graders.base import Grader, GradingContext
from gradeflow.models import ChangedFile, GradeComponent, TaskSpec
from gradeflow.models.evidence import PatternEvidence, PatternMatches
from gradeflow.models.globs import matches_any
from gradeflow.models.testids import file_of_test_id

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
    paths: list[str] = field(default_factory=list)
    """The file each violation is about, where each is about one (``protected``)."""


class ConstraintGrader(Grader):
    """Gate: the patch respects the task's protected files, scope, size and pattern rules."""

    name = "constraints"
    role = "gate"

    def __init__(self, patterns: PatternEvidence | None = None, replaced: frozenset[str] = frozenset()) -> None:
        self.patterns = patterns
        """What the constraints task matched; ``None`` fails every declared pattern (no evidence)."""
        self.replaced = replaced
        """Repository paths the hidden tests replace (used under ``tests.hidden_edits: reset``)."""

    def grade(self, context: GradingContext) -> GradeComponent:
        reset = self.replaced if context.task.tests.hidden_edits == "reset" else frozenset()
        checks = [check(context) for check in self._rules(context.task)]
        protected = checks[0]
        set_aside = [(p, v) for p, v in zip(protected.paths, protected.violations, strict=True) if p in reset]
        protected.violations = [v for p, v in zip(protected.paths, protected.violations, strict=True) if p not in reset]
        failed = [c for c in checks if c.violations]
        score = 1.0 - len(failed) / len(checks)
        details: dict[str, object] = {
            "checks": {c.rule: {"passed": not c.violations, "violations": c.violations} for c in checks}
        }
        if self.patterns is not None:
            details["patterns"] = [_summary(m) for m in self.patterns.matches]
        messages = [f"{c.rule}: {v}" for c in failed for v in c.violations]
        if set_aside:
            details["reset_by_hidden_tests"] = [p for p, _ in set_aside]
            details["strict_reason_codes"] = ["protected-file-modified"]
            details["strict_messages"] = [f"protected: {v}" for _, v in set_aside]
            messages += [
                f"protected: {v}; reset to the base under the hidden tests, not a failure" for _, v in set_aside
            ]
        return self.component(
            score,
            not failed,
            details=details,
            messages=messages,
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
        checks += [_forbidden(p, self._matches("forbidden", p, None)) for p in rules.forbidden_patterns]
        checks += [
            _required(r.path, r.pattern, self._matches("required", r.pattern, r.path)) for r in rules.required_patterns
        ]
        return checks

    def _matches(self, kind: str, pattern: str, path: str | None) -> PatternMatches | None:
        found = self.patterns.matches if self.patterns is not None else []
        return next((m for m in found if (m.kind, m.pattern, m.path) == (kind, pattern, path)), None)


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
    violations = [f"{p} is protected and was {_status(ctx, p)}" for p in hits]
    return _Check("protected", violations, "protected-file-modified", paths=hits)


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


def _forbidden(pattern: str, found: PatternMatches | None) -> Callable[[GradingContext], _Check]:
    rule = f"forbidden_pattern {pattern!r}"

    def check(ctx: GradingContext) -> _Check:
        del ctx
        if found is None or found.error:
            return _unanswered(rule, pattern, found)
        lines: dict[str, list[int]] = {}
        for hit in found.hits:
            lines.setdefault(hit.path, []).append(hit.line)
        hits = [f"{_shown(path)}: added {_numbers(numbers)} {pattern!r}" for path, numbers in lines.items()]
        return _Check(rule, hits, "forbidden-pattern")

    return check


def _required(path: str, pattern: str, found: PatternMatches | None) -> Callable[[GradingContext], _Check]:
    rule = f"required_pattern {path}"

    def check(ctx: GradingContext) -> _Check:
        del ctx
        if found is None or found.error:
            return _unanswered(rule, pattern, found)
        bad = [] if found.hits else [f"{_shown(path)} does not match {pattern!r}"]
        return _Check(rule, bad, "required-pattern-missing")

    return check


def _unanswered(rule: str, pattern: str, found: PatternMatches | None) -> _Check:
    if found is None:
        return _Check(rule, [f"no match evidence for {pattern!r}"], "pattern-evidence-missing")
    return _Check(rule, [f"matching {pattern!r} ({found.engine}) {found.error}"], "pattern-timeout")


def _shown(path: str) -> str:
    """A path as it goes into a one-line message: quoted when it holds a tab, a newline or another control."""
    return path if path.isprintable() else json.dumps(path, ensure_ascii=False)


def _numbers(numbers: list[int], shown: int = 5) -> str:
    listed = ", ".join(str(n) for n in numbers[:shown])
    more = f" and {len(numbers) - shown} more" if len(numbers) > shown else ""
    return f"lines {listed}{more} match" if len(numbers) > 1 else f"line {listed} matches"


def _summary(found: PatternMatches) -> dict[str, object]:
    return {
        "kind": found.kind,
        "pattern": found.pattern,
        "path": found.path,
        "engine": found.engine,
        "hits": len(found.hits),
        "error": found.error,
    }
