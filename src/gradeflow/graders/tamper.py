"""TamperGrader: the gate on added code that reaches into the test machinery.

The evidence is the tamper scan of the patch (``integrity/tamper_scan.py``): findings the patch adds to
non-test files, those already in the base left out. No finding scores 1 and passes. Any finding scores 0,
fails with ``tamper-suspected`` and puts one message per finding, ``path:line: kind: message``, in the
component, so a person can look (``path: kind: message`` for a finding about a whole file). Every shipped
profile makes ``tamper-suspected`` a hard gate: the decision is ``rejected``. A scan is a heuristic: a
finding is a reason to look, not proof.
"""

from __future__ import annotations

from gradeflow.graders.base import Grader, GradingContext
from gradeflow.models import GradeComponent
from gradeflow.models.evidence import TamperEvidence

__all__ = ["TamperGrader"]


class TamperGrader(Grader):
    """Gate: the patch adds no code that reaches into pytest, the process's hooks, the clock or code loaders."""

    name = "tamper"
    role = "gate"

    def __init__(self, evidence: TamperEvidence) -> None:
        self.evidence = evidence

    def grade(self, context: GradingContext) -> GradeComponent:
        del context
        findings = self.evidence.findings
        details = {
            "findings": [f.model_dump() for f in findings],
            "files_scanned": self.evidence.files_scanned,
            "files_skipped": self.evidence.files_skipped,
        }
        if not findings:
            return self.component(1.0, True, details=details)
        return self.component(
            0.0,
            False,
            details=details,
            messages=[f"{f.path}{f':{f.line}' if f.line else ''}: {f.kind}: {f.message}" for f in findings],
            reason_codes=["tamper-suspected"],
        )
