"""How many tasks a study needs to find a difference: ``gradeflow plan``. Pure.

The design is a paired comparison of two configurations on the same tasks, each task run ``runs``
times per configuration. One task's difference has variance ω² + 2σ_w²/runs (Miller 2024, "Adding
Error Bars to Evals", power analysis), with ω² the variance across tasks of the true difference and
σ_w² the variance of one run around its task's mean. The tasks needed are
⌈(z_{1−α/2} + z_{power})² · that variance / effect²⌉.

- From a rate alone nothing tells ω² from σ_w²: the figure assumes the worst case, every run of a task
  alike (σ_w² = 0) and the two configurations unrelated (ω² = p₁q₁ + p₂q₂), so more runs cannot help;
  the other extreme (runs independent, no task effect) is given as ``tasks_if_runs_independent``.
- From a ledger, σ_w² is the pooled within-task variance and ω² comes from the paired differences of
  the two configurations with the most shared tasks (their variance less the within-task part), or,
  with no two such configurations, 2σ_b² (the between-task variance, no pairing benefit assumed).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from gradeflow.errors import SpecError
from gradeflow.evaluation.statistics import tasks_needed, variance_components

__all__ = ["StudyPlan", "plan_from_rate", "plan_from_scores"]

Scores = Mapping[str, Mapping[str, Sequence[float]]]
"""Configuration → task → run scores."""


class StudyPlan(BaseModel):
    """The tasks a paired study needs, and the variance it was computed from."""

    effect: float
    runs_per_task: int
    alpha: float
    power: float
    task_variance: float
    """ω² (between tasks, of the difference)."""
    run_variance: float
    """σ_w² (one run around its task's mean)."""
    tasks: int
    """Tasks needed."""
    tasks_if_runs_independent: int | None = None
    """From a rate only: the count if runs of one task were as good as runs of different tasks."""
    source: str
    """Where the variances came from."""


def _check(effect: float, runs: int) -> None:
    if not 0 < effect < 1:
        raise SpecError(f"--effect must lie in (0, 1), got {effect}")
    if runs < 1:
        raise SpecError(f"--runs-per-task must be at least 1, got {runs}")


def plan_from_rate(rate: float, effect: float, runs: int = 1, alpha: float = 0.05, power: float = 0.8) -> StudyPlan:
    """The worst-case plan for telling a pass rate of ``rate`` from ``rate + effect``."""
    _check(effect, runs)
    if not 0 < rate < 1 or not 0 < rate + effect < 1:
        raise SpecError(f"--rate and --rate + --effect must lie in (0, 1), got {rate} and {rate + effect}")
    omega = rate * (1 - rate) + (rate + effect) * (1 - rate - effect)
    return StudyPlan(
        effect=effect,
        runs_per_task=runs,
        alpha=alpha,
        power=power,
        task_variance=omega,
        run_variance=0.0,
        tasks=tasks_needed(omega, effect, alpha, power),
        tasks_if_runs_independent=tasks_needed(omega / runs, effect, alpha, power),
        source=f"pass rate {rate:g} (binomial; runs of a task assumed alike)",
    )


def plan_from_scores(
    scores: Scores, effect: float, runs: int = 1, alpha: float = 0.05, power: float = 0.8
) -> StudyPlan:
    """The plan from a ledger's own between- and within-task variance (``scores``: config → task → runs)."""
    _check(effect, runs)
    pooled: dict[str, list[float]] = {}
    for config, tasks in scores.items():
        for task, values in tasks.items():
            pooled[f"{config}\0{task}"] = list(values)
    found = variance_components(pooled)
    if found is None:
        raise SpecError("--from-ledger: the ledger needs two tasks and a task run more than once to tell variances")
    omega, source = _paired_omega(scores, found.within)
    if omega is None:
        omega = 2 * found.between
        source = "ledger: one configuration per task, between-task variance doubled (no pairing benefit)"
    return StudyPlan(
        effect=effect,
        runs_per_task=runs,
        alpha=alpha,
        power=power,
        task_variance=omega,
        run_variance=found.within,
        tasks=tasks_needed(omega + 2 * found.within / runs, effect, alpha, power),
        source=source,
    )


def _paired_omega(scores: Scores, within: float) -> tuple[float | None, str]:
    """ω² from the two configurations sharing the most tasks (at least two), less the within-task part."""
    configs = sorted(scores)
    pairs = [(len(set(scores[a]) & set(scores[b])), a, b) for i, a in enumerate(configs) for b in configs[i + 1 :]]
    if not pairs or max(pairs)[0] < 2:
        return None, ""
    shared, a, b = min(pairs, key=lambda p: (-p[0], p[1], p[2]))
    tasks = sorted(set(scores[a]) & set(scores[b]))
    diffs = [statistics.fmean(scores[a][t]) - statistics.fmean(scores[b][t]) for t in tasks]
    noise = statistics.fmean(within / len(scores[a][t]) + within / len(scores[b][t]) for t in tasks)
    omega = max(0.0, statistics.variance(diffs) - noise)
    return omega, f"ledger: paired differences of {a} and {b} on {shared} tasks"
