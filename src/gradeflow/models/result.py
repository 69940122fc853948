"""The result: what a grade says (components, score, decision, evidence of the environment). Plain data."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    model_serializer,
    model_validator,
)

from gradeflow.models.spec import Decision, Role, Status

__all__ = ["ChangedFile", "EnvironmentFingerprint", "GradeComponent", "GradeResult", "StrictReading", "readable"]


_SURROGATE = re.compile("[\ud800-\udfff]")


def readable(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (a byte that was not UTF-8, read with
    ``surrogateescape``; a JSON ``\\ud800`` escape) replaced by U+FFFD, as git's diff output is read: a result
    holds what people and JSON can carry, whatever bytes the candidate's patch, file names or reports had.
    Strings, and the strings inside dicts (keys too), lists and tuples; anything else as it is."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _SURROGATE.sub("\ufffd", value)
        return value
    if isinstance(value, dict):
        return {readable(k): readable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(readable(v) for v in value)
    return value


class ChangedFile(BaseModel):
    """One file the patch touches."""

    path: str
    status: Literal["added", "modified", "removed", "renamed"] = "modified"
    old_path: str | None = None
    lines_added: int = 0
    lines_removed: int = 0
    binary: bool = False


class EnvironmentFingerprint(BaseModel):
    """Where a grade ran, so two results can be compared honestly."""

    sandbox: str
    image: str | None = None
    image_id: str | None = None
    architecture: str
    python_version: str
    timezone: str
    pythonhashseed: str
    gradeflow_version: str
    task_spec_hash: str
    task_environment: str | None = None
    """Digest of what the task's ``setup`` built on the pristine base, copied into every run (``None``:
    no setup). Not part of :meth:`key`: it is built from what the key already names."""
    rebuilt: list[str] = Field(default_factory=list)
    """Cached state of the grader found changed since it was built, and rebuilt for this grade
    (``pristine``, ``environment``, ``record``: the base run); empty when everything cached was intact."""

    def key(self) -> str:
        """The parts that change a baseline's behaviour (not the task hash, which the cache key adds)."""
        return "|".join(
            [
                self.sandbox,
                self.image_id or "",
                self.architecture,
                self.python_version,
                self.timezone,
                self.pythonhashseed,
                self.gradeflow_version,
            ]
        )


class GradeComponent(BaseModel):
    """One grader's verdict: a score in [0, 1], whether it passed, and the evidence behind it."""

    name: str
    """Stable component name (``constraints``, ``tests``, ``quality``, ``perf`` or a custom grader's)."""
    role: Role = "objective"
    """``objective`` contributes its weighted score; ``gate`` contributes nothing but zeroes the score."""
    weight: float | None = None
    """Weight among objectives, set when components are combined; ``None`` for gates."""
    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    details: dict[str, Any] = Field(default_factory=dict)
    """Machine-readable evidence (per-test outcomes, per-function metrics, timing samples...)."""
    messages: list[str] = Field(default_factory=list)
    """Human-readable explanations, one finding each."""
    reason_codes: list[str] = Field(default_factory=list)
    """Machine-readable codes of what went wrong, e.g. ``fail-to-pass-failing``."""
    dimension: str = "behavior"
    """The rubric dimension the grader's score belongs to; a profile may map the component elsewhere."""
    scored: bool = True
    """``False`` when the grader found no evidence to score (not applicable, or no usable run): the
    component is reported with its reasons but never weighed, and its ``score`` of 0 means nothing."""

    @model_validator(mode="before")
    @classmethod
    def _readable(cls, data: Any) -> Any:
        return readable(data)

    def short(self) -> str:
        """``name=0.80✓``, ``(gate)`` marked, ``name=n/a`` when unscored."""
        if not self.scored:
            return f"{self.name}=n/a"
        mark = "✓" if self.passed else "✗"
        gate = "(gate)" if self.role == "gate" else ""
        return f"{self.name}={self.score:.2f}{mark}{gate}"


class StrictReading(BaseModel):
    """gradeflow's stricter verdict beside a grade that followed SWE-bench's procedure (``tests.hidden_edits:
    reset``), given only when the two readings differ in what they count or run: the patch's edits to the files
    the hidden tests replace counted as the failed gates they are under ``fail``, and its other edits to test
    folders (kept in the grade's run, as SWE-bench keeps them) reset, the tests scored as they ran so."""

    passed: bool
    decision: Decision
    reason_codes: list[str] = Field(default_factory=list)
    """This reading's reason codes, then the ones that say why it differs (``protected-file-modified``,
    ``test-infrastructure-modified``, ``test-edit-kept``)."""
    messages: list[str] = Field(default_factory=list)
    """One line per edit (which file, which check would fail it or that it is reset), and one for the tests
    run with the kept edits reset."""


class GradeResult(BaseModel):
    """The whole verdict on one submission."""

    task_id: str
    submission_id: str
    status: Status
    """``graded``, or ``inconclusive`` when the environment rather than the patch failed."""
    score: float | None
    """Weighted score in [0, 1]; ``None`` when inconclusive."""
    passed: bool
    decision: Decision
    reason_codes: list[str] = Field(default_factory=list)
    components: list[GradeComponent] = Field(default_factory=list)
    files_changed: list[str] = Field(default_factory=list)
    lines_added: int = 0
    lines_removed: int = 0
    patch: str = ""
    """The unified diff that was graded."""
    messages: list[str] = Field(default_factory=list)
    """Result-level messages (why a grade is inconclusive, why a patch was refused)."""
    profile: str = "default"
    dimensions: dict[str, float | None] = Field(default_factory=dict)
    """Dimension scores from the profile; ``None`` where evidence is missing."""
    environment: EnvironmentFingerprint | None = None
    gradeflow_version: str = ""
    timings: dict[str, float] = Field(default_factory=dict)
    """Seconds spent in each step."""
    strict_reading: StrictReading | None = None
    """Where the task follows SWE-bench's procedure and the patch edited the files its hidden tests replace or
    other files of its test folders: the verdict gradeflow's stricter reading gives (see :class:`StrictReading`);
    ``None`` otherwise."""

    @model_validator(mode="before")
    @classmethod
    def _readable(cls, data: Any) -> Any:
        return readable(data)

    def component(self, name: str) -> GradeComponent:
        """The component called ``name``; ``KeyError`` when the grade has none."""
        for component in self.components:
            if component.name == name:
                return component
        raise KeyError(f"no component named {name!r} (have: {', '.join(c.name for c in self.components)})")

    def summary(self) -> str:
        """One line, e.g. ``PASS 1.000 (constraints=1.00✓(gate), tests=1.00✓)``."""
        if self.status == "inconclusive":
            return f"INCONCLUSIVE ({', '.join(self.reason_codes) or 'unknown'})"
        head = "PASS" if self.passed else "FAIL"
        parts = ", ".join(c.short() for c in self.components)
        return f"{head} {self.score or 0.0:.3f} ({parts})"

    @property
    def exit_code(self) -> int:
        """CLI exit code: 0 passed, 1 graded and not passed, 3 inconclusive."""
        if self.status == "inconclusive":
            return 3
        return 0 if self.passed else 1

    @model_serializer(mode="wrap")
    def _with_summary(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        data["summary"] = self.summary()
        return data
