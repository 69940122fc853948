"""Reports over ledger records: distributions per configuration and per task, and paired comparisons.

Conventions a caller may rely on:

- Inconclusive grades are counted (``inconclusive``, and ``inconclusive_rate`` = inconclusive / n) and
  kept out of every other denominator and statistic, except ``strict_pass_rate``: passes / n, an
  inconclusive grade counted as a failure. A configuration whose grades turn inconclusive where it
  would fail shows a pass rate well above its strict pass rate and a high inconclusive rate.
- Standard errors are clustered (CR1, :mod:`gradeflow.evaluation.statistics`): by task, or by
  repository when every record carries ``labels.repository``; ``tasks``, ``graded`` (runs) and
  ``clusters`` say how many units stand behind each figure. ``pass_rate_ci`` is Wilson's interval when
  each cluster has one run (``pass_rate_interval`` = ``wilson``), else mean ± t_{0.975, G−1} · clustered
  SE clipped to [0, 1] (``clustered``); ``mean_score_ci`` is always the clustered one.
- ``mde`` is the smallest difference in mean score from an equally noisy configuration on other runs of
  the same size that a test at α = 0.05 finds with 80% power: (t_{0.975} + t_{0.8}) · √2 ·
  ``mean_score_se``, t with 2G − 2 degrees of freedom (≈ 2.80 · √2 · SE with many clusters).
- ``std_score`` is the sample standard deviation (``None`` below two graded runs); ``pass_at_k`` is the
  unbiased estimator 1 − C(n−c, k)/C(n, k) per task and ``pass_hat_k`` (all k runs pass) C(c, k)/C(n, k),
  each averaged over the group's tasks, for k = 1 … the fewest graded runs any of its tasks has.
- ``weak_tasks``: the group's tasks whose task spec digest has a recorded strength (``gradeflow task
  strength``) below the report's threshold; a result on such a task says less than its score.
- Comparisons follow :mod:`gradeflow.evaluation.comparison`: paired by task, clustered, Holm-corrected.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from gradeflow.errors import SpecError
from gradeflow.evaluation.comparison import Comparison, Group, compare, compare_family, repositories
from gradeflow.evaluation.ledger import GradeRecord
from gradeflow.evaluation.statistics import (
    clustered_mean,
    interval,
    minimum_detectable,
    pass_at_k,
    pass_hat_k,
    wilson_interval,
)

__all__ = [
    "WEAK_BELOW",
    "Comparison",
    "GroupStats",
    "Report",
    "build_report",
    "compare",
    "group_records",
    "pass_at_k",
    "pass_hat_k",
    "summarize",
    "wilson_interval",
]

WEAK_BELOW = 0.8
"""A task whose recorded strength (mutant kill rate) is below this is flagged weak."""
GROUP_FIELDS = ("model_id", "prompt_revision", "profile", "task_id", "grader_revision", "run_id")
"""Record fields a report may group by; ``labels.NAME`` groups by a label."""


class GroupStats(BaseModel):
    """The statistics of one group of records; keys as ``gradeflow report --json`` prints them."""

    key: dict[str, str]
    n: int
    graded: int
    """Graded runs: the runs behind every figure but the counts and the strict rate."""
    tasks: int
    """Tasks with a graded run."""
    clusters: int
    """Independent units behind the standard errors (tasks, or repositories)."""
    cluster_by: Literal["task", "repository"]
    inconclusive: int
    mean_score: float | None
    mean_score_se: float | None
    """Clustered standard error of ``mean_score`` (``None`` below two clusters)."""
    mean_score_ci: list[float] | None
    median_score: float | None
    std_score: float | None
    min_score: float | None
    max_score: float | None
    pass_rate: float | None
    """Passes among graded runs (``None`` when none was graded)."""
    pass_rate_se: float | None
    pass_rate_ci: list[float] | None
    pass_rate_interval: Literal["wilson", "clustered"] | None
    inconclusive_rate: float | None
    """Inconclusive grades among all runs (``None`` for an empty group)."""
    strict_pass_rate: float | None
    """Passes among all runs: an inconclusive grade counts as a failure (``None`` for an empty group)."""
    strict_pass_rate_ci: list[float] | None
    mde: float | None
    """Minimum detectable difference in mean score at 80% power (see the module docstring)."""
    pass_at_k: dict[str, float]
    pass_hat_k: dict[str, float]
    """pass^k: the chance that all of k runs of a task pass, averaged over tasks."""
    decisions: dict[str, int]
    top_reasons: list[tuple[str, int]]
    weak_tasks: list[str] = Field(default_factory=list)


class Report(BaseModel):
    """``groups`` per configuration, ``by_task`` per configuration and task, and the ``comparisons``."""

    by: list[str]
    groups: list[GroupStats] = Field(default_factory=list)
    by_task: list[GroupStats] = Field(default_factory=list)
    comparisons: list[Comparison] = Field(default_factory=list)
    """The chosen pair, or the best configuration against each other one (Holm-corrected together)."""
    weak_below: float = WEAK_BELOW
    """The strength (mutant kill rate) below which a task's results are flagged (``weak_tasks``)."""


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


def _pair_rounded(bounds: tuple[float, float] | None) -> list[float] | None:
    return [round(bounds[0], 6), round(bounds[1], 6)] if bounds else None


def _clusters(records: Sequence[GradeRecord]) -> tuple[list[str], Literal["task", "repository"]]:
    repos = repositories(records)
    if repos is None:
        return [r.task_id for r in records], "task"
    return [repos[r.task_id] for r in records], "repository"


Interval = Literal["wilson", "clustered"]


