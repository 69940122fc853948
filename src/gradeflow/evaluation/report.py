"""Reports over ledger records: distributions per configuration and per task, and a paired comparison.

Conventions a caller may rely on:

- Inconclusive grades are counted (``inconclusive``, and ``inconclusive_rate`` = inconclusive / n) and
  kept out of every other denominator and statistic, except ``strict_pass_rate``: passes / n, an
  inconclusive grade counted as a failure. A configuration whose grades turn inconclusive where it
  would fail shows a pass rate well above its strict pass rate and a high inconclusive rate.
- ``std_score`` is the sample standard deviation (``None`` below two graded runs); ``pass_rate_ci`` is
  the Wilson 95% interval; ``pass_at_k`` is the unbiased estimator 1 − C(n−c, k)/C(n, k) per task,
  averaged over the group's tasks, for k = 1 … the fewest graded runs any of its tasks has.
- The comparison resamples tasks, then runs within each task (a paired, two-level bootstrap) with a
  fixed seed, so the same ledger gives the same report.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, Field

from gradeflow.errors import SpecError
from gradeflow.evaluation.ledger import GradeRecord

__all__ = [
    "Comparison",
    "GroupStats",
    "Report",
    "build_report",
    "compare",
    "group_records",
    "pass_at_k",
    "summarize",
    "wilson_interval",
]

Z95 = 1.959963984540054
GROUP_FIELDS = ("model_id", "prompt_revision", "profile", "task_id", "grader_revision", "run_id")
"""Record fields a report may group by; ``labels.NAME`` groups by a label."""


class GroupStats(BaseModel):
    """The statistics of one group of records; keys as ``gradeflow report --json`` prints them."""

    key: dict[str, str]
    n: int
    graded: int
    inconclusive: int
    mean_score: float | None
    median_score: float | None
    std_score: float | None
    min_score: float | None
    max_score: float | None
    pass_rate: float | None
    """Passes among graded runs (``None`` when none was graded)."""
    pass_rate_ci: list[float] | None
    inconclusive_rate: float | None
    """Inconclusive grades among all runs (``None`` for an empty group)."""
    strict_pass_rate: float | None
    """Passes among all runs: an inconclusive grade counts as a failure (``None`` for an empty group)."""
    strict_pass_rate_ci: list[float] | None
    pass_at_k: dict[str, float]
    decisions: dict[str, int]
    top_reasons: list[tuple[str, int]]


class Comparison(BaseModel):
    """Whether configuration ``a`` scores differently from ``b`` by more than the noise."""

    a: dict[str, str]
    b: dict[str, str]
    tasks: int
    """Tasks both configurations have graded runs of (the pairs)."""
    mean_difference: float | None
    """Mean over tasks of (mean score of ``a`` − mean score of ``b``)."""
    ci: list[float] | None
    """Bootstrap 95% interval of ``mean_difference``."""
    significant: bool
    """The interval excludes zero."""
    verdict: str
    seed: int
    resamples: int


class Report(BaseModel):
    """``groups`` per configuration, ``by_task`` per configuration and task, and one ``comparison``."""

    by: list[str]
    groups: list[GroupStats] = Field(default_factory=list)
    by_task: list[GroupStats] = Field(default_factory=list)
    comparison: Comparison | None = None


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
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1 - k / i for i in range(n - c + 1, n + 1))


def _field(record: GradeRecord, name: str) -> str:
    if name.startswith("labels."):
        return record.labels.get(name.removeprefix("labels."), "")
    return str(getattr(record, name))


def check_by(by: Sequence[str]) -> list[str]:
    """The grouping fields, checked; ``SpecError`` for an unknown one."""
    for name in by:
        if name not in GROUP_FIELDS and not name.startswith("labels."):
            raise SpecError(f"--by: unknown field {name!r} (known: {', '.join(GROUP_FIELDS)}, labels.NAME)")
    return list(by)


def group_records(records: Sequence[GradeRecord], by: Sequence[str]) -> list[tuple[dict[str, str], list[GradeRecord]]]:
    """Records grouped by the values of ``by``, groups sorted by key."""
    groups: dict[tuple[str, ...], list[GradeRecord]] = defaultdict(list)
    for record in records:
        groups[tuple(_field(record, name) for name in by)].append(record)
    return [(dict(zip(by, values, strict=True)), groups[values]) for values in sorted(groups)]


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def summarize(key: dict[str, str], records: Sequence[GradeRecord], top: int = 5) -> GroupStats:
    """The statistics of one group (see the module docstring for the conventions)."""
    graded = [r for r in records if r.status == "graded" and r.score is not None]
    scores = [r.score for r in graded if r.score is not None]
    passes = sum(r.passed for r in graded)
    interval = wilson_interval(passes, len(graded))
    strict = wilson_interval(passes, len(records))
    inconclusive = len(records) - len(graded)
    reasons = Counter(code for r in records for code in dict.fromkeys(r.reason_codes))
    return GroupStats(
        key=key,
        n=len(records),
        graded=len(graded),
        inconclusive=inconclusive,
        mean_score=_rounded(statistics.fmean(scores)) if scores else None,
        median_score=_rounded(statistics.median(scores)) if scores else None,
        std_score=_rounded(statistics.stdev(scores)) if len(scores) > 1 else None,
        min_score=min(scores, default=None),
        max_score=max(scores, default=None),
        pass_rate=_rounded(passes / len(graded)) if graded else None,
        pass_rate_ci=[round(interval[0], 6), round(interval[1], 6)] if interval else None,
        inconclusive_rate=_rounded(inconclusive / len(records)) if records else None,
        strict_pass_rate=_rounded(passes / len(records)) if records else None,
        strict_pass_rate_ci=[round(strict[0], 6), round(strict[1], 6)] if strict else None,
        pass_at_k=_pass_at_k(graded),
        decisions=dict(sorted(Counter(r.decision for r in records).items())),
        top_reasons=sorted(reasons.items(), key=lambda item: (-item[1], item[0]))[:top],
    )


def _pass_at_k(graded: Sequence[GradeRecord]) -> dict[str, float]:
    per_task: dict[str, list[bool]] = defaultdict(list)
    for record in graded:
        per_task[record.task_id].append(record.passed)
    if not per_task:
        return {}
    k_max = min(len(runs) for runs in per_task.values())
    return {
        str(k): round(statistics.fmean(pass_at_k(len(runs), sum(runs), k) for runs in per_task.values()), 6)
        for k in range(1, k_max + 1)
    }


def _scores_by_task(records: Sequence[GradeRecord]) -> dict[str, list[float]]:
    scores: dict[str, list[float]] = defaultdict(list)
    for record in records:
        if record.status == "graded" and record.score is not None:
            scores[record.task_id].append(record.score)
    return scores


def compare(
    a: tuple[dict[str, str], Sequence[GradeRecord]],
    b: tuple[dict[str, str], Sequence[GradeRecord]],
    *,
    seed: int = 0,
    resamples: int = 2000,
) -> Comparison:
    """Paired-by-task bootstrap of the difference in mean score between configurations ``a`` and ``b``."""
    scores_a, scores_b = _scores_by_task(a[1]), _scores_by_task(b[1])
    tasks = sorted(set(scores_a) & set(scores_b))
    names = " / ".join(a[0].values()), " / ".join(b[0].values())
    base = Comparison(
        a=a[0],
        b=b[0],
        tasks=len(tasks),
        mean_difference=None,
        ci=None,
        significant=False,
        verdict=f"{names[0]} and {names[1]} share no graded task",
        seed=seed,
        resamples=resamples,
    )
    if not tasks:
        return base
    observed = statistics.fmean(statistics.fmean(scores_a[t]) - statistics.fmean(scores_b[t]) for t in tasks)
    rng = random.Random(seed)
    samples = sorted(_resample(rng, tasks, scores_a, scores_b) for _ in range(resamples))
    low, high = samples[int(0.025 * resamples)], samples[min(resamples - 1, int(0.975 * resamples))]
    significant = low > 0 or high < 0
    update = {
        "mean_difference": round(observed, 6),
        "ci": [round(low, 6), round(high, 6)],
        "significant": significant,
        "verdict": _verdict(names, observed, (low, high), len(tasks)),
    }
    return base.model_copy(update=update)


def _verdict(names: tuple[str, str], observed: float, interval: tuple[float, float], tasks: int) -> str:
    ahead, behind = names if observed >= 0 else names[::-1]
    noise = "larger than the noise" if interval[0] > 0 or interval[1] < 0 else "within the noise"
    return (
        f"{ahead} scores {abs(observed):.3f} above {behind} on {tasks} paired tasks: {noise} "
        f"(95% CI {interval[0]:+.3f} to {interval[1]:+.3f})"
    )


def _resample(rng: random.Random, tasks: list[str], a: dict[str, list[float]], b: dict[str, list[float]]) -> float:
    total = 0.0
    for task in rng.choices(tasks, k=len(tasks)):
        total += statistics.fmean(rng.choices(a[task], k=len(a[task])))
        total -= statistics.fmean(rng.choices(b[task], k=len(b[task])))
    return total / len(tasks)


def build_report(
    records: Sequence[GradeRecord],
    by: Sequence[str] = ("model_id", "prompt_revision"),
    *,
    pair: tuple[str, str] | None = None,
    seed: int = 0,
) -> Report:
    """Groups, per-task groups and a comparison: of ``pair`` (labels ``v1/v2`` of two groups) or the top two."""
    fields = check_by(by)
    grouped = group_records(records, fields)
    per_task = group_records(records, [*fields, "task_id"]) if "task_id" not in fields else []
    groups = [summarize(key, members) for key, members in grouped]
    report = Report(by=fields, groups=groups, by_task=[summarize(key, members) for key, members in per_task])
    chosen = _pair(grouped, groups, pair)
    if chosen is not None:
        report.comparison = compare(grouped[chosen[0]], grouped[chosen[1]], seed=seed)
    return report


def _pair(
    grouped: list[tuple[dict[str, str], list[GradeRecord]]], groups: list[GroupStats], pair: tuple[str, str] | None
) -> tuple[int, int] | None:
    labels = ["/".join(key.values()) for key, _ in grouped]
    if pair is not None:
        for label in pair:
            if label not in labels:
                raise SpecError(f"--compare: no group {label!r} (groups: {', '.join(labels) or 'none'})")
        return labels.index(pair[0]), labels.index(pair[1])
    ranked = sorted(range(len(groups)), key=lambda i: (-(groups[i].mean_score or -1.0), labels[i]))
    return (ranked[0], ranked[1]) if len(ranked) >= 2 else None
