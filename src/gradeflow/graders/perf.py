"""PerfGrader: the candidate's benchmark against the pristine base's, log-scaled.

speedup = min(baseline) / min(candidate) over interleaved runs
score   = 0 below the noise floor, else min(1, log(speedup/noise_floor) / log(min_speedup/noise_floor))
passed  = speedup ≥ min_speedup

Non-finite or non-positive timings, and a candidate whose benchmark fails, score 0
(``perf-benchmark-failed``). So does a run whose figures cannot be trusted:

- ``perf-benchmark-modified``: the patch (or its setup) changed a sealed benchmark file. Every run used
  the base's file; the speed-up measured that way is still shown.
- ``perf-output-mismatch``: a run's output failed ``perf.check`` or hashed unlike the base's
  (``perf.compare_output``).
- ``perf-timing-implausible`` (``timing: reported``): a reported figure is non-finite or not positive,
  larger than the wall time of its own process (:data:`WALL_SLACK` of slack), or the candidate's
  processes spend more unreported time than the base's: the least wall-minus-reported time of a
  candidate run exceeds the base's by more than :data:`MAX_UNREPORTED_GROWTH` of the base's reported
  time. A benchmark that forges a small figure leaves its real time unreported, so its unreported time
  grows by what it hides; an honest one's does not, however much start-up time the process has
  (the least over the runs filters the machine's noise). Both speed-ups are shown.
"""

from __future__ import annotations

import math

from gradeflow.graders.base import Grader, GradingContext
from gradeflow.models import GradeComponent, PerfSpec
from gradeflow.models.evidence import PerfEvidence

__all__ = ["MAX_UNREPORTED_GROWTH", "WALL_SLACK", "PerfGrader", "perf_score", "slower_than_reported"]

MAX_UNREPORTED_GROWTH = 0.5
"""How much more unreported time a candidate run may have than a base run, as a share of the base's
reported time: a forger can claim at most this much of the base's time away (2x) without being caught."""
WALL_SLACK = 0.001
"""Seconds a reported figure may exceed its process's wall time (rounding), never more."""


def perf_score(speedup: float, noise_floor: float, min_speedup: float) -> float:
    """The log-scaled score of a speed-up; 0 for a non-finite or non-positive one."""
    if not math.isfinite(speedup) or speedup <= 0 or speedup < noise_floor:
        return 0.0
    return min(1.0, math.log(speedup / noise_floor) / math.log(min_speedup / noise_floor))


def _usable(samples: list[float]) -> bool:
    return bool(samples) and all(math.isfinite(s) and s > 0 for s in samples)


def slower_than_reported(side: str, reported: list[float], wall: list[float]) -> list[str]:
    """One message per run whose reported seconds exceed its process's wall time (a forged figure)."""
    return [
        f"{side} run {run} reported {r:g} s but its process ran {w:g} s"
        for run, (r, w) in enumerate(zip(reported, wall, strict=False), start=1)
        if r > w + WALL_SLACK
    ]


def _implausible(evidence: PerfEvidence, details: dict[str, object]) -> list[str]:
    """Why the reported timings cannot be believed (``timing: reported`` only); fills in the wall figures."""
    why = [*evidence.implausible, *slower_than_reported("candidate", evidence.candidate, evidence.candidate_wall)]
    if _usable(evidence.baseline_wall) and _usable(evidence.candidate_wall):
        wall = min(evidence.baseline_wall) / min(evidence.candidate_wall)
        details["wall_speedup"] = round(wall, 4)
        if _usable(evidence.baseline) and _usable(evidence.candidate):
            why += _unreported_growth(evidence)
    return why


def _unreported_growth(evidence: PerfEvidence) -> list[str]:
    """A message when the candidate's runs leave much more of their wall time unreported than the base's."""
    base = min(w - r for w, r in zip(evidence.baseline_wall, evidence.baseline, strict=False))
    candidate = min(w - r for w, r in zip(evidence.candidate_wall, evidence.candidate, strict=False))
    allowed = MAX_UNREPORTED_GROWTH * min(evidence.baseline)
    if candidate - base <= allowed:
        return []
    return [
        f"the candidate's runs spent {candidate - base:.3f} s more outside their reported time than the base's, "
        f"more than {MAX_UNREPORTED_GROWTH:.0%} of the base's reported {min(evidence.baseline):.3f} s"
    ]


def _integrity(spec: PerfSpec, evidence: PerfEvidence, details: dict[str, object]) -> tuple[list[str], list[str]]:
    """The reason codes and messages of figures that cannot be trusted, in a fixed order."""
    codes: list[str] = []
    messages: list[str] = []
    if evidence.modified:
        codes.append("perf-benchmark-modified")
        messages.append(f"sealed benchmark files changed (the base's were run): {', '.join(evidence.modified)}")
    if evidence.mismatches:
        codes.append("perf-output-mismatch")
        messages += evidence.mismatches
    implausible = _implausible(evidence, details) if spec.timing == "reported" else []
    if implausible:
        codes.append("perf-timing-implausible")
        messages += implausible
    return codes, messages


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
        if spec.timing == "reported":
            details.update(baseline_wall=evidence.baseline_wall, candidate_wall=evidence.candidate_wall)
        if evidence.modified:
            details["modified"] = evidence.modified
        if evidence.unchanged:
            details["speedup"] = 1.0
            return self._scored(spec, 1.0, details)
        usable = _usable(evidence.baseline) and _usable(evidence.candidate)
        if usable:
            details["speedup"] = round(min(evidence.baseline) / min(evidence.candidate), 4)
        codes, messages = _integrity(spec, evidence, details)
        if codes and usable:
            messages.insert(0, f"speed-up {details['speedup']}x measured, not scored")
        if evidence.errors or not (usable or codes):
            codes.append("perf-benchmark-failed")
            messages += evidence.errors or ["a timing was missing, non-finite or not positive"]
        if codes:
            return self.component(0.0, False, details=details, messages=messages, reason_codes=codes)
        return self._scored(spec, min(evidence.baseline) / min(evidence.candidate), details)

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
