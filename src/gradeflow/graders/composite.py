"""CompositeGrader: many components, one score per dimension, one score, one decision.

Under a :class:`~gradeflow.profiles.Profile` (the default one counts everything as ``behavior``):

dimension d     = Σ wᵢ·sᵢ / Σ wᵢ over the scored objectives of d, ``None`` when d has none
score           = Σ W_d·d / Σ W_d over the dimensions weighing W_d > 0 that have a score (0 when none)
score           = 0 when any gate failed
passed          = no gate failed, every counted component of a ``must_pass`` dimension passed,
                  no dimension the profile requires is missing, and score ≥ pass_threshold

Components of a dimension weighing 0 (or one the profile does not name) are reported, not counted,
and their reason codes stay in the component.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

from gradeflow.errors import SpecError
from gradeflow.graders.base import Grader, GradingContext
from gradeflow.models import CustomGraderSpec, GradeComponent, TaskSpec
from gradeflow.models.reasons import register_reason_codes
from gradeflow.profiles import Profile

__all__ = ["Combined", "CompositeGrader", "combine", "dimension_scores", "load_custom_grader", "safe_grade"]


@dataclass(frozen=True)
class Combined:
    """The arithmetic of a combination, before any result is built."""

    components: list[GradeComponent]
    score: float
    passed: bool
    gate_failed: bool
    dimensions: dict[str, float | None] = field(default_factory=dict)
    """Every dimension the profile names, ``None`` where no scored component gave evidence."""
    missing: list[str] = field(default_factory=list)
    """Dimensions without evidence that the profile says make the grade inconclusive."""
    reason_codes: list[str] = field(default_factory=list)
    """Codes of the gates and of the components in dimensions that count, in component order."""


def _weighed(component: GradeComponent, weights: dict[str, float]) -> GradeComponent:
    weight = weights.get(component.name, 1.0) if component.role == "objective" and component.scored else None
    return component.model_copy(update={"weight": weight})


def _in_play(component: GradeComponent, profile: Profile) -> bool:
    """A scored objective with a positive weight, in a dimension of the profile."""
    return (
        component.role == "objective"
        and component.scored
        and (component.weight or 0) > 0
        and profile.dimension_of(component) in profile.dimensions
    )


def dimension_scores(components: Sequence[GradeComponent], profile: Profile) -> dict[str, float | None]:
    """The weighted mean score of each dimension of ``profile`` (components already weighed)."""
    scores: dict[str, float | None] = {}
    for name in profile.dimensions:
        members = [c for c in components if _in_play(c, profile) and profile.dimension_of(c) == name]
        total = sum(c.weight or 0 for c in members)
        scores[name] = round(sum((c.weight or 0) * c.score for c in members) / total, 6) if members else None
    return scores


def _overall(dimensions: dict[str, float | None], profile: Profile) -> float:
    counted = [(profile.dimensions[d].weight, s) for d, s in dimensions.items() if s is not None]
    total = sum(w for w, _ in counted)
    return sum(w * s for w, s in counted) / total if total else 0.0


def combine(
    components: Sequence[GradeComponent],
    weights: dict[str, float],
    pass_threshold: float,
    profile: Profile | None = None,
) -> Combined:
    """Weigh objectives (unlisted ones weigh 1), score the profile's dimensions, apply gates, decide passed."""
    policy = profile or Profile(name="default")
    weighted = [_weighed(c, weights) for c in components]
    dimensions = dimension_scores(weighted, policy)
    counts = {d for d, spec in policy.dimensions.items() if spec.weight > 0}
    score = _overall({d: s for d, s in dimensions.items() if d in counts}, policy)
    gate_failed = any(c.role == "gate" and c.scored and not c.passed for c in weighted)
    if gate_failed:
        score = 0.0
    missing = [d for d in counts if dimensions[d] is None and policy.dimensions[d].missing == "inconclusive"]
    counted = [c for c in weighted if _in_play(c, policy) and policy.dimension_of(c) in counts]
    must = [c for c in counted if policy.dimensions[policy.dimension_of(c)].must_pass]
    passed = bool(weighted) and not gate_failed and not missing and all(c.passed for c in must)
    codes = [code for c in weighted if c.role == "gate" or policy.dimension_of(c) in counts for code in c.reason_codes]
    return Combined(
        weighted, round(score, 6), passed and score >= pass_threshold, gate_failed, dimensions, missing, codes
    )


