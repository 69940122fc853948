"""SecurityGrader: the gate on security findings the patch introduces (reason ``security-violation``).

The evidence is a scanner's findings on the changed files, on the base and on the candidate (bandit for
Python today; any scanner that yields the same :class:`SecurityFinding` fits). A finding counts when it
reaches both thresholds and the base does not already hold it: findings are keyed by test id, file and
the flagged line's text (not the line number, which any edit above shifts), and a key the base holds n
times is forgiven n times. No new finding scores 1 and passes; any scores 0 and fails. Evidence of
``None`` means the scanner could not run: the component is unscored with ``detector-unavailable``.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel

from gradeflow.graders.base import FindingsGate

__all__ = ["LEVELS", "SecurityFinding", "SecurityGrader", "introduced_findings"]

Level = Literal["LOW", "MEDIUM", "HIGH"]
LEVELS: dict[str, int] = {"LOW": 1, "MEDIUM": 2, "HIGH": 3}
"""Severity and confidence levels in rising order, as bandit names them."""


class SecurityFinding(BaseModel):
    """One scanner finding in one file."""

    path: str
    """The file, relative to the repository root."""
    line: int
    """The flagged line (1-based) in that version of the file."""
    test_id: str
    """The scanner's rule id, e.g. bandit's ``B602``."""
    severity: Level
    """How bad the finding is if real."""
    confidence: Level
    """How sure the scanner is that it is real."""
    code: str
    """The flagged line's text, stripped: the key that survives line shifts."""
    message: str
    """The scanner's one-line explanation."""


def _key(f: SecurityFinding) -> tuple[str, str, str]:
    return (f.test_id, f.path, f.code)


def introduced_findings(
    base: list[SecurityFinding],
    candidate: list[SecurityFinding],
    severity: Level = "MEDIUM",
    confidence: Level = "MEDIUM",
) -> list[SecurityFinding]:
    """The candidate's findings at or above both thresholds that the base does not hold, in order."""
    forgiven = Counter(_key(f) for f in base)
    new: list[SecurityFinding] = []
    for f in candidate:
        if LEVELS[f.severity] < LEVELS[severity] or LEVELS[f.confidence] < LEVELS[confidence]:
            continue
        if forgiven[_key(f)] > 0:
            forgiven[_key(f)] -= 1
            continue
        new.append(f)
    return new


class SecurityGrader(FindingsGate[SecurityFinding]):
    """Gate: the patch introduces no security finding at or above the profile's thresholds."""

    name = "security"
    violation = "security-violation"

    def describe(self, finding: SecurityFinding) -> str:
        return f"{finding.path}:{finding.line}: {finding.test_id}: {finding.message}"
