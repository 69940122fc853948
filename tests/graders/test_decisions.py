"""Decisions agree with ``passed``: a grade that did not pass is never a merge candidate, in any profile.

A patch that fixes the issue and breaks an existing test scores high under ``require_all_pass_to_pass:
false`` (``score × (1 − broken/total)``) and fails; the bands alone would call it ``merge-candidate``.
"""

from __future__ import annotations

import pytest

from builders import make_task
from gradeflow.graders.verdict import graded_result
from gradeflow.models import ChangedFile, GradeComponent, TaskSpec
from gradeflow.profiles import load_profile

TASK = TaskSpec.model_validate(make_task(tests={"command": "pytest --junitxml={junit}", "fail_to_pass": ["t.py::f"]}))
CHANGED = [ChangedFile(path="src/calc.py", lines_added=1)]


def _tests(score: float, passed: bool, codes: list[str]) -> GradeComponent:
    return GradeComponent(name="tests", role="objective", score=score, passed=passed, reason_codes=codes)


def _evidence(name: str, dimension: str) -> GradeComponent:
    return GradeComponent(name=name, role="objective", dimension=dimension, score=1.0, passed=True)


COMPONENTS = {
    "p2p-broken-high-score": [_tests(0.987, False, ["pass-to-pass-broken"])],
    "below-threshold-in-band": [_tests(0.9, False, [])],
    "perfect": [_tests(1.0, True, [])],
}
EXPECTED = {
    ("default", "p2p-broken-high-score"): "human-review",
    ("rubric", "p2p-broken-high-score"): "rejected",
    ("strict", "p2p-broken-high-score"): "rejected",
    ("default", "below-threshold-in-band"): "human-review",
    ("rubric", "below-threshold-in-band"): "human-review",
    ("strict", "below-threshold-in-band"): "human-review",
    ("default", "perfect"): "merge-candidate",
    ("rubric", "perfect"): "merge-candidate",
    ("strict", "perfect"): "merge-candidate",
}


@pytest.mark.parametrize(("profile", "case"), sorted(EXPECTED))
def test_the_decision_agrees_with_passed(profile: str, case: str) -> None:
    components = [*COMPONENTS[case], _evidence("test-evidence", "test_evidence"), _evidence("review", "reviewability")]
    policy = load_profile(profile)
    result = graded_result(TASK, "s", components, policy, patch="x", changes=CHANGED)
    assert result.decision == EXPECTED[(profile, case)], result.messages
    assert result.passed == (case == "perfect")
    if result.decision == "merge-candidate":
        assert result.passed
    if case == "p2p-broken-high-score":
        assert "pass-to-pass-broken" in result.reason_codes
    if result.decision == "human-review" and (result.score or 0) >= policy.bands.merge_candidate:
        assert any(m.startswith("not passed") for m in result.messages), result.messages
