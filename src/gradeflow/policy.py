"""Grading policies (profiles): weights, thresholds, decision bands, as YAML data.

Profiles ship in ``gradeflow/profiles/*.yaml``; a task or the CLI may also name a YAML file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gradeflow.errors import SpecError
from gradeflow.models import Decision

__all__ = ["Bands", "Profile", "available_profiles", "load_profile"]


class Bands(BaseModel):
    """Score thresholds between the decisions of a graded, ungated result."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    merge_candidate: float = Field(default=0.85, ge=0, le=1)
    """At or above: ``merge-candidate``."""
    human_review: float = Field(default=0.60, ge=0, le=1)
    """At or above (and below merge_candidate): ``human-review``; below: ``retry``."""

    @model_validator(mode="after")
    def _ordered(self) -> Bands:
        if self.human_review > self.merge_candidate:
            raise ValueError("bands.human_review must not exceed bands.merge_candidate")
        return self


class Profile(BaseModel):
    """An operator's grading policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    weights: dict[str, float] = Field(default_factory=dict)
    """Default weights of objective components; a task's ``grading.weights`` overrides them."""
    pass_threshold: float = Field(default=1.0, ge=0, le=1)
    bands: Bands = Field(default_factory=Bands)
    hard_gates: list[str] = Field(default_factory=list)
    """Reason codes that reject a grade whatever its score."""

    def decide(self, score: float, gate_failed: bool) -> Decision:
        """The decision for a graded result."""
        if gate_failed:
            return "rejected"
        if score >= self.bands.merge_candidate:
            return "merge-candidate"
        return "human-review" if score >= self.bands.human_review else "retry"


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
        text = path.read_text()
    try:
        return Profile.model_validate(yaml.safe_load(text))
    except (yaml.YAMLError, ValidationError) as exc:
        raise SpecError(f"{where}: invalid profile: {str(exc).splitlines()[0]}") from None
