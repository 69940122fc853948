"""CompositeGrader arithmetic, decisions, custom graders."""

from pathlib import Path

import pytest

from builders import make_task
from gradeflow.errors import SpecError
from gradeflow.graders import CompositeGrader, Grader, GradingContext, InMemoryWorkspace, combine
from gradeflow.graders.composite import load_custom_grader, safe_grade
from gradeflow.graders.verdict import decide, graded_result
from gradeflow.models import ChangedFile, CustomGraderSpec, GradeComponent, TaskSpec
from gradeflow.models.reasons import unknown_reason_codes
from gradeflow.profiles import Profile, load_profile


def _c(name: str, score: float, passed: bool, role: str = "objective") -> GradeComponent:
    return GradeComponent(name=name, score=score, passed=passed, role=role)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("components", "weights", "score", "passed"),
    [
        ([_c("tests", 1.0, True), _c("constraints", 1.0, True, "gate")], {}, 1.0, True),
        ([_c("tests", 0.5, False), _c("perf", 1.0, True)], {"tests": 3.0, "perf": 1.0}, 0.625, False),
        ([_c("tests", 1.0, True), _c("constraints", 0.5, False, "gate")], {}, 0.0, False),
        ([_c("tests", 0.8, False), _c("quality", 0.0, False)], {"quality": 0.0}, 0.8, False),
        ([_c("constraints", 1.0, True, "gate")], {}, 0.0, False),  # no objective: nothing earned
    ],
)
def test_combine_table(components: list[GradeComponent], weights: dict[str, float], score: float, passed: bool) -> None:
    combined = combine(components, weights, pass_threshold=0.5)
    assert combined.score == pytest.approx(score)
    assert combined.passed is passed


def test_weights_are_recorded_on_objectives_only() -> None:
    combined = combine([_c("tests", 1, True), _c("constraints", 1, True, "gate")], {"tests": 2.0}, 1.0)
    assert [c.weight for c in combined.components] == [2.0, None]


def test_pass_threshold_applies_to_the_score() -> None:
    assert not combine([_c("tests", 0.9, True)], {}, pass_threshold=1.0).passed
    assert combine([_c("tests", 0.9, True)], {}, pass_threshold=0.9).passed


@pytest.mark.parametrize(
    ("score", "gate_failed", "decision"),
    [
        (1.0, False, "merge-candidate"),
        (0.85, False, "merge-candidate"),
        (0.84, False, "human-review"),
        (0.60, False, "human-review"),
        (0.59, False, "retry"),
        (1.0, True, "rejected"),
    ],
)
def test_default_profile_bands(score: float, gate_failed: bool, decision: str) -> None:
    assert decide(score, gate_failed, load_profile("default").bands, passed=True) == decision


def test_hard_gate_reason_codes_reject_whatever_the_score() -> None:
    task = TaskSpec.model_validate(make_task())
    profile = Profile(
        name="p",
        hard_gates=["security-finding"],
        reason_codes={"security-finding": "a custom grader's"},
        pass_threshold=0.5,
    )
    flagged = _c("tests", 1.0, True).model_copy(update={"reason_codes": ["security-finding"]})
    result = graded_result(task, "s", [flagged], profile, patch="", changes=[ChangedFile(path="a")])
    assert (result.decision, result.passed) == ("rejected", False)


def test_empty_patch_is_reported() -> None:
    task = TaskSpec.model_validate(make_task())
    result = graded_result(task, "s", [_c("tests", 0.0, False)], load_profile("default"), patch="", changes=[])
    assert result.reason_codes[0] == "empty-patch"
    assert result.summary() == "FAIL 0.000 (tests=0.00✗)"


class NoTodoGrader(Grader):
    """The grading-semantics example, written against the public API."""

    name = "no_todo"

    def grade(self, workspace):  # type: ignore[no-untyped-def, override]
        bad = [f for f in workspace.changed_files() if "TODO" in workspace.read(f)]
        return GradeComponent(
            name=self.name, score=float(not bad), passed=not bad, messages=[f"TODO in {f}" for f in bad]
        )


