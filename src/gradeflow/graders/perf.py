"""PerfGrader: the candidate's benchmark against the pristine base's, log-scaled.

speedup = min(baseline) / min(candidate) over interleaved runs
score   = 0 below the noise floor, else min(1, log(speedup/noise_floor) / log(min_speedup/noise_floor))
passed  = speedup ≥ min_speedup

Non-finite or non-positive timings, and a candidate whose benchmark fails, score 0.
"""

from __future__ import annotations

import math

from gradeflow.graders.base import Grader, GradingContext
from gradeflow.models import GradeComponent, PerfSpec

__all__ = ["PerfGrader", "perf_score"]


def perf_score(speedup: float, noise_floor: float, min_speedup: float) -> float:
    """The log-scaled score of a speed-up; 0 for a non-finite or non-positive one."""
    if not math.isfinite(speedup) or speedup <= 0 or speedup < noise_floor:
        return 0.0
    return min(1.0, math.log(speedup / noise_floor) / math.log(min_speedup / noise_floor))


def _usable(samples: list[float]) -> bool:
    return bool(samples) and all(math.isfinite(s) and s > 0 for s in samples)


class PerfGrader(Grader):
    """Objective: how much faster the candidate's benchmark runs than the base's."""

    name = "perf"

    def grade(self, context: GradingContext) -> GradeComponent:
        spec, evidence = context.task.perf, context.perf
        if spec is None or evidence is None:
            raise ValueError("the task declares no perf benchmark")
        details: dict[str, object] = {
            "baseline": evidence.baseline,
            "candidate": evidence.candidate,
            "errors": evidence.errors,
            "timing": spec.timing,
            "noise_floor": spec.noise_floor,
            "min_speedup": spec.min_speedup,
        }
        if evidence.unchanged:
            details["speedup"] = 1.0
            return self._scored(spec, 1.0, details)
        if evidence.errors or not (_usable(evidence.baseline) and _usable(evidence.candidate)):
            why = evidence.errors or ["a timing was missing, non-finite or not positive"]
            return self.component(0.0, False, details=details, messages=why, reason_codes=["perf-benchmark-failed"])
        speedup = min(evidence.baseline) / min(evidence.candidate)
        details["speedup"] = round(speedup, 4)
        return self._scored(spec, speedup, details)

    def _scored(self, spec: PerfSpec, speedup: float, details: dict[str, object]) -> GradeComponent:
        score = perf_score(speedup, spec.noise_floor, spec.min_speedup)
        passed = speedup >= spec.min_speedup
        messages, codes = [f"speed-up {speedup:.2f}x (needs {spec.min_speedup:g}x)"], []
        if speedup < spec.noise_floor:
            codes.append("perf-below-noise-floor")
            messages.append(f"{speedup:.2f}x is within the noise floor of {spec.noise_floor:g}x")
        elif not passed:
            codes.append("perf-below-min-speedup")
        return self.component(score, passed, details=details, messages=messages, reason_codes=codes)
