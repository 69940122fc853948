"""Table tests of gradeflow.evaluation.statistics and the study plan against values worked out by hand or published."""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from gradeflow.errors import SpecError
from gradeflow.evaluation.plan import plan_from_rate, plan_from_scores
from gradeflow.evaluation.statistics import (
    clustered_mean,
    holm,
    minimum_detectable,
    paired_difference,
    pass_hat_k,
    power_factor,
    t_cdf,
    t_quantile,
    tasks_needed,
    two_sided_p,
    variance_components,
)


def test_clustered_variance_textbook_example() -> None:
    # CR1 for a mean (Cameron & Miller 2015, with the G/(G-1) factor of Stata's `mean, vce(cluster)`):
    # clusters A=[1,0], B=[1,1], C=[0,0]; x̄ = 0.5; cluster sums of residuals 0, +1, -1;
    # Var = 3/2 · (0² + 1² + 1²) / 6² = 1/12.
    found = clustered_mean([1, 0, 1, 1, 0, 0], ["A", "A", "B", "B", "C", "C"])
    assert (found.mean, found.n, found.clusters) == (0.5, 6, 3)
    assert found.se == pytest.approx(math.sqrt(1 / 12), abs=1e-12)
    naive = statistics.stdev([1, 0, 1, 1, 0, 0]) / math.sqrt(6)
    assert naive == pytest.approx(math.sqrt(0.05)) and found.se is not None and found.se > naive


def test_one_value_per_cluster_is_the_plain_standard_error() -> None:
    values = [0.2, 0.9, 0.4, 0.4, 1.0]
    found = clustered_mean(values, ["a", "b", "c", "d", "e"])
    assert found.se == pytest.approx(statistics.stdev(values) / math.sqrt(5), abs=1e-12)
    assert clustered_mean([1.0, 0.0], ["x", "x"]).se is None
    with pytest.raises(ValueError):
        clustered_mean([1.0], ["a", "b"])


def test_clustering_widens_the_interval_about_threefold_when_nine_runs_of_a_task_agree() -> None:
    # 10 tasks × 9 runs; a task's runs all agree (intra-task correlation 1), so there are 10 pieces of
    # evidence, not 90: SE ratio² = G/(G−1) · m · (N−1)/N = 10/9 · 9 · 89/90.
    values = [float(task % 2) for task in range(10) for _ in range(9)]
    tasks = [f"t{task}" for task in range(10) for _ in range(9)]
    clustered = clustered_mean(values, tasks).se
    naive = statistics.stdev(values) / math.sqrt(len(values))
    assert clustered is not None
    assert clustered / naive == pytest.approx(math.sqrt(10 / 9 * 9 * 89 / 90), abs=1e-9)
    assert 2.9 < clustered / naive < 3.2


def test_one_paired_task_is_refused_however_large_the_difference() -> None:
    found = paired_difference({"t1": [1.0] * 20}, {"t1": [0.0] * 20})
    assert found.refused and found.tasks == 1 and found.mean == 1.0
    assert (found.ci, found.p_value) == (None, None)
    nine = paired_difference({f"t{i}": [1.0, 0.9] for i in range(9)}, {f"t{i}": [0.0] for i in range(9)})
    assert nine.refused and nine.ci is None


def test_paired_difference_on_ten_tasks_and_by_repository() -> None:
    diffs = [0.1, 0.3, 0.2, 0.0, 0.4, 0.1, 0.2, 0.3, 0.2, 0.2]
    a = {f"t{i}": [d, d] for i, d in enumerate(diffs)}
    b = {f"t{i}": [0.0] for i in range(10)}
    found = paired_difference(a, b)
    se = statistics.stdev(diffs) / math.sqrt(10)
    assert not found.refused and found.clusters == 10
    assert found.mean == pytest.approx(0.2) and found.se == pytest.approx(se)
    # Student's t with 9 degrees of freedom: t_{0.975, 9} = 2.262157 (any t table).
    assert found.ci == pytest.approx((0.2 - 2.262157 * se, 0.2 + 2.262157 * se), abs=1e-6)
    assert found.p_value == pytest.approx(2 * (1 - t_cdf(0.2 / se, 9)))
    assert found.p_value is not None and found.p_value > math.erfc(
        0.2 / se / math.sqrt(2)
    )  # wider than the normal's with ten clusters
    repos = {f"t{i}": "r1" if i < 5 else "r2" for i in range(10)}
    assert paired_difference(a, b, repos).clusters == 2
    same = paired_difference({f"t{i}": [1.0] for i in range(10)}, {f"t{i}": [0.0, 0.0] for i in range(10)})
    assert (same.se, same.ci, same.p_value) == (0.0, (1.0, 1.0), 0.0)  # every task moved alike: unmistakable
    tied = paired_difference({f"t{i}": [0.5] for i in range(10)}, {f"t{i}": [0.5] for i in range(10)})
    assert tied.p_value == 1.0


