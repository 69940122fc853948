"""The statistics behind a report, pure: no Prefect, no files, table-tested in tests/evaluation/test_statistics.py.

What a caller may rely on (docs/how-to/evaluations.md gives each formula's source):

- :func:`clustered_mean` is the cluster-robust (CR1) standard error of a mean: with G clusters and N
  values, Var = G/(G−1) · Σ_g (Σ_{i∈g} (x_i − x̄))² / N² (Cameron & Miller 2015; Miller 2024, "Adding
  Error Bars to Evals"). With one value per cluster it is the plain s/√N; below two clusters the
  standard error is ``None``.
- :func:`wilson_interval` is Wilson's (1927) score interval, for pass rates where each cluster has one run.
- Intervals and p-values from a clustered standard error use Student's t with G − 1 degrees of freedom
  (:func:`t_quantile`, :func:`t_cdf`), as Cameron & Miller (2015) advise for few clusters; with many it
  is the normal's 1.96.
- :func:`paired_difference` is the mean over tasks of per-task differences (runs averaged within a task),
  with the CR1 standard error of that mean (each task its own cluster, or tasks clustered by repository),
  its 95% interval and two-sided p-value. It refuses (no interval, no p-value) below
  :data:`MIN_PAIRED_TASKS` paired tasks.
- :func:`holm` is Holm's (1979) step-down adjustment of a family of p-values.
- :func:`minimum_detectable` and :func:`tasks_needed` are the normal-approximation power formulas:
  δ = (z_{1−α/2} + z_{1−β}) · SE (t quantiles when the degrees of freedom are known) and
  n = (z_{1−α/2} + z_{1−β})² · σ²/δ².
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from statistics import NormalDist

from pydantic import BaseModel

__all__ = [
    "MIN_PAIRED_TASKS",
    "Z95",
    "ClusteredMean",
    "PairedDifference",
    "VarianceComponents",
    "clustered_mean",
    "holm",
    "interval",
    "minimum_detectable",
    "paired_difference",
    "pass_at_k",
    "pass_hat_k",
    "power_factor",
    "t_cdf",
    "t_quantile",
    "tasks_needed",
    "two_sided_p",
    "variance_components",
    "wilson_interval",
]

Z95 = NormalDist().inv_cdf(0.975)
MIN_PAIRED_TASKS = 10
"""Below this many paired tasks a comparison states no interval and no p-value."""


class ClusteredMean(BaseModel):
    """A mean with its cluster-robust standard error and the units behind it."""

    mean: float
    se: float | None
    """CR1 standard error; ``None`` below two clusters."""
    n: int
    """Values (runs)."""
    clusters: int


class PairedDifference(BaseModel):
    """The mean over tasks of (mean of ``a``'s runs − mean of ``b``'s runs) on the tasks both have."""

    tasks: int
    clusters: int
    mean: float | None
    se: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    """Two-sided, Student's t with clusters − 1 degrees of freedom; ``None`` when refused (too few tasks)."""
    refused: bool
    """Fewer than :data:`MIN_PAIRED_TASKS` paired tasks: nothing can be told."""


class VarianceComponents(BaseModel):
    """One-way random-effects split of per-run score variance: between tasks and within a task."""

    between: float
    """Variance of the task's expected score across tasks (method of moments, floored at 0)."""
    within: float
    """Pooled variance of one run's score around its task's mean."""
    tasks: int
    runs: int


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a binomial proportion; ``None`` when ``n`` is 0."""
    if n == 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` passing: 1 − C(n−c, k)/C(n, k)."""
    _check_nck(n, c, k, "pass@k")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1 - k / i for i in range(n - c + 1, n + 1))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (all of k runs pass) from ``n`` samples with ``c`` passing: C(c, k)/C(n, k)."""
    _check_nck(n, c, k, "pass^k")
    return math.comb(c, k) / math.comb(n, k)


def _check_nck(n: int, c: int, k: int, name: str) -> None:
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"{name} needs 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")


def clustered_mean(values: Sequence[float], clusters: Sequence[str]) -> ClusteredMean:
    """The mean of ``values`` with its CR1 standard error, ``clusters[i]`` naming the cluster of ``values[i]``."""
    if len(values) != len(clusters) or not values:
        raise ValueError(f"clustered_mean needs as many cluster names as values, at least one ({len(values)})")
    mean = statistics.fmean(values)
    sums: dict[str, float] = defaultdict(float)
    for value, cluster in zip(values, clusters, strict=True):
        sums[cluster] += value - mean
    g, n = len(sums), len(values)
    se = math.sqrt(g / (g - 1) * sum(s * s for s in sums.values())) / n if g > 1 else None
    return ClusteredMean(mean=mean, se=se, n=n, clusters=g)


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return result


def _betainc(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection on :func:`t_cdf`)."""
    if not 0 < p < 1 or df <= 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, got {p} and {df}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if t_cdf(middle, df) < p else (low, middle)
    return (low + high) / 2


