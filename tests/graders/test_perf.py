import math

import pytest

from builders import make_task
from gradeflow.graders import GradingContext, InMemoryWorkspace, PerfGrader, perf_score
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import PerfEvidence


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


def _reported(**fields: object):
    task = TaskSpec.model_validate(
        make_task(type="perf", perf={"command": "python bench.py --report", "timing": "reported"})
    )
    evidence = PerfEvidence.model_validate(fields)
    return PerfGrader().grade(GradingContext(task=task, workspace=InMemoryWorkspace(), perf=evidence))


@pytest.mark.parametrize(
    ("fields", "codes", "message"),
    [
        # An honest 2x: reported 2.0x, wall 1.6x (the process's start-up is in the wall time only).
        (
            {"baseline": [1.0], "candidate": [0.5], "baseline_wall": [1.25], "candidate_wall": [0.78]},
            ["perf-below-min-speedup"],
            "speed-up 2.00x (needs 4x)",
        ),
        # An atexit handler prints {"seconds": 0.0001}: 10,000x reported, 1x wall.
        (
            {"baseline": [1.0], "candidate": [0.0001], "baseline_wall": [1.2], "candidate_wall": [1.2]},
            ["perf-timing-implausible"],
            "the candidate's runs spent 1.000 s more outside their reported time than the base's, "
            "more than 50% of the base's reported 1.000 s",
        ),
        # An honest 2x whose process start-up dwarfs the timed region, on a noisy machine: the wall
        # speed-up is lost in the noise, but the least unreported time is the same on both sides.
        (
            {
                "baseline": [0.1, 0.1, 0.1],
                "candidate": [0.05, 0.05, 0.05],
                "baseline_wall": [1.3, 1.1, 1.2],
                "candidate_wall": [1.06, 1.2, 1.25],
            },
            ["perf-below-min-speedup"],
            "speed-up 2.00x (needs 4x)",
        ),
        # Claiming a little under half the base's time away is still believed.
        (
            {"baseline": [1.0], "candidate": [0.2], "baseline_wall": [1.0], "candidate_wall": [0.6]},
            [],
            "speed-up 5.00x (needs 4x)",
        ),
        # ... a little over is not.
        (
            {"baseline": [1.0], "candidate": [0.2], "baseline_wall": [1.0], "candidate_wall": [0.75]},
            ["perf-timing-implausible"],
            "the candidate's runs spent 0.550 s more outside their reported time than the base's, "
            "more than 50% of the base's reported 1.000 s",
        ),
        # A reported time longer than the process ran.
        (
            {"baseline": [1.0], "candidate": [0.9, 0.5], "baseline_wall": [1.1], "candidate_wall": [0.95, 0.4]},
            ["perf-timing-implausible"],
            "candidate run 2 reported 0.5 s but its process ran 0.4 s",
        ),
        # A figure that is no time at all, recorded by the task.
        (
            {"baseline": [1.0], "baseline_wall": [1.1], "implausible": ["candidate run 1 reported inf seconds"]},
            ["perf-timing-implausible"],
            "candidate run 1 reported inf seconds",
        ),
    ],
)
def test_reported_timings_must_be_plausible(fields: dict[str, object], codes: list[str], message: str) -> None:
    component = _reported(**fields)
    assert component.reason_codes == codes
    assert message in component.messages
    assert (component.score == 0.0) is ("perf-timing-implausible" in codes)


def test_both_speedups_are_shown() -> None:
    component = _reported(baseline=[1.0], candidate=[0.0001], baseline_wall=[1.2], candidate_wall=[1.0])
    assert (component.details["speedup"], component.details["wall_speedup"]) == (10000.0, 1.2)
    assert component.details["candidate_wall"] == [1.0]
    assert component.messages[0] == "speed-up 10000.0x measured, not scored"


def test_wall_timing_never_applies_the_plausibility_rules() -> None:
    component = _grade([1.0], [0.25])
    assert "wall_speedup" not in component.details and "baseline_wall" not in component.details
    assert component.reason_codes == []


@pytest.mark.parametrize(
    ("fields", "codes"),
    [
        ({"mismatches": ["candidate run 1: perf.check exited 1"]}, ["perf-output-mismatch"]),
        ({"modified": ["bench.py"]}, ["perf-benchmark-modified"]),
        (
            {"modified": ["bench.py"], "mismatches": ["candidate run 1: its output differs"]},
            ["perf-benchmark-modified", "perf-output-mismatch"],
        ),
        (
            {"mismatches": ["candidate run 2: its output differs"], "errors": ["candidate run 3: exit code 1"]},
            ["perf-output-mismatch", "perf-benchmark-failed"],
        ),
    ],
)
def test_a_faster_wrong_or_edited_benchmark_scores_zero(fields: dict[str, object], codes: list[str]) -> None:
    task = TaskSpec.model_validate(make_task(type="perf", perf={"command": "python bench.py"}))
    evidence = PerfEvidence.model_validate({"baseline": [1.0], "candidate": [0.1], **fields})
    component = PerfGrader().grade(GradingContext(task=task, workspace=InMemoryWorkspace(), perf=evidence))
    assert (component.score, component.passed, component.reason_codes) == (0.0, False, codes)
    assert component.details["speedup"] == 10.0
    assert component.messages[0] == "speed-up 10.0x measured, not scored"
