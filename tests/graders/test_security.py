"""SecurityGrader and the introduced-findings rule: thresholds, pre-existing findings, line shifts."""

from __future__ import annotations

import pytest

from builders import make_task
from gradeflow.graders.base import GradingContext, InMemoryWorkspace
from gradeflow.graders.security import SecurityFinding, SecurityGrader, introduced_findings
from gradeflow.models import TaskSpec


def _f(test_id: str = "B602", line: int = 5, code: str = "call(cmd, shell=True)", sev: str = "HIGH") -> SecurityFinding:
    return SecurityFinding.model_validate(
        {
            "path": "pkg/run.py",
            "line": line,
            "test_id": test_id,
            "severity": sev,
            "confidence": "HIGH",
            "code": code,
            "message": "m",
        }
    )


@pytest.mark.parametrize(
    ("base", "candidate", "expected"),
    [
        ([], [_f()], ["B602"]),
        ([_f(line=3)], [_f(line=9)], []),  # the same finding moved down: pre-existing
        ([_f()], [_f(), _f(line=7)], ["B602"]),  # a second copy of a pre-existing line is new
        ([_f(code="other(x, shell=True)")], [_f()], ["B602"]),  # same rule, different code
        ([], [_f(sev="LOW")], []),  # below the default medium severity
        ([], [_f(test_id="B506", sev="MEDIUM")], ["B506"]),
    ],
)
def test_introduced_findings(
    base: list[SecurityFinding], candidate: list[SecurityFinding], expected: list[str]
) -> None:
    assert [f.test_id for f in introduced_findings(base, candidate)] == expected


def test_thresholds_come_from_the_caller() -> None:
    medium = _f(test_id="B506", sev="MEDIUM")
    assert introduced_findings([], [medium], severity="HIGH") == []
    assert introduced_findings([], [medium], severity="LOW") == [medium]


def _context() -> GradingContext:
    return GradingContext(task=TaskSpec.model_validate(make_task()), workspace=InMemoryWorkspace())


@pytest.mark.parametrize(
    ("findings", "passed", "scored", "codes"),
    [
        ([], True, True, []),
        ([_f()], False, True, ["security-violation"]),
        (None, False, False, ["detector-unavailable"]),
    ],
)
def test_grader(findings: list[SecurityFinding] | None, passed: bool, scored: bool, codes: list[str]) -> None:
    component = SecurityGrader(findings, unavailable="bandit is not installed").grade(_context())
    assert (component.passed, component.scored, component.reason_codes, component.role) == (
        passed,
        scored,
        codes,
        "gate",
    )
    if findings:
        assert component.messages == ["pkg/run.py:5: B602: m"]
