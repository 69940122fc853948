"""CompatibilityGrader: the gate on breaks of the public API (reason ``compatibility-break``).

The evidence is the list of breaks griffe finds between the base's and the candidate's packages, each as
griffe names it (``Public object was removed``, ``Parameter was removed``...). A break whose object path
matches one of the task's ``compatibility.allow`` globs is reported, marked allowed, and not counted. No
counted break scores 1 and passes; any scores 0 and fails. Evidence of ``None`` means the packages
could not be loaded: unscored with ``detector-unavailable``.
"""

from __future__ import annotations

from pydantic import BaseModel

from gradeflow.graders.base import FindingsGate
from gradeflow.models.globs import matches_any

__all__ = ["CompatibilityBreak", "CompatibilityGrader", "mark_allowed"]


class CompatibilityBreak(BaseModel):
    """One break of the public API."""

    object: str
    """The dotted path of the object that broke, e.g. ``pkg.module.func``."""
    kind: str
    """griffe's name for the break, e.g. ``Parameter was removed``."""
    detail: str = ""
    """What changed within the object (a parameter's name), empty when the whole object did."""
    allowed: bool = False
    """The task allows this break: it is reported, not counted."""


def mark_allowed(breaks: list[CompatibilityBreak], allow: list[str]) -> list[CompatibilityBreak]:
    """``breaks`` with ``allowed`` set on those whose object path matches an ``allow`` glob."""
    return [b.model_copy(update={"allowed": matches_any(b.object, allow)}) for b in breaks]


class CompatibilityGrader(FindingsGate[CompatibilityBreak]):
    """Gate: the patch breaks no public API the task does not allow it to break."""

    name = "compatibility"
    violation = "compatibility-break"
    details_key = "breaks"

    def counted(self, findings: list[CompatibilityBreak]) -> list[CompatibilityBreak]:
        return [b for b in findings if not b.allowed]

    def describe(self, finding: CompatibilityBreak) -> str:
        return f"{finding.object}: {finding.kind}{f' ({finding.detail})' if finding.detail else ''}"
