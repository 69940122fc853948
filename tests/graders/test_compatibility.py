"""CompatibilityGrader: counted breaks fail the gate, allowed ones are reported only."""

from __future__ import annotations

import pytest

from builders import make_task
from gradeflow.graders.base import GradingContext, InMemoryWorkspace
from gradeflow.graders.compatibility import CompatibilityBreak, CompatibilityGrader, mark_allowed
from gradeflow.models import TaskSpec

GONE = CompatibilityBreak(object="pkg.g", kind="Public object was removed")
PARAM = CompatibilityBreak(object="pkg.f", kind="Parameter was removed", detail="b")


@pytest.mark.parametrize(
    ("breaks", "allow", "passed", "scored", "codes", "messages"),
    [
        ([], [], True, True, [], []),
        (
            [GONE, PARAM],
            [],
            False,
            True,
            ["compatibility-break"],
            ["pkg.g: Public object was removed", "pkg.f: Parameter was removed (b)"],
        ),
        ([GONE, PARAM], ["pkg.g"], False, True, ["compatibility-break"], ["pkg.f: Parameter was removed (b)"]),
        ([GONE, PARAM], ["pkg.*"], True, True, [], []),
        (None, [], False, False, ["detector-unavailable"], ["compatibility: unparseable"]),
    ],
)
def test_grader(
    breaks: list[CompatibilityBreak] | None,
    allow: list[str],
    passed: bool,
    scored: bool,
    codes: list[str],
    messages: list[str],
) -> None:
    marked = mark_allowed(breaks, allow) if breaks is not None else None
    c = CompatibilityGrader(marked, "unparseable").grade(
        GradingContext(task=TaskSpec.model_validate(make_task()), workspace=InMemoryWorkspace())
    )
    assert (c.passed, c.scored, c.reason_codes, c.messages, c.role) == (passed, scored, codes, messages, "gate")
    if marked:
        assert len(c.details["breaks"]) == 2  # allowed breaks are still reported
