"""Grading policies (profiles): dimensions, weights, thresholds, bands and hard gates, as YAML data.

Profiles ship in ``gradeflow/profiles/*.yaml``; a task (``grading.profile``) or the CLI (``--profile``)
may also name a YAML file. A profile decides:

* which **dimensions** a grade reports and how much each weighs. Every component belongs to one
  dimension (its grader says which, e.g. ``tests`` → ``behavior``, ``test_evidence`` →
  ``test_evidence``; ``components`` remaps by name). A dimension's score is the weighted mean of its
  scored objective components, ``None`` when it has none: missing evidence is never a zero.
  Evidence for a dimension the profile does not name is not even gathered.
* what a **missing** dimension does: ``skip`` (the other dimensions are reweighted) or
  ``inconclusive`` (the grade has no score);
* which dimensions **must pass** for the grade to pass (every counted component in them passed);
* the **bands** between ``merge-candidate``, ``human-review`` and ``retry``, and the **hard gates**:
  reason codes that reject a grade whatever its score;
* how the reviewability evidence is scored (``review``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gradeflow.errors import SpecError
from gradeflow.models import GradeComponent
from gradeflow.models.reasons import unknown_reason_codes

__all__ = ["Bands", "Dimension", "Profile", "ReviewAspect", "ReviewPolicy", "available_profiles", "load_profile"]

ReviewAspect = Literal["size", "scope", "complexity", "length"]
_ASPECTS: tuple[ReviewAspect, ...] = ("size", "scope", "complexity", "length")


class _Policy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Bands(_Policy):
    """Score thresholds between the decisions of a graded, ungated result."""

    merge_candidate: float = Field(default=0.85, ge=0, le=1)
    """At or above: ``merge-candidate``."""
    human_review: float = Field(default=0.60, ge=0, le=1)
    """At or above (and below merge_candidate): ``human-review``; below: ``retry``."""

    @model_validator(mode="after")
    def _ordered(self) -> Bands:
        if self.human_review > self.merge_candidate:
            raise ValueError("bands.human_review must not exceed bands.merge_candidate")
        return self


class Dimension(_Policy):
    """One rubric dimension of a profile."""

    weight: float = Field(default=1.0, ge=0)
    """Share of the grade; ``0`` reports the dimension without scoring it."""
    missing: Literal["skip", "inconclusive"] = "skip"
    """Without evidence: ``skip`` reweights the other dimensions, ``inconclusive`` leaves the grade unscored."""
    must_pass: bool = True
    """Whether every counted component of this dimension must pass for the grade to pass."""
    description: str = ""


class ReviewPolicy(_Policy):
    """How the reviewability evidence is scored; each aspect scores in [0, 1], missing ones are skipped."""

    small_diff: int = Field(default=40, ge=0)
    """Changed lines (test files excluded) at or under which the size aspect scores 1."""
    large_diff: int = Field(default=400, ge=1)
    """Changed lines at or over which the size aspect scores 0 (linear in between)."""
    max_complexity: int = Field(default=10, ge=1)
    """A changed function over this cyclomatic complexity, and more complex than before, is a regression."""
    max_function_length: int = Field(default=50, ge=1)
    """A changed function over this many lines, and longer than before, is a regression."""
    weights: dict[ReviewAspect, float] = Field(default_factory=lambda: dict.fromkeys(_ASPECTS, 1.0))
    """Weight of each aspect; an aspect left out (or weighing 0) is not scored."""
    ask_human: list[str] = Field(default_factory=list)
    """Reason codes that make a served grade ask a person (a ``review-grade`` run), whatever its decision;
    a served grade that ends ``human-review`` always asks."""
    timeout_hours: float = Field(default=24.0, gt=0)
    """How long a review run waits for its answer before it records ``review-timed-out``."""

    @model_validator(mode="after")
    def _ordered(self) -> ReviewPolicy:
        if self.large_diff <= self.small_diff:
            raise ValueError("review.large_diff must be greater than review.small_diff")
        return self


class Profile(_Policy):
    """An operator's grading policy."""

    name: str
    description: str = ""
    dimensions: dict[str, Dimension] = Field(default_factory=lambda: {"behavior": Dimension()})
    """The dimensions a grade reports, in order; at least one must weigh more than 0."""
    components: dict[str, str] = Field(default_factory=dict)
    """Component name → dimension, overriding the dimension its grader chose."""
    weights: dict[str, float] = Field(default_factory=dict)
    """Default weights of objective components within their dimension; a task's ``grading.weights`` wins."""
    pass_threshold: float = Field(default=1.0, ge=0, le=1)
    bands: Bands = Field(default_factory=Bands)
    hard_gates: list[str] = Field(default_factory=list)
    """Reason codes that reject a grade whatever its score; each must be a known code."""
    reason_codes: dict[str, str] = Field(default_factory=dict)
    """Codes this profile may name beyond the registered ones (code → meaning), e.g. a custom grader's."""
    review: ReviewPolicy = Field(default_factory=ReviewPolicy)
    detector_unavailable: Literal["report", "inconclusive"] = "report"
    """What a hard-stop detector that could not run (``detector-unavailable``) does to the grade: only
    reported (its component unscored), or the grade is inconclusive."""

    @model_validator(mode="after")
    def _consistent(self) -> Profile:
        if not any(d.weight > 0 for d in self.dimensions.values()):
            raise ValueError("dimensions: at least one dimension must weigh more than 0")
        unknown = sorted({d for d in self.components.values() if d not in self.dimensions})
        if unknown:
            raise ValueError(f"components: maps to undeclared dimensions {', '.join(unknown)}")
        for key, codes in (("hard_gates", self.hard_gates), ("review.ask_human", self.review.ask_human)):
            typos = unknown_reason_codes(codes, self.reason_codes)
            if typos:
                raise ValueError(
                    f"{key}: unknown reason code {', '.join(map(repr, typos))} (declare a custom grader's codes "
                    "in the profile's reason_codes)"
                )
        return self

    def dimension_of(self, component: GradeComponent) -> str:
        """The dimension ``component`` counts toward under this profile."""
        return self.components.get(component.name, component.dimension)

    def reports(self, dimension: str) -> bool:
        """Whether this profile reports ``dimension`` (so its evidence is worth gathering)."""
        return dimension in self.dimensions

    def outline(self) -> str:
        """The dimensions and their weights on one line, e.g. ``behavior 0.50, test_evidence 0.30``."""
        return ", ".join(f"{name} {d.weight:.2f}" for name, d in self.dimensions.items())


def available_profiles() -> list[str]:
    """Names of the profiles shipped with gradeflow."""
    folder = resources.files("gradeflow.profiles")
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_profile(name_or_path: str) -> Profile:
    """A shipped profile by name, or a profile YAML file by path; ``SpecError`` when missing or invalid."""
    if name_or_path in available_profiles():
        where = f"profile {name_or_path!r}"
        text = resources.files("gradeflow.profiles").joinpath(f"{name_or_path}.yaml").read_text()
    else:
        path = Path(name_or_path)
        where = str(path)
        if not path.is_file():
            known = ", ".join(available_profiles())
            raise SpecError(f"{name_or_path}: no such profile (shipped: {known}) and no such file")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecError(f"{where}: cannot read profile: {exc}") from None
    try:
        return Profile.model_validate(yaml.safe_load(text))
    except yaml.YAMLError as exc:
        raise SpecError(f"{where}: invalid profile: YAML syntax error: {str(exc).splitlines()[0]}") from None
    except ValidationError as exc:
        raise SpecError(f"{where}: invalid profile: {_first_problem(exc)}") from None


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    key = ".".join(str(p) for p in error["loc"]) or "(top level)"
    return f"{key}: {error['msg'].removeprefix('Value error, ')}"
