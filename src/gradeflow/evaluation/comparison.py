"""Paired comparisons of configurations over the tasks both graded, Holm-corrected as a family.

What a caller may rely on:

- A comparison's unit is the task: ``mean_difference`` is the mean over paired tasks of (mean of ``a``'s
  runs − mean of ``b``'s runs); its standard error is clustered (each task its own cluster, or tasks of
  one repository together when every record carries ``labels.repository``). The 95% interval and the
  p-value use Student's t with clusters − 1 degrees of freedom; ``bootstrap_ci`` resamples tasks (never
  runs) with a fixed seed.
- Below :data:`~gradeflow.evaluation.statistics.MIN_PAIRED_TASKS` paired tasks the verdict is "too few
  paired tasks to tell (N)": no interval, no p-value, never "larger than the noise".
- ``p_holm`` is Holm's adjustment over every comparison of the report; ``significant`` is ``p_holm`` < 0.05.
"""

from __future__ import annotations

import random
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from gradeflow.evaluation.ledger import GradeRecord
from gradeflow.evaluation.statistics import MIN_PAIRED_TASKS, holm, minimum_detectable, paired_difference

__all__ = ["Comparison", "compare", "compare_family", "repositories", "scores_by_task"]

ALPHA = 0.05
Group = tuple[dict[str, str], Sequence[GradeRecord]]


class Comparison(BaseModel):
    """Whether configuration ``a`` scores differently from ``b``, paired by task."""

    a: dict[str, str]
    b: dict[str, str]
    tasks: int
    """Tasks both configurations have graded runs of (the pairs)."""
    runs: int
    """Graded runs behind the pairs, both sides."""
    clusters: int
    """Independent units behind the standard error: tasks, or repositories."""
    cluster_by: str
    mean_difference: float | None
    """Mean over tasks of (mean score of ``a`` − mean score of ``b``)."""
    se: float | None
    """Clustered standard error of ``mean_difference``; ``None`` when refused."""
    ci: list[float] | None
    """95% interval of ``mean_difference`` (t, clusters − 1 degrees of freedom); ``None`` when refused."""
    bootstrap_ci: list[float] | None
    """Paired bootstrap over tasks (percentile 95%); ``None`` when refused."""
    p_value: float | None
    p_holm: float | None
    """``p_value`` after Holm's correction across the report's comparisons."""
    significant: bool
    mde: float | None
    """The smallest true difference this comparison finds with 80% power at α = 0.05: (t_{0.975} + t_{0.8}) · se."""
    verdict: str
    seed: int
    resamples: int


def scores_by_task(records: Sequence[GradeRecord]) -> dict[str, list[float]]:
    """Graded run scores per task."""
    scores: dict[str, list[float]] = defaultdict(list)
    for record in records:
        if record.status == "graded" and record.score is not None:
            scores[record.task_id].append(record.score)
    return dict(scores)


def repositories(records: Sequence[GradeRecord]) -> dict[str, str] | None:
    """Task → ``labels.repository`` when every record carries one, else ``None`` (cluster by task)."""
    if not records or any("repository" not in r.labels for r in records):
        return None
    return {r.task_id: r.labels["repository"] for r in records}


def compare(a: Group, b: Group, *, seed: int = 0, resamples: int = 2000) -> Comparison:
    """One paired comparison (``p_holm`` equal to ``p_value``: a family of one)."""
    scores_a, scores_b = scores_by_task(a[1]), scores_by_task(b[1])
    repos = repositories([*a[1], *b[1]])
    found = paired_difference(scores_a, scores_b, repos)
    shared = sorted(set(scores_a) & set(scores_b))
    boot = None if found.refused else _bootstrap(shared, scores_a, scores_b, seed, resamples)
    made = Comparison(
        a=a[0],
        b=b[0],
        tasks=found.tasks,
        runs=sum(len(scores_a[t]) + len(scores_b[t]) for t in shared),
        clusters=found.clusters,
        cluster_by="repository" if repos else "task",
        mean_difference=_rounded(found.mean),
        se=_rounded(found.se) if not found.refused else None,
        ci=[round(v, 6) for v in found.ci] if found.ci else None,
        bootstrap_ci=[round(v, 6) for v in boot] if boot else None,
        p_value=_rounded(found.p_value),
        p_holm=_rounded(found.p_value),
        significant=found.p_value is not None and found.p_value < ALPHA,
        mde=_rounded(minimum_detectable(found.se, df=found.clusters - 1)) if not found.refused else None,
        verdict="",
        seed=seed,
        resamples=resamples,
    )
    return made.model_copy(update={"verdict": _verdict(made, 1)})


def compare_family(pairs: Sequence[tuple[Group, Group]], *, seed: int = 0) -> list[Comparison]:
    """Every comparison of ``pairs``, with Holm's correction across those that have a p-value."""
    found = [compare(a, b, seed=seed) for a, b in pairs]
    tested = [i for i, c in enumerate(found) if c.p_value is not None]
    adjusted = holm([found[i].p_value or 0.0 for i in tested])
    for index, p in zip(tested, adjusted, strict=True):
        found[index] = found[index].model_copy(update={"p_holm": round(p, 6), "significant": p < ALPHA})
    return [c.model_copy(update={"verdict": _verdict(c, len(tested))}) for c in found]


def _label(key: Mapping[str, str]) -> str:
    return " / ".join(key.values()) or "all"


def _verdict(c: Comparison, family: int) -> str:
    names = _label(c.a), _label(c.b)
    if c.tasks == 0 or c.mean_difference is None:
        return f"{names[0]} and {names[1]} share no graded task"
    if c.ci is None:
        few = ("paired tasks", c.tasks) if c.tasks < MIN_PAIRED_TASKS else (f"{c.cluster_by} clusters", c.clusters)
        reason = f"too few {few[0]} to tell ({few[1]})"
        return f"{names[0]} vs {names[1]}: {reason}; mean difference {c.mean_difference:+.3f}"
    ahead, behind = names if c.mean_difference >= 0 else names[::-1]
    noise = "larger than the noise" if c.significant else "within the noise"
    holm_note = f", Holm-adjusted over {family}" if family > 1 else ""
    p = "–" if c.p_holm is None else f"{c.p_holm:.3g}"
    return (
        f"{ahead} scores {abs(c.mean_difference):.3f} above {behind} on {c.tasks} paired tasks "
        f"({c.clusters} {c.cluster_by} clusters): {noise} (95% CI {c.ci[0]:+.3f} to {c.ci[1]:+.3f}, "
        f"p={p}{holm_note}; detectable at 80% power: {c.mde or 0:.3f})"
    )


def _bootstrap(
    tasks: list[str], a: dict[str, list[float]], b: dict[str, list[float]], seed: int, resamples: int
) -> tuple[float, float]:
    diffs = [statistics.fmean(a[t]) - statistics.fmean(b[t]) for t in tasks]
    rng = random.Random(seed)
    samples = sorted(statistics.fmean(rng.choices(diffs, k=len(diffs))) for _ in range(resamples))
    return samples[int(0.025 * resamples)], samples[min(resamples - 1, int(0.975 * resamples))]


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
