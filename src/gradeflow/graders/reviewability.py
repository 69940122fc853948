"""ReviewabilityGrader: how easy the patch is to review, scored by the profile's ``review`` policy.

Test files (``tests.test_files``) are left out: bringing a test never costs reviewability. Each aspect
scores in [0, 1]; an aspect without evidence is skipped, and the score is the weighted mean of the rest.

| aspect     | evidence                                       | score                                      |
|------------|------------------------------------------------|--------------------------------------------|
| size       | lines added + removed                          | 1 to ``small_diff``, 0 from ``large_diff`` |
| scope      | changed files outside the expected files       | 1 − outside / files                        |
| complexity | touched functions over ``max_complexity`` and  | 1 − regressed / touched functions          |
|            | more complex than before                       |                                            |
| length     | touched functions over ``max_function_length`` | 1 − regressed / touched functions          |
|            | and longer than before                         |                                            |

Size is linear between its two bounds. The expected files are ``review.expected_files``, else
``constraints.allowed_files``; with neither, scope is skipped, as complexity and length are when the
patch touches no function of a non-test Python file.
An aspect below 1 adds its reason code: ``large-diff``, ``scope-expansion``, ``complexity-increased``,
``function-length-increased``. The component passes when every scored aspect is 1. An empty patch has
nothing to review and is unscored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gradeflow.graders.base import Grader, GradingContext
from gradeflow.models import ChangedFile, GradeComponent, TaskSpec
from gradeflow.models.evidence import FunctionChange
from gradeflow.models.globs import matches_any
from gradeflow.profiles import ReviewAspect, ReviewPolicy

__all__ = ["ReviewabilityGrader", "expected_scope"]

_CODES: dict[ReviewAspect, str] = {
    "size": "large-diff",
    "scope": "scope-expansion",
    "complexity": "complexity-increased",
    "length": "function-length-increased",
}


@dataclass
class _Aspect:
    score: float | None
    messages: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def expected_scope(task: TaskSpec) -> list[str] | None:
    """Globs of the files the change belongs in: ``review.expected_files``, else ``constraints.allowed_files``."""
    return task.review.expected_files if task.review.expected_files is not None else task.constraints.allowed_files


def _size(changes: list[ChangedFile], policy: ReviewPolicy) -> _Aspect:
    lines = sum(c.lines_added + c.lines_removed for c in changes)
    span = policy.large_diff - policy.small_diff
    score = min(1.0, max(0.0, 1 - (lines - policy.small_diff) / span))
    message = [f"{lines} changed lines (scores 1 up to {policy.small_diff}, 0 from {policy.large_diff})"]
    return _Aspect(round(score, 6), message if score < 1 else [], {"lines_changed": lines})


def _scope(changes: list[ChangedFile], task: TaskSpec) -> _Aspect:
    scope = expected_scope(task)
    if scope is None or not changes:
        return _Aspect(None)
    outside = [c.path for c in changes if not matches_any(c.path, scope)]
    return _Aspect(
        1 - len(outside) / len(changes),
        [f"{p} is outside the expected files" for p in outside],
        {"expected_files": scope, "outside_scope": outside},
    )


def _growth(functions: list[FunctionChange], metric: Literal["complexity", "length"], limit: int) -> _Aspect:
    present = [f for f in functions if f.after is not None]
    if not present:
        return _Aspect(None)
    regressed = [f for f in present if _worse(f, metric, limit)]
    messages = [
        f"{f.path} {f.name}: {metric} {_value(f.before, metric)} → {_value(f.after, metric)} (limit {limit})"
        for f in regressed
    ]
    return _Aspect(1 - len(regressed) / len(present), messages, {f"{metric}_regressed": [f.name for f in regressed]})


def _value(metrics: Any, metric: str) -> int | None:
    return None if metrics is None else int(getattr(metrics, metric))


def _worse(function: FunctionChange, metric: str, limit: int) -> bool:
    after, before = _value(function.after, metric) or 0, _value(function.before, metric) or 0
    return after > limit and after > before


class ReviewabilityGrader(Grader):
    """Objective in the ``reviewability`` dimension: diff size, scope and quality deltas."""

    name = "reviewability"
    dimension = "reviewability"

    def __init__(self, policy: ReviewPolicy | None = None) -> None:
        self.policy = policy or ReviewPolicy()

    def grade(self, context: GradingContext) -> GradeComponent:
        if context.changed_functions is None:
            raise ValueError("the reviewability step gathered no function metrics")
        if not context.workspace.changes:
            return self.unscored("the patch is empty: there is nothing to review")
        task = context.task
        changes = [c for c in context.workspace.changes if not matches_any(c.path, task.tests.test_files)]
        policy = self.policy
        aspects: dict[ReviewAspect, _Aspect] = {
            "size": _size(changes, policy),
            "scope": _scope(changes, task),
            "complexity": _growth(context.changed_functions, "complexity", policy.max_complexity),
            "length": _growth(context.changed_functions, "length", policy.max_function_length),
        }
        return self._combine(aspects, context.changed_functions)

    def _combine(self, aspects: dict[ReviewAspect, _Aspect], functions: list[FunctionChange]) -> GradeComponent:
        scored = {k: a for k, a in aspects.items() if a.score is not None and self.policy.weights.get(k, 0) > 0}
        if not scored:
            return self.unscored("no reviewability aspect has evidence or weight")
        total = sum(self.policy.weights[k] for k in scored)
        score = sum(self.policy.weights[k] * (a.score or 0.0) for k, a in scored.items()) / total
        details: dict[str, Any] = {"aspects": {k: a.score for k, a in aspects.items()}}
        for aspect in aspects.values():
            details.update(aspect.details)
        details["functions"] = [_function_entry(f) for f in functions]
        return self.component(
            round(score, 6),
            all(a.score == 1 for a in scored.values()),
            details=details,
            messages=[m for a in scored.values() for m in a.messages],
            reason_codes=[_CODES[k] for k, a in scored.items() if (a.score or 0) < 1],
        )


def _function_entry(change: FunctionChange) -> dict[str, Any]:
    def side(metrics: Any) -> dict[str, int] | None:
        return None if metrics is None else {"length": metrics.length, "complexity": metrics.complexity}

    return {"path": change.path, "name": change.name, "before": side(change.before), "after": side(change.after)}