def interval(mean: float, se: float, clusters: int, level: float = 0.95) -> tuple[float, float]:
    """mean ± t_{(1+level)/2, G−1} · se: the interval of a clustered mean over ``clusters`` clusters."""
    half = t_quantile((1 + level) / 2, clusters - 1) * se
    return mean - half, mean + half


def two_sided_p(statistic: float, df: float | None = None) -> float:
    """P(|T| ≥ |statistic|) for Student's t with ``df`` degrees of freedom, or a standard normal (``None``)."""
    if df is None:
        return math.erfc(abs(statistic) / math.sqrt(2))
    return _betainc(df / 2, 0.5, df / (df + statistic * statistic))


def paired_difference(
    a: Mapping[str, Sequence[float]],
    b: Mapping[str, Sequence[float]],
    repository: Mapping[str, str] | None = None,
) -> PairedDifference:
    """Per-task differences of ``a`` and ``b`` (task → run scores), clustered by ``repository[task]`` if given."""
    tasks = sorted(t for t in set(a) & set(b) if a[t] and b[t])
    if not tasks:
        return PairedDifference(tasks=0, clusters=0, mean=None, se=None, ci=None, p_value=None, refused=True)
    diffs = [statistics.fmean(a[t]) - statistics.fmean(b[t]) for t in tasks]
    names = [repository.get(t, t) for t in tasks] if repository else tasks
    found = clustered_mean(diffs, names)
    refused = len(tasks) < MIN_PAIRED_TASKS or found.se is None
    base = PairedDifference(
        tasks=len(tasks), clusters=found.clusters, mean=found.mean, se=found.se, ci=None, p_value=None, refused=refused
    )
    if refused or found.se is None:
        return base
    ci = interval(found.mean, found.se, found.clusters)
    # No spread at all: every task moved by the same amount, which is either none or unmistakable.
    p = two_sided_p(found.mean / found.se, found.clusters - 1) if found.se > 0 else float(found.mean == 0)
    return base.model_copy(update={"ci": ci, "p_value": p})


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's adjusted p-values, in the order given: reject H_i at level α when its adjusted p ≤ α."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def power_factor(alpha: float = 0.05, power: float = 0.8) -> float:
    """z_{1−α/2} + z_{power}: the standard errors a true difference must span to be found."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)


def minimum_detectable(
    se: float | None, alpha: float = 0.05, power: float = 0.8, df: float | None = None
) -> float | None:
    """The smallest true difference a test with standard error ``se`` finds with probability ``power``
    (normal quantiles, or Student's t with ``df`` degrees of freedom)."""
    if se is None:
        return None
    if df is None:
        return power_factor(alpha, power) * se
    return (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * se


def tasks_needed(variance: float, effect: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Tasks for a difference of ``effect`` when one task's difference has ``variance``: ⌈(z+z)² σ²/δ²⌉."""
    if effect <= 0:
        raise ValueError(f"the effect must be above 0, got {effect}")
    return max(1, math.ceil(power_factor(alpha, power) ** 2 * variance / (effect * effect) - 1e-9))


def variance_components(per_task: Mapping[str, Sequence[float]]) -> VarianceComponents | None:
    """Between- and within-task variance of run scores; ``None`` without two tasks or any repeated run."""
    tasks = {t: list(v) for t, v in per_task.items() if v}
    repeated = [v for v in tasks.values() if len(v) > 1]
    if len(tasks) < 2 or not repeated:
        return None
    within = statistics.fmean(statistics.variance(v) for v in repeated)
    means = [statistics.fmean(v) for v in tasks.values()]
    harmonic_runs = statistics.harmonic_mean([len(v) for v in tasks.values()])
    between = max(0.0, statistics.variance(means) - within / harmonic_runs)
    return VarianceComponents(
        between=between, within=within, tasks=len(tasks), runs=sum(len(v) for v in tasks.values())
    )