def _rate(records: Sequence[GradeRecord]) -> tuple[float | None, list[float] | None, Interval | None]:
    """SE, interval and its kind of the pass rate of ``records`` (graded or all, failures counted)."""
    if not records:
        return None, None, None
    names, _ = _clusters(records)
    found = clustered_mean([float(r.passed) for r in records], names)
    if found.clusters == len(records):
        wilson = wilson_interval(sum(r.passed for r in records), len(records))
        return _rounded(found.se), _pair_rounded(wilson), "wilson"
    if found.se is None:
        return None, None, "clustered"
    low, high = interval(found.mean, found.se, found.clusters)
    return _rounded(found.se), _pair_rounded((max(0.0, low), min(1.0, high))), "clustered"


def _score_estimate(graded: Sequence[GradeRecord]) -> tuple[float | None, list[float] | None, int]:
    if not graded:
        return None, None, 0
    names, _ = _clusters(graded)
    found = clustered_mean([r.score or 0.0 for r in graded], names)
    if found.se is None:
        return None, None, found.clusters
    return _rounded(found.se), _pair_rounded(interval(found.mean, found.se, found.clusters)), found.clusters


def summarize(
    key: dict[str, str], records: Sequence[GradeRecord], top: int = 5, weak: Mapping[str, float] | None = None
) -> GroupStats:
    """The statistics of one group (see the module docstring); ``weak``: weak task spec digests → strength."""
    graded = [r for r in records if r.status == "graded" and r.score is not None]
    scores = [r.score for r in graded if r.score is not None]
    passes = sum(r.passed for r in graded)
    score_se, score_ci, clusters = _score_estimate(graded)
    rate_se, rate_ci, rate_kind = _rate(graded)
    _, strict_ci, _ = _rate(records)
    inconclusive = len(records) - len(graded)
    reasons = Counter(code for r in records for code in dict.fromkeys(r.reason_codes))
    mde = minimum_detectable(score_se, df=2 * clusters - 2) if clusters > 1 else None
    return GroupStats(
        key=key,
        n=len(records),
        graded=len(graded),
        tasks=len({r.task_id for r in graded}),
        clusters=clusters,
        cluster_by=_clusters(graded)[1],
        inconclusive=inconclusive,
        mean_score=_rounded(statistics.fmean(scores)) if scores else None,
        mean_score_se=score_se,
        mean_score_ci=score_ci,
        median_score=_rounded(statistics.median(scores)) if scores else None,
        std_score=_rounded(statistics.stdev(scores)) if len(scores) > 1 else None,
        min_score=min(scores, default=None),
        max_score=max(scores, default=None),
        pass_rate=_rounded(passes / len(graded)) if graded else None,
        pass_rate_se=rate_se,
        pass_rate_ci=rate_ci,
        pass_rate_interval=rate_kind,
        inconclusive_rate=_rounded(inconclusive / len(records)) if records else None,
        strict_pass_rate=_rounded(passes / len(records)) if records else None,
        strict_pass_rate_ci=strict_ci,
        mde=_rounded(mde * math.sqrt(2)) if mde is not None else None,
        pass_at_k=_per_task_k(graded, pass_at_k),
        pass_hat_k=_per_task_k(graded, pass_hat_k),
        decisions=dict(sorted(Counter(r.decision for r in records).items())),
        top_reasons=sorted(reasons.items(), key=lambda item: (-item[1], item[0]))[:top],
        weak_tasks=sorted({r.task_id for r in records if weak and r.task_spec_hash in weak}),
    )


def _per_task_k(graded: Sequence[GradeRecord], estimator: Callable[[int, int, int], float]) -> dict[str, float]:
    per_task: dict[str, list[bool]] = defaultdict(list)
    for record in graded:
        per_task[record.task_id].append(record.passed)
    if not per_task:
        return {}
    k_max = min(len(runs) for runs in per_task.values())
    return {
        str(k): round(statistics.fmean(estimator(len(runs), sum(runs), k) for runs in per_task.values()), 6)
        for k in range(1, k_max + 1)
    }


def build_report(
    records: Sequence[GradeRecord],
    by: Sequence[str] = ("model_id", "prompt_revision"),
    *,
    pair: tuple[str, str] | None = None,
    seed: int = 0,
    strengths: Mapping[str, float] | None = None,
    weak_below: float = WEAK_BELOW,
) -> Report:
    """Groups, per-task groups and comparisons: of ``pair`` (labels ``v1/v2`` of two groups), else the best
    group against each other one. ``strengths``: task spec digest → recorded kill rate."""
    fields = check_by(by)
    weak = {digest: kill for digest, kill in (strengths or {}).items() if kill < weak_below}
    grouped = group_records(records, fields)
    per_task = group_records(records, [*fields, "task_id"]) if "task_id" not in fields else []
    groups = [summarize(key, members, weak=weak) for key, members in grouped]
    report = Report(
        by=fields,
        groups=groups,
        by_task=[summarize(key, members, weak=weak) for key, members in per_task],
        weak_below=weak_below,
    )
    report.comparisons = compare_family(_pairs(grouped, groups, pair), seed=seed)
    return report


def _pairs(
    grouped: Sequence[Group], groups: list[GroupStats], pair: tuple[str, str] | None
) -> list[tuple[Group, Group]]:
    labels = ["/".join(key.values()) for key, _ in grouped]
    if pair is not None:
        for label in pair:
            if label not in labels:
                raise SpecError(f"--compare: no group {label!r} (groups: {', '.join(labels) or 'none'})")
        return [(grouped[labels.index(pair[0])], grouped[labels.index(pair[1])])]
    ranked = sorted(range(len(groups)), key=lambda i: (-(groups[i].mean_score or -1.0), labels[i]))
    return [(grouped[ranked[0]], grouped[other]) for other in ranked[1:]]