@pytest.mark.parametrize(
    ("p", "df", "quantile"),
    # two-sided 5% and one-sided 20% points of Student's t, as any t table prints them
    [(0.975, 1, 12.7062), (0.975, 5, 2.5706), (0.975, 9, 2.2622), (0.975, 30, 2.0423), (0.8, 9, 0.8834)],
)
def test_t_quantiles_against_the_table(p: float, df: int, quantile: float) -> None:
    assert t_quantile(p, df) == pytest.approx(quantile, abs=5e-5)
    assert t_cdf(quantile, df) == pytest.approx(p, abs=1e-5)
    assert t_quantile(1 - p, df) == pytest.approx(-quantile, abs=5e-5)
    assert two_sided_p(quantile, df) == pytest.approx(2 * (1 - p), abs=1e-5)
    assert t_quantile(0.975, 1e7) == pytest.approx(1.959964, abs=1e-5)
    assert two_sided_p(1.959964) == pytest.approx(0.05, abs=1e-6)


@pytest.mark.parametrize(
    ("p_values", "adjusted"),
    [
        ([0.01, 0.04, 0.03], [0.03, 0.06, 0.06]),  # only the smallest survives at 0.05
        ([0.01, 0.02, 0.03], [0.03, 0.04, 0.04]),  # all three survive; Bonferroni would keep one
        ([0.5, 0.001, 0.9], [1.0, 0.003, 1.0]),
    ],
)
def test_holm_on_three_comparisons(p_values: list[float], adjusted: list[float]) -> None:
    assert holm(p_values) == pytest.approx(adjusted)


@pytest.mark.parametrize(
    ("alpha", "power", "multiplier"),
    # (z_{1−α/2} + z_{1−β})², as tabulated in sample-size texts
    [(0.05, 0.8, 7.85), (0.05, 0.9, 10.51), (0.01, 0.8, 11.68), (0.01, 0.9, 14.88), (0.05, 0.95, 12.99)],
)
def test_power_formula_against_the_published_multipliers(alpha: float, power: float, multiplier: float) -> None:
    assert power_factor(alpha, power) ** 2 == pytest.approx(multiplier, abs=0.005)


@pytest.mark.parametrize(("delta", "per_group"), [(0.2, 393), (0.5, 63), (0.8, 25), (1.0, 16)])
def test_two_sample_size_matches_lehrs_sixteen_over_delta_squared(delta: float, per_group: int) -> None:
    # Two groups of σ = 1: n = 2 · 7.849 / Δ² (Lehr 1992 rounds the 15.7 to 16).
    assert tasks_needed(2.0, delta) == per_group
    assert per_group == pytest.approx(16 / delta**2, rel=0.06)
    assert minimum_detectable(1 / math.sqrt(per_group / 2)) == pytest.approx(delta, rel=0.01)


@pytest.mark.parametrize(("n", "c"), [(1, 0), (1, 1), (3, 1), (5, 2), (6, 6), (7, 0)])
def test_pass_hat_k_matches_counting_subsets(n: int, c: int) -> None:
    samples = [True] * c + [False] * (n - c)
    for k in range(1, n + 1):
        subsets = list(itertools.combinations(samples, k))
        assert pass_hat_k(n, c, k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets))
    with pytest.raises(ValueError):
        pass_hat_k(2, 1, 3)


def test_variance_components_split_between_and_within_tasks() -> None:
    alike = variance_components({"a": [1.0, 1.0, 1.0], "b": [0.0, 0.0, 0.0]})
    assert alike is not None and (alike.between, alike.within) == (0.5, 0.0)
    coin = variance_components({"a": [1.0, 0.0], "b": [0.0, 1.0]})
    assert coin is not None and (coin.between, coin.within) == (0.0, 0.5)
    assert variance_components({"a": [1.0], "b": [0.0]}) is None


def test_plan_from_a_rate_and_from_a_ledger() -> None:
    worst = plan_from_rate(0.4, 0.05, runs=3)
    # ω² = 0.4·0.6 + 0.45·0.55 = 0.4875; n = ⌈7.849 · 0.4875 / 0.05²⌉
    assert worst.tasks == math.ceil(power_factor() ** 2 * 0.4875 / 0.0025) == 1531
    assert worst.tasks_if_runs_independent == 511
    with pytest.raises(SpecError, match="--rate"):
        plan_from_rate(0.98, 0.05)
    # Two configurations whose runs flip coins and whose tasks do not differ: ω² ≈ 0, only runs matter.
    coin = {f"t{i}": [1.0, 0.0] for i in range(6)}
    scores = {"a": coin, "b": {t: [0.0, 1.0] for t in coin}}
    one, three = plan_from_scores(scores, 0.1, runs=1), plan_from_scores(scores, 0.1, runs=3)
    assert one.task_variance == 0.0 and one.run_variance == 0.5
    assert one.tasks == math.ceil(power_factor() ** 2 * 1.0 / 0.01) and three.tasks < one.tasks / 2.9
    with pytest.raises(SpecError, match="--from-ledger"):
        plan_from_scores({"a": {"t1": [1.0]}}, 0.1)
