"""ReviewabilityGrader: size, scope and quality-delta aspects, scored by the profile's review policy."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_task
from gradeflow.graders import GradingContext, InMemoryWorkspace, ReviewabilityGrader
from gradeflow.models import ChangedFile, GradeComponent, TaskSpec
from gradeflow.models.evidence import FunctionChange, FunctionMetrics
from gradeflow.profiles import ReviewPolicy

POLICY = ReviewPolicy(small_diff=10, large_diff=110, max_complexity=5, max_function_length=20)


def _fn(name: str, before: tuple[int, int] | None, after: tuple[int, int] | None) -> FunctionChange:
    """A touched function with (length, complexity) before and after."""

    def side(value: tuple[int, int] | None) -> FunctionMetrics | None:
        if value is None:
            return None
        return FunctionMetrics(path="src/a.py", name=name, lineno=1, length=value[0], complexity=value[1])

    return FunctionChange(path="src/a.py", name=name, before=side(before), after=side(after))


def _grade(
    changes: list[ChangedFile],
    functions: list[FunctionChange] | None = None,
    policy: ReviewPolicy = POLICY,
    **task: Any,
) -> GradeComponent:
    spec = TaskSpec.model_validate(make_task(**task))
    context = GradingContext(task=spec, workspace=InMemoryWorkspace(changes=changes), changed_functions=functions or [])
    return ReviewabilityGrader(policy).grade(context)


def _lines(path: str, added: int, removed: int = 0, status: str = "modified") -> ChangedFile:
    return ChangedFile(path=path, lines_added=added, lines_removed=removed, status=status)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("lines", "size"),
    [(0, 1.0), (10, 1.0), (60, 0.5), (110, 0.0), (500, 0.0)],
)
def test_size_is_linear_between_the_profile_bounds(lines: int, size: float) -> None:
    component = _grade([_lines("src/a.py", lines)])
    assert component.details["aspects"]["size"] == size
    assert component.score == size  # the only aspect with evidence
    assert ("large-diff" in component.reason_codes) is (size < 1)


def test_test_files_never_cost_reviewability() -> None:
    component = _grade(
        [_lines("src/a.py", 5), _lines("tests/test_a.py", 500, status="added")],
        constraints={"allowed_files": ["src/**"]},
    )
    assert (component.score, component.passed, component.details["lines_changed"]) == (1.0, True, 5)


@pytest.mark.parametrize(
    ("task", "scope"),
    [
        ({"constraints": {"allowed_files": ["src/**"]}}, 0.5),
        ({"review": {"expected_files": ["src/a.py", "docs/**"]}}, 1.0),
        ({"review": {"expected_files": ["src/a.py"]}, "constraints": {"allowed_files": ["**"]}}, 0.5),
        ({}, None),  # no scope declared: the aspect is skipped
    ],
)
def test_scope_counts_files_outside_the_expected_ones(task: dict[str, Any], scope: float | None) -> None:
    component = _grade([_lines("src/a.py", 1), _lines("docs/notes.md", 1)], **task)
    assert component.details["aspects"]["scope"] == scope
    assert ("scope-expansion" in component.reason_codes) is (scope == 0.5)


@pytest.mark.parametrize(
    ("functions", "complexity", "length"),
    [
        ([_fn("f", (10, 2), (12, 3))], 1.0, 1.0),  # grew, but within the limits
        ([_fn("f", (30, 9), (31, 10))], 0.0, 0.0),  # over the limits and worse than before
        ([_fn("f", (30, 9), (25, 7))], 1.0, 1.0),  # over the limits but better: a step in the right direction
        ([_fn("f", None, (25, 6)), _fn("g", (5, 1), (5, 1))], 0.5, 0.5),  # a new function over the limits
        ([_fn("gone", (50, 20), None)], None, None),  # deleted functions are no evidence
        ([], None, None),
    ],
)
def test_quality_deltas_on_touched_functions(
    functions: list[FunctionChange], complexity: float | None, length: float | None
) -> None:
    component = _grade([_lines("src/a.py", 1)], functions)
    assert component.details["aspects"]["complexity"] == complexity
    assert component.details["aspects"]["length"] == length
    assert ("complexity-increased" in component.reason_codes) is (complexity == 0 or complexity == 0.5)


def test_weighted_mean_of_the_aspects_with_evidence() -> None:
    policy = POLICY.model_copy(update={"weights": {"size": 2.0, "complexity": 1.0, "length": 1.0, "scope": 0.0}})
    component = _grade(
        [_lines("src/a.py", 60), _lines("docs/x.md", 1)],
        [_fn("f", None, (25, 6))],
        policy,
        constraints={"allowed_files": ["src/**"]},
    )
    assert component.score == pytest.approx((2 * 0.49 + 0 + 0) / 4)
    assert component.details["aspects"]["scope"] == 0.5  # reported, weighs nothing


def test_an_empty_patch_has_nothing_to_review() -> None:
    component = _grade([])
    assert (component.scored, component.dimension, component.short()) == (False, "reviewability", "reviewability=n/a")


def test_the_reviewability_step_must_gather_function_metrics() -> None:
    task = TaskSpec.model_validate(make_task())
    with pytest.raises(ValueError, match="no function metrics"):
        ReviewabilityGrader().grade(GradingContext(task=task, workspace=InMemoryWorkspace()))
