"""CompositeGrader: many components, one score, one decision.

score  = Σ wᵢ·sᵢ / Σ wᵢ over objectives (0 when there is none)
score  = 0 when any gate failed
passed = every component passed and score ≥ pass_threshold
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass

from gradeflow.errors import SpecError
from gradeflow.graders.base import Grader, GradingContext
from gradeflow.models import CustomGraderSpec, GradeComponent
from gradeflow.policy import Profile

__all__ = ["Combined", "CompositeGrader", "combine", "load_custom_grader", "safe_grade"]


@dataclass(frozen=True)
class Combined:
    """The arithmetic of a combination, before any result is built."""

    components: list[GradeComponent]
    score: float
    passed: bool
    gate_failed: bool


def combine(
    components: Sequence[GradeComponent], weights: dict[str, float], pass_threshold: float
) -> Combined:
    """Weigh objectives (unlisted ones weigh 1), zero the score on a failed gate, decide passed."""
    weighted = [
        c.model_copy(update={"weight": weights.get(c.name, 1.0) if c.role == "objective" else None})
        for c in components
    ]
    objectives = [c for c in weighted if c.role == "objective" and (c.weight or 0) > 0]
    total = sum(c.weight or 0 for c in objectives)
    score = sum((c.weight or 0) * c.score for c in objectives) / total if total else 0.0
    gate_failed = any(c.role == "gate" and not c.passed for c in weighted)
    if gate_failed:
        score = 0.0
    passed = all(c.passed for c in weighted) and score >= pass_threshold and bool(objectives or weighted)
    return Combined(weighted, round(score, 6), passed, gate_failed)


def safe_grade(grader: Grader, context: GradingContext) -> GradeComponent:
    """``grader.grade(context)``; a grader that raises becomes a failed component carrying the error."""
    try:
        return grader.grade(context)
    except Exception as exc:
        return GradeComponent(
            name=getattr(grader, "name", type(grader).__name__),
            role=grader.role,
            score=0.0,
            passed=False,
            messages=[f"grader {type(grader).__name__} raised {type(exc).__name__}: {exc}"],
            reason_codes=["grader-error"],
        )


def load_custom_grader(spec: CustomGraderSpec) -> Grader:
    """Import ``module:Class`` and instantiate it with the spec's role; ``SpecError`` when it cannot."""
    module_name, _, class_name = spec.use.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise SpecError(f"graders: cannot load {spec.use!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Grader)):
        raise SpecError(f"graders: {spec.use!r} is not a subclass of gradeflow.graders.Grader")
    grader = cls()
    grader.role = spec.role
    return grader


class CompositeGrader:
    """Runs several graders over one context and combines their components under a profile."""

    def __init__(
        self,
        graders: Sequence[Grader],
        weights: dict[str, float] | None = None,
        pass_threshold: float | None = None,
        profile: Profile | None = None,
    ) -> None:
        self.graders = list(graders)
        self.profile = profile or Profile(name="default")
        self.weights = {**self.profile.weights, **(weights or {})}
        self.pass_threshold = self.profile.pass_threshold if pass_threshold is None else pass_threshold

    def grade_components(self, context: GradingContext) -> list[GradeComponent]:
        return [safe_grade(g, context) for g in self.graders]

    def combine(self, components: Sequence[GradeComponent]) -> Combined:
        return combine(components, self.weights, self.pass_threshold)