class Exploding(Grader):
    name = "exploding"

    def grade(self, context: GradingContext) -> GradeComponent:
        raise RuntimeError("boom")


def _context(files: dict[str, str]) -> GradingContext:
    changes = [ChangedFile(path=p) for p in files]
    return GradingContext(task=TaskSpec.model_validate(make_task()), workspace=InMemoryWorkspace(files, changes))


@pytest.mark.parametrize(("text", "score"), [("x = 1  # TODO", 0.0), ("x = 1", 1.0)])
def test_custom_grader_from_the_spec_example(text: str, score: float) -> None:
    composite = CompositeGrader([NoTodoGrader()], weights={"no_todo": 0.2})
    components = composite.grade_components(_context({"src/a.py": text}))
    assert components[0].score == score
    assert composite.combine(components).score == score


def test_a_grader_that_raises_is_unscored_not_a_zero() -> None:
    component = safe_grade(Exploding(), _context({}))
    assert (component.name, component.scored, component.passed) == ("exploding", False, False)
    assert component.reason_codes == ["grader-error"]
    assert "RuntimeError: boom" in component.messages[0]


class ExplodingReview(Exploding):
    dimension = "reviewability"


def test_a_raising_grader_leaves_its_dimension_missing_and_the_others_scored() -> None:
    profile = load_profile("rubric")
    task = TaskSpec.model_validate(make_task())
    composite = CompositeGrader([ExplodingReview()], profile=profile)
    behaving = GradeComponent(name="tests", score=1.0, passed=True)
    evidence = GradeComponent(name="test_evidence", score=1.0, passed=True, dimension="test_evidence")
    result = graded_result(
        task,
        "s",
        [behaving, evidence, *composite.grade_components(_context({}))],
        composite,
        patch="",
        changes=[ChangedFile(path="a")],
    )
    # A counted zero would make reviewability 0.0 and the score 0.8; unscored, it is reweighted away.
    assert result.dimensions["reviewability"] is None
    assert result.score == pytest.approx(1.0)
    assert result.passed and "grader-error" in result.reason_codes


class ExplodingGate(Exploding):
    role = "gate"


def test_a_raising_gate_grader_rejects_nothing() -> None:
    composite = CompositeGrader([ExplodingGate()])
    components = [GradeComponent(name="tests", score=1.0, passed=True), *composite.grade_components(_context({}))]
    combined = composite.combine(components)
    assert (combined.gate_failed, combined.score, combined.passed) == (False, 1.0, True)


def test_custom_graders_weights_sit_between_the_profiles_and_the_tasks() -> None:
    profile = Profile(name="p", weights={"a": 1.0, "b": 1.0, "c": 1.0})
    task = TaskSpec.model_validate(make_task(grading={"weights": {"c": 5.0}}))

    class B(Exploding):
        name = "b"

    spec = CustomGraderSpec(use="x:B", weight=3.0)
    composite = CompositeGrader.for_task(task, profile, [(B(), spec)])
    assert {k: composite.weights[k] for k in "abc"} == {"a": 1.0, "b": 3.0, "c": 5.0}


def test_a_profile_naming_an_unknown_hard_gate_is_a_one_line_spec_error(tmp_path: Path) -> None:
    typo = tmp_path / "typo.yaml"
    typo.write_text("name: typo\nhard_gates: [junit-tamperd]\n")
    with pytest.raises(SpecError) as caught:
        load_profile(str(typo))
    assert str(caught.value).count("\n") == 0
    assert "hard_gates" in str(caught.value) and "'junit-tamperd'" in str(caught.value)


def test_a_custom_graders_declared_codes_may_be_hard_gates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "declaring_grader.py"
    module.write_text(
        "from gradeflow.graders import Grader\nclass G(Grader):\n    name = 'g'\n"
        "    reason_codes = {'license-missing-x': 'no header'}\n    def grade(self, c):\n        raise RuntimeError\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert unknown_reason_codes(["license-missing-x"]) == ["license-missing-x"]
    load_custom_grader(CustomGraderSpec(use="declaring_grader:G"))
    assert Profile(name="p", hard_gates=["license-missing-x"]).hard_gates == ["license-missing-x"]
