import math

import pytest

from builders import make_task
from gradeflow.evidence import PerfEvidence
from gradeflow.graders import GradingContext, InMemoryWorkspace, PerfGrader, perf_score
from gradeflow.models import TaskSpec


@pytest.mark.parametrize(
    ("speedup", "expected"),
    [
        (2.0, 0.4439),  # the spec's worked example: 2x with min_speedup 4 scores about 0.45
        (4.0, 1.0),
        (8.0, 1.0),
        (1.15, 0.0),
        (1.10, 0.0),
        (1.0, 0.0),
        (0.5, 0.0),
        (float("nan"), 0.0),
        (float("inf"), 0.0),
        (-3.0, 0.0),
        (0.0, 0.0),
    ],
)
def test_perf_score_table(speedup: float, expected: float) -> None:
    assert perf_score(speedup, 1.15, 4.0) == pytest.approx(expected, abs=1e-4)


def test_perf_score_is_log_scaled_between_floor_and_target() -> None:
    assert perf_score(2.0, 1.15, 4.0) == pytest.approx(math.log(2 / 1.15) / math.log(4 / 1.15))


def _grade(baseline: list[float], candidate: list[float], errors: list[str] | None = None, **perf: object):
    task = TaskSpec.model_validate(make_task(type="perf", perf={"command": "python bench.py", **perf}))
    evidence = PerfEvidence(baseline=baseline, candidate=candidate, errors=errors or [])
    return PerfGrader().grade(GradingContext(task=task, workspace=InMemoryWorkspace(), perf=evidence))


@pytest.mark.parametrize(
    ("baseline", "candidate", "score", "passed", "codes"),
    [
        ([1.0, 1.2, 1.1], [0.25, 0.3, 0.26], 1.0, True, []),  # minimum of each side: 1.0 / 0.25 = 4x
        ([1.0, 0.9], [0.5, 0.45], 0.4439, False, ["perf-below-min-speedup"]),
        ([1.0], [0.95], 0.0, False, ["perf-below-noise-floor"]),
        ([1.0], [2.0], 0.0, False, ["perf-below-noise-floor"]),
        ([1.0], [0.0], 0.0, False, ["perf-benchmark-failed"]),  # non-positive timing
        ([1.0], [float("nan")], 0.0, False, ["perf-benchmark-failed"]),
        ([1.0], [], 0.0, False, ["perf-benchmark-failed"]),
    ],
)
def test_perf_grader_table(
    baseline: list[float], candidate: list[float], score: float, passed: bool, codes: list[str]
) -> None:
    component = _grade(baseline, candidate)
    assert component.score == pytest.approx(score, abs=1e-4)
    assert component.passed is passed
    assert component.reason_codes == codes
    assert component.details["baseline"] == baseline


def test_perf_grader_reports_failed_candidate_runs() -> None:
    component = _grade([1.0], [0.1], errors=["candidate run 1: exit code 1"])
    assert (component.score, component.passed) == (0.0, False)
    assert component.messages == ["candidate run 1: exit code 1"]


def test_an_unchanged_submission_is_not_faster() -> None:
    task = TaskSpec.model_validate(make_task(type="perf", perf={"command": "python bench.py"}))
    context = GradingContext(task=task, workspace=InMemoryWorkspace(), perf=PerfEvidence(unchanged=True))
    component = PerfGrader().grade(context)
    assert (component.score, component.passed, component.details["speedup"]) == (0.0, False, 1.0)
    assert component.reason_codes == ["perf-below-noise-floor"]


def test_perf_grader_is_an_objective() -> None:
    assert _grade([1.0], [0.2]).role == "objective"
