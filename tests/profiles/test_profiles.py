"""Profiles: shipped and user files, dimension arithmetic, missing evidence, hard gates, the spec's worked example."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from builders import make_task
from gradeflow.errors import SpecError
from gradeflow.graders import CompositeGrader, combine
from gradeflow.graders.verdict import decide, graded_result
from gradeflow.models import ChangedFile, GradeComponent, TaskSpec
from gradeflow.profiles import Profile, available_profiles, load_profile

TASK = TaskSpec.model_validate(make_task())
CHANGED = [ChangedFile(path="src/a.py", lines_added=3)]


def _c(name: str, score: float, passed: bool = True, dimension: str = "behavior", **more: object) -> GradeComponent:
    return GradeComponent.model_validate(
        {"name": name, "score": score, "passed": passed, "dimension": dimension, **more}
    )


def _rubric(behavior: float, test_evidence: float | None, reviewability: float | None) -> list[GradeComponent]:
    found = [_c("tests", behavior, behavior == 1.0)]
    if test_evidence is not None:
        found.append(_c("test_evidence", test_evidence, test_evidence == 1.0, "test_evidence"))
    if reviewability is not None:
        found.append(_c("reviewability", reviewability, reviewability == 1.0, "reviewability"))
    return found


def test_shipped_profiles_load_and_are_listed() -> None:
    assert {"default", "rubric", "strict"} <= set(available_profiles())
    for name in available_profiles():
        assert load_profile(name).name == name


@pytest.mark.parametrize(
    ("behavior", "test_evidence", "reviewability", "score", "decision"),
    [
        (0.8, 0.6, 1.0, 0.78, "human-review"),  # the spec's worked example
        (1.0, 1.0, 1.0, 1.0, "merge-candidate"),
        (1.0, 0.0, 1.0, 0.70, "human-review"),  # a correct fix without a regression test
        (1.0, 0.25, 1.0, 0.775, "human-review"),  # its "test" passes on the base too
        (0.5, 0.0, 0.5, 0.35, "retry"),
        (1.0, None, 1.0, 1.0, "merge-candidate"),  # a refactor: no test evidence, reweighted (0.5 + 0.2) / 0.7
        (0.8, None, 0.5, 0.714286, "human-review"),
        (0.0, 0.0, None, 0.0, "retry"),  # an empty patch: nothing to review
    ],
)
def test_rubric_profile_table(
    behavior: float, test_evidence: float | None, reviewability: float | None, score: float, decision: str
) -> None:
    result = graded_result(
        TASK, "s", _rubric(behavior, test_evidence, reviewability), load_profile("rubric"), patch="", changes=CHANGED
    )
    assert (result.status, result.score, result.decision) == ("graded", pytest.approx(score), decision)
    assert result.dimensions == {"behavior": behavior, "test_evidence": test_evidence, "reviewability": reviewability}
    assert result.profile == "rubric"


def test_worked_example_arithmetic_is_exactly_the_spec() -> None:
    combined = combine(_rubric(0.8, 0.6, 1.0), {}, 0.85, load_profile("rubric"))
    assert combined.score == 0.78 and combined.dimensions == {
        "behavior": 0.8,
        "test_evidence": 0.6,
        "reviewability": 1.0,
    }
    assert decide(combined.score, False, load_profile("rubric").bands, passed=False) == "human-review"


def test_missing_required_dimension_is_inconclusive_not_zero() -> None:
    only_evidence = [_c("test_evidence", 1.0, True, "test_evidence"), _c("reviewability", 1.0, True, "reviewability")]
    result = graded_result(TASK, "s", only_evidence, load_profile("rubric"), patch="", changes=CHANGED)
    assert (result.status, result.score, result.decision, result.reason_codes) == (
        "inconclusive",
        None,
        "inconclusive",
        ["dimension-missing"],
    )
    assert result.dimensions == {"behavior": None, "test_evidence": 1.0, "reviewability": 1.0}
    assert "behavior" in result.messages[0] and [c.name for c in result.components] == [
        "test_evidence",
        "reviewability",
    ]


def test_an_unscored_component_is_missing_evidence_never_a_zero() -> None:
    unscored = _c(
        "test_evidence", 0.0, False, "test_evidence", scored=False, reason_codes=["test-evidence-unavailable"]
    )
    result = graded_result(
        TASK,
        "s",
        [_c("tests", 1.0), unscored, _c("reviewability", 1.0, True, "reviewability")],
        load_profile("rubric"),
        patch="",
        changes=CHANGED,
    )
    assert (result.score, result.dimensions["test_evidence"], result.decision) == (1.0, None, "merge-candidate")
    assert result.component("test_evidence").short() == "test_evidence=n/a"
    assert "test-evidence-unavailable" in result.reason_codes


def test_default_profile_reports_behavior_only_and_keeps_the_old_arithmetic() -> None:
    components = [_c("tests", 0.5, False), _c("perf", 1.0), _c("constraints", 1.0, role="gate")]
    composite = CompositeGrader(weights={"tests": 3.0, "perf": 1.0}, profile=load_profile("default"))
    result = graded_result(TASK, "s", components, composite, patch="", changes=CHANGED)
    assert (result.score, result.passed, result.dimensions) == (0.625, False, {"behavior": 0.625})


def test_dimension_weight_zero_reports_without_scoring_or_blocking() -> None:
    profile = Profile(
        name="p", pass_threshold=1.0, dimensions={"behavior": {"weight": 1}, "test_evidence": {"weight": 0}}
    )
    missing_test = _c("test_evidence", 0.0, False, "test_evidence", reason_codes=["missing-regression-test"])
    result = graded_result(TASK, "s", [_c("tests", 1.0), missing_test], profile, patch="", changes=CHANGED)
    assert (result.score, result.passed, result.dimensions) == (1.0, True, {"behavior": 1.0, "test_evidence": 0.0})
    assert result.reason_codes == [] and result.component("test_evidence").reason_codes == ["missing-regression-test"]


def test_must_pass_and_pass_threshold() -> None:
    profile = load_profile("rubric")  # test evidence and reviewability need not pass; behavior must
    lenient = graded_result(TASK, "s", _rubric(1.0, 1.0, 0.9), profile, patch="", changes=CHANGED)
    assert (lenient.score, lenient.passed) == (0.98, True)
    partial = graded_result(
        TASK, "s", [_c("tests", 0.95, False), *_rubric(1, 1, 1)[1:]], profile, patch="", changes=CHANGED
    )
    # Behavior did not pass: in the merge band, but never a merge candidate (issue 23).
    assert (partial.decision, partial.passed) == ("human-review", False)


@pytest.mark.parametrize("code", ["pass-to-pass-broken", "protected-file-modified", "security-violation", "data-loss"])
def test_rubric_hard_gates_reject_whatever_the_score(code: str) -> None:
    components = _rubric(1.0, 1.0, 1.0)
    components[0] = components[0].model_copy(update={"reason_codes": [code]})
    result = graded_result(TASK, "s", components, load_profile("rubric"), patch="", changes=CHANGED)
    assert (result.decision, result.passed, result.messages) == ("rejected", False, [f"hard gate: {code}"])


def test_a_failed_gate_still_zeroes_every_profile() -> None:
    components = [*_rubric(1.0, 1.0, 1.0), _c("constraints", 0.5, False, role="gate")]
    result = graded_result(TASK, "s", components, load_profile("rubric"), patch="", changes=CHANGED)
    assert (result.score, result.decision) == (0.0, "rejected")


def test_strict_rejects_a_fix_without_regression_test() -> None:
    components = _rubric(1.0, 0.0, 1.0)
    components[1] = components[1].model_copy(update={"reason_codes": ["missing-regression-test"]})
    result = graded_result(TASK, "s", components, load_profile("strict"), patch="", changes=CHANGED)
    assert (result.decision, result.passed) == ("rejected", False)


def test_components_can_be_remapped_and_unknown_dimensions_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "mine",
                "dimensions": {"behavior": {"weight": 0.5}, "quality": {"weight": 0.5}},
                "components": {"reviewability": "quality"},
            }
        )
    )
    profile = load_profile(str(path))
    components = [_c("tests", 1.0), _c("reviewability", 0.5, False, "reviewability"), _c("x", 0.0, False, "security")]
    result = graded_result(TASK, "s", components, profile, patch="", changes=CHANGED)
    assert (result.score, result.dimensions) == (0.75, {"behavior": 1.0, "quality": 0.5})
    assert result.messages == [
        "component x belongs to dimension 'security', which profile 'mine' does not name: reported, not scored"
    ]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"name": "p", "dimensions": {"behavior": {"weight": 0}}}, "at least one dimension must weigh more than 0"),
        ({"name": "p", "components": {"tests": "nowhere"}}, "undeclared dimensions nowhere"),
        ({"name": "p", "dimensions": {"behavior": {"missing": "zero"}}}, "dimensions.behavior.missing"),
        ({"name": "p", "review": {"small_diff": 50, "large_diff": 10}}, "large_diff must be greater"),
        ({"name": "p", "colour": "red"}, "colour"),
    ],
)
def test_invalid_profile_files_are_spec_errors(tmp_path: Path, content: dict[str, object], expected: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(content))
    with pytest.raises(SpecError, match="invalid profile") as info:
        load_profile(str(path))
    assert expected in str(info.value) and str(path) in str(info.value)


def test_unknown_profile_names_the_shipped_ones() -> None:
    with pytest.raises(SpecError, match="shipped: default, rubric, strict"):
        load_profile("nope")