def safe_grade(grader: Grader, context: GradingContext) -> GradeComponent:
    """``grader.grade(context)``; a grader that raises is unscored (``grader-error``), never a counted 0.

    Its dimension is then scored from the other components (or missing), and a gate that raised
    rejects nothing: a grader's bug is not evidence against the submission.
    """
    try:
        return grader.grade(context)
    except Exception as exc:  # a custom grader's bug; built-in graders never raise on candidate input
        return GradeComponent(
            name=getattr(grader, "name", type(grader).__name__),
            role=grader.role,
            dimension=getattr(grader, "dimension", "behavior"),
            score=0.0,
            passed=False,
            scored=False,
            messages=[f"grader {type(grader).__name__} raised {type(exc).__name__}: {exc}"],
            reason_codes=["grader-error"],
        )


def load_custom_grader(spec: CustomGraderSpec) -> Grader:
    """Import ``module:Class`` and instantiate it with the spec's role; ``SpecError`` when it cannot."""
    module_name, _, class_name = spec.use.partition(":")
    try:
        with _importable(spec.folder):
            cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        where = f" (looked in {spec.folder} and the installed packages)" if spec.folder else ""
        raise SpecError(f"graders: cannot load {spec.use!r}: {exc}{where}") from None
    if not (isinstance(cls, type) and issubclass(cls, Grader)):
        raise SpecError(f"graders: {spec.use!r} is not a subclass of gradeflow.graders.Grader")
    grader = cls()
    grader.role = spec.role
    register_reason_codes(grader.reason_codes)
    return grader


@contextmanager
def _importable(folder: str | None) -> Iterator[None]:
    """Within the block, modules in ``folder`` (a task file's, beside its ``mypkg/``) import first."""
    if folder is None:
        yield
        return
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        with suppress(ValueError):
            sys.path.remove(folder)


class CompositeGrader:
    """The one way components are combined: weights, dimensions, gates, the threshold and the decision.

    Weight precedence, lowest first: the profile's ``weights``, each custom grader's own weight, then
    ``weights`` given here (a task's ``grading.weights``). :meth:`for_task` builds it for a task spec.
    """

    def __init__(
        self,
        graders: Sequence[Grader] = (),
        weights: dict[str, float] | None = None,
        pass_threshold: float | None = None,
        profile: Profile | None = None,
        grader_weights: dict[str, float] | None = None,
    ) -> None:
        self.graders = list(graders)
        self.profile = profile or Profile(name="default")
        self.weights = {**self.profile.weights, **(grader_weights or {}), **(weights or {})}
        self.pass_threshold = self.profile.pass_threshold if pass_threshold is None else pass_threshold

    @classmethod
    def for_task(
        cls, task: TaskSpec, profile: Profile, custom: Sequence[tuple[Grader, CustomGraderSpec]] = ()
    ) -> CompositeGrader:
        """The task's custom graders under ``profile``, with the task's weights and pass threshold."""
        return cls(
            [grader for grader, _ in custom],
            weights=task.grading.weights,
            pass_threshold=task.grading.pass_threshold,
            profile=profile,
            grader_weights={grader.name: spec.weight for grader, spec in custom},
        )

    def grade_components(self, context: GradingContext) -> list[GradeComponent]:
        """Each grader's component in the grader's role; a grader that raises is unscored (``grader-error``)."""
        return [safe_grade(g, context).model_copy(update={"role": g.role}) for g in self.graders]

    def combine(self, components: Sequence[GradeComponent]) -> Combined:
        return combine(components, self.weights, self.pass_threshold, self.profile)
