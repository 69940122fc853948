"""A hard-stop detector that could not run: reported under rubric, inconclusive under strict."""

from __future__ import annotations

import pytest

from builders import make_task
from gradeflow.graders.base import GradingContext, InMemoryWorkspace
from gradeflow.graders.security import SecurityGrader
from gradeflow.graders.verdict import graded_result
from gradeflow.models import ChangedFile, GradeComponent, TaskSpec
from gradeflow.profiles import load_profile

TASK = TaskSpec.model_validate(make_task())


@pytest.mark.parametrize(
    ("profile", "status", "decision"),
    [("rubric", "graded", "merge-candidate"), ("strict", "inconclusive", "inconclusive")],
)
def test_profile_decides(profile: str, status: str, decision: str) -> None:
    unavailable = SecurityGrader(None, "bandit could not run").grade(
        GradingContext(task=TASK, workspace=InMemoryWorkspace())
    )
    components = [
        GradeComponent(name="tests", score=1.0, passed=True),
        GradeComponent(name="test_evidence", score=1.0, passed=True, dimension="test_evidence"),
        GradeComponent(name="reviewability", score=1.0, passed=True, dimension="reviewability"),
        unavailable,
    ]
    result = graded_result(
        TASK, "s", components, load_profile(profile), patch="", changes=[ChangedFile(path="src/a.py", lines_added=1)]
    )
    assert (result.status, result.decision) == (status, decision)
    if profile == "strict":
        assert result.reason_codes == ["detector-unavailable"]
    assert result.component("security").reason_codes == ["detector-unavailable"]
    assert not result.component("security").scored
