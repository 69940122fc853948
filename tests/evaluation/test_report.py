"""Report statistics, the paired bootstrap, the JSON shape, and the HTML page in headless Chromium."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from evaluate_helpers import record
from gradeflow.cli import main
from gradeflow.errors import SpecError
from gradeflow.evaluation.ledger import GradeRecord, Ledger
from gradeflow.evaluation.report import build_report, compare, group_records, pass_at_k, summarize, wilson_interval
from gradeflow.evaluation.report_html import render_html

GROUP_KEYS = {
    "key",
    "n",
    "graded",
    "inconclusive",
    "inconclusive_rate",
    "mean_score",
    "median_score",
    "std_score",
    "min_score",
    "max_score",
    "pass_rate",
    "pass_rate_ci",
    "strict_pass_rate",
    "strict_pass_rate_ci",
    "pass_at_k",
    "decisions",
    "top_reasons",
    "tasks",
    "clusters",
    "cluster_by",
    "mean_score_se",
    "mean_score_ci",
    "pass_rate_se",
    "pass_rate_interval",
    "mde",
    "pass_hat_k",
    "weak_tasks",
}


def _runs(model: str, task: str, scores: Sequence[float | None], reasons: tuple[str, ...] = ()) -> list[GradeRecord]:
    return [
        record(
            model_id=model,
            task_id=task,
            run_id=f"{model}-{task}-{i}",
            content_key=f"{model}{task}{i}",
            score=s,
            passed=s == 1.0,
            status="graded" if s is not None else "inconclusive",
            decision="inconclusive" if s is None else ("merge-candidate" if s == 1.0 else "retry"),
            reason_codes=[] if s == 1.0 else list(reasons),
        )
        for i, s in enumerate(scores)
    ]


@pytest.mark.parametrize(
    ("passes", "n", "low", "high"), [(5, 10, 0.236593, 0.763407), (0, 9, 0.0, 0.299145), (9, 9, 0.700855, 1.0)]
)
def test_wilson_interval(passes: int, n: int, low: float, high: float) -> None:
    interval = wilson_interval(passes, n)
    assert interval is not None
    assert interval == pytest.approx((low, high), abs=1e-6)
    assert wilson_interval(0, 0) is None


@pytest.mark.parametrize(("n", "c"), [(1, 0), (1, 1), (3, 1), (5, 2), (6, 6), (7, 0)])
def test_pass_at_k_matches_counting_subsets(n: int, c: int) -> None:
    samples = [True] * c + [False] * (n - c)
    for k in range(1, n + 1):
        subsets = list(itertools.combinations(samples, k))
        assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_inconclusive_grades_are_counted_but_kept_out_of_every_denominator() -> None:
    records = _runs("m", "t1", [1.0, 0.0, None, 0.5], reasons=("fail-to-pass-failing",))
    stats = summarize({"model_id": "m"}, records)
    assert (stats.n, stats.graded, stats.inconclusive) == (4, 3, 1)
    assert stats.mean_score == 0.5 and stats.median_score == 0.5 and stats.std_score == 0.5
    assert (stats.min_score, stats.max_score) == (0.0, 1.0)
    assert stats.pass_rate == pytest.approx(1 / 3, abs=1e-6)
    assert stats.pass_at_k == {"1": pytest.approx(1 / 3, abs=1e-6), "2": pytest.approx(2 / 3, abs=1e-6), "3": 1.0}
    assert stats.decisions == {"inconclusive": 1, "merge-candidate": 1, "retry": 2}
    assert stats.top_reasons == [("fail-to-pass-failing", 3)]


def test_a_group_with_one_or_no_graded_run() -> None:
    single = summarize({}, _runs("m", "t", [0.25]))
    assert single.std_score is None and single.pass_at_k == {"1": 0.0}
    empty = summarize({}, _runs("m", "t", [None]))
    assert (empty.graded, empty.mean_score, empty.pass_rate, empty.pass_rate_ci, empty.pass_at_k) == (
        0,
        None,
        None,
        None,
        {},
    )


def test_pass_at_k_stops_at_the_fewest_runs_of_any_task() -> None:
    stats = summarize({}, _runs("m", "t1", [1.0, 0.0, 0.0]) + _runs("m", "t2", [0.0, 1.0]))
    assert set(stats.pass_at_k) == {"1", "2"}
    assert stats.pass_at_k["1"] == pytest.approx((1 / 3 + 1 / 2) / 2, abs=1e-6)


def test_paired_comparison_separates_signal_from_noise_reproducibly() -> None:
    tasks = [f"t{i}" for i in range(12)]
    strong = [r for i, t in enumerate(tasks) for r in _runs("a", t, [1.0, 0.9 + 0.01 * i, 0.9])]
    weak = [r for t in tasks for r in _runs("b", t, [0.1, 0.0, 0.2])]
    noisy = [r for i, t in enumerate(tasks) for r in _runs("c", t, [float(i % 2), float(i % 3 == 0)])]
    other = [r for i, t in enumerate(tasks) for r in _runs("d", t, [float(i % 3 == 1), float(i % 2 == 0)])]
    clear = compare(({"model_id": "a"}, strong), ({"model_id": "b"}, weak), seed=1)
    assert clear.significant and (clear.tasks, clear.runs, clear.clusters) == (12, 72, 12)
    assert clear.p_value is not None and clear.p_value < 1e-6 and clear.bootstrap_ci is not None
    assert "larger than the noise" in clear.verdict and "12 task clusters" in clear.verdict
    close = compare(({"model_id": "d"}, other), ({"model_id": "c"}, noisy), seed=1)
    assert not close.significant and "within the noise" in close.verdict
    assert close.ci is not None and close.ci[0] < 0 < close.ci[1] and close.mde is not None
    assert compare(({"model_id": "d"}, other), ({"model_id": "c"}, noisy), seed=1) == close
    apart = compare(({"model_id": "a"}, _runs("a", "t1", [1.0])), ({"model_id": "b"}, _runs("b", "t2", [0.0])))
    assert apart.tasks == 0 and apart.ci is None and not apart.significant


def test_one_paired_task_is_too_few_to_tell_never_larger_than_the_noise() -> None:
    # The old two-level bootstrap called this "larger than the noise": it only resampled runs.
    report = build_report(_runs("m-a", "t1", [1.0] * 10) + _runs("m-b", "t1", [0.0] * 10), ["model_id"])
    (found,) = report.comparisons
    assert "too few paired tasks to tell (1)" in found.verdict and "larger than the noise" not in found.verdict
    assert (found.significant, found.ci, found.p_value, found.bootstrap_ci) == (False, None, None, None)


def test_default_comparisons_put_the_best_against_each_other_with_holms_correction() -> None:
    noise = [0.1, -0.05, 0.08, -0.12, 0.02, 0.15, -0.1, 0.05, -0.02, 0.06]
    records = [
        r
        for i in range(10)
        for model, score in (("m-a", 0.7), ("m-b", 0.55 + noise[i]), ("m-c", 0.64 + noise[(i + 3) % 10]))
        for r in _runs(model, f"t{i}", [score, score])
    ]
    report = build_report(records, ["model_id"])
    assert [(c.a["model_id"], c.b["model_id"]) for c in report.comparisons] == [("m-a", "m-c"), ("m-a", "m-b")]
    near, far = (c.p_value or 0.0 for c in report.comparisons)
    assert far < 0.05 < near  # m-b is far behind, m-c close behind
    assert [c.p_holm for c in report.comparisons] == pytest.approx([max(2 * far, near), 2 * far], abs=1e-6)
    assert [c.significant for c in report.comparisons] == [False, True]
    assert all("Holm-adjusted over 2" in c.verdict for c in report.comparisons)


def test_groups_state_their_units_and_cluster_by_repository() -> None:
    records = [
        r.model_copy(update={"labels": {"repository": f"repo{int(t[1:]) % 3}"}})
        for t in [f"t{i}" for i in range(6)]
        for r in _runs("m", t, [1.0, 0.0] if t in ("t0", "t1") else [1.0, 1.0])
    ]
    stats = summarize({"model_id": "m"}, records)
    assert (stats.graded, stats.tasks, stats.clusters, stats.cluster_by) == (12, 6, 3, "repository")
    assert stats.pass_rate_interval == "clustered" and stats.mean_score_se is not None and stats.mde is not None
    assert stats.pass_hat_k == {"1": pytest.approx(10 / 12, abs=1e-6), "2": pytest.approx(4 / 6, abs=1e-6)}
    by_task = summarize({}, [r for t in ("t1", "t2", "t3") for r in _runs("m", t, [1.0 if t != "t1" else 0.0])])
    assert by_task.pass_rate_interval == "wilson" and by_task.cluster_by == "task"
    assert by_task.pass_rate_ci == pytest.approx([0.2077, 0.9385], abs=1e-4)  # Wilson, 2 of 3


def test_results_on_weak_tasks_are_flagged() -> None:
    records = _runs("m", "t1", [1.0]) + [
        r.model_copy(update={"task_spec_hash": "weakhash"}) for r in _runs("m", "t2", [1.0])
    ]
    report = build_report(records, ["model_id"], strengths={"weakhash": 0.5, "h": 0.95})
    assert report.groups[0].weak_tasks == ["t2"]
    assert [s.weak_tasks for s in report.by_task] == [[], ["t2"]]


def test_report_groups_tasks_and_default_comparison_of_the_top_two() -> None:
    records = (
        _runs("m-a", "t1", [1.0, 1.0])
        + _runs("m-b", "t1", [0.0, 1.0])
        + _runs("m-c", "t1", [0.0, 0.0])
        + _runs("m-a", "t2", [1.0, None])
    )
    report = build_report(records, ["model_id"])
    assert [g.key for g in report.groups] == [{"model_id": "m-a"}, {"model_id": "m-b"}, {"model_id": "m-c"}]
    assert [g.key for g in report.by_task][:2] == [
        {"model_id": "m-a", "task_id": "t1"},
        {"model_id": "m-a", "task_id": "t2"},
    ]
    assert [(c.a, c.b) for c in report.comparisons] == [
        ({"model_id": "m-a"}, {"model_id": "m-b"}),
        ({"model_id": "m-a"}, {"model_id": "m-c"}),
    ]
    (chosen,) = build_report(records, ["model_id"], pair=("m-c", "m-a")).comparisons
    assert chosen.a == {"model_id": "m-c"}
    with pytest.raises(SpecError, match="--compare: no group 'zz'"):
        build_report(records, ["model_id"], pair=("zz", "m-a"))
    with pytest.raises(SpecError, match="--by: unknown field 'colour'"):
        build_report(records, ["colour"])
    assert [k for k, _ in group_records([record(labels={"tools": "x"})], ["labels.tools"])] == [{"labels.tools": "x"}]


def _ledger_with_records(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(url)
    for r in _runs("m-a", "t1", [1.0, 1.0, 0.5], ("pass-to-pass-broken",)) + _runs(
        "m-b", "t1", [0.0, None, 0.0], ("fail-to-pass-failing",)
    ):
        ledger.add(r)
    ledger.close()
    return url


def test_report_json_keys_are_exactly_the_documented_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = _ledger_with_records(tmp_path)
    assert main(["report", "--ledger", url, "--by", "model_id", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [set(g) for g in payload["groups"]] == [GROUP_KEYS, GROUP_KEYS]
    group = payload["groups"][1]
    assert group["key"] == {"model_id": "m-b"} and (group["n"], group["graded"], group["inconclusive"]) == (3, 2, 1)
    assert group["top_reasons"] == [["fail-to-pass-failing", 3]] and group["pass_at_k"] == {"1": 0.0, "2": 0.0}
    assert group["inconclusive_rate"] == pytest.approx(1 / 3, abs=1e-6) and group["strict_pass_rate"] == 0.0
    assert payload["comparisons"][0]["a"] == {"model_id": "m-a"}
    assert main(["report", "--ledger", url, "--by", "nothing"]) == 2


def test_the_text_report_shows_inconclusive_and_strict_rates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A configuration cannot hide behind inconclusive grades: their share and a pass rate counting them
    # as failures stand beside the pass rate over graded runs.
    url = _ledger_with_records(tmp_path)
    assert main(["report", "--ledger", url, "--by", "model_id"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("  m-b:"))
    # One task: no between-task spread, so no interval is claimed for either rate.
    assert "inconclusive=1 (0.33)" in line and "pass=0.00 strict pass=0.00 reasons" in line
    assert "    1 tasks, 3 runs, 1 task clusters; mean SE=– (clustered)" in out
    assert "too few paired tasks to tell (1)" in out


def test_html_page_is_self_contained(tmp_path: Path) -> None:
    records = _runs("m-a", "t1", [1.0, 0.5], ("x-<y>",)) + _runs("m-b", "t1", [0.0, None], ("z",))
    page = render_html(build_report(records, ["model_id"]), records)
    assert page.count('<svg class="plot"') == 5 and "x-&lt;y&gt;" in page
    for forbidden in ("<script", "src=", "href=", "@import", "url("):
        assert forbidden not in page


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path:
        return path
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true but chromium is missing: .ci/run must `apt-get install -y chromium`")
    pytest.skip("chromium is not installed (apt-get install -y chromium)")


def test_html_report_renders_its_plots_in_headless_chromium(tmp_path: Path) -> None:
    browser = _chromium()
    url = _ledger_with_records(tmp_path)
    ledger = Ledger(url)
    for r in _runs("m-a", "t2", [1.0, 0.0]) + _runs("m-b", "t2", [0.5, 0.0]):
        ledger.add(r)
    ledger.close()
    page = tmp_path / "report.html"
    assert main(["report", "--ledger", url, "--by", "model_id", "--html", str(page)]) == 0
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    shot = tmp_path / "shot.png"
    subprocess.run(
        [browser, *flags, "--window-size=1100,1600", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    for plot in ("forest", "heat-map", "score-distribution", "pass-rate", "reason-codes"):
        assert f'data-plot="{plot}"' in dom
    assert dom.count('class="estimate"') == 2 and dom.count('class="interval"') == 2  # one per configuration
    assert dom.count('class="cell"') == 4  # two tasks × two configurations
    assert dom.count('class="score"') == 9  # the nine graded scores, one dot each
    assert dom.count('class="bar"') == 4  # two reason codes × two configurations
    assert shot.stat().st_size > 10_000


def _chromium_page_class() -> Any:
    """tests/service/chromium_page.py's ChromiumPage (that folder is not on the path from here)."""
    spec = importlib.util.spec_from_file_location(
        "chromium_page", Path(__file__).parents[1] / "service" / "chromium_page.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ChromiumPage


LAYOUT = """(() => {
  const box = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.width]; };
  const forest = document.querySelector('svg[data-plot="forest"]');
  const cells = [...document.querySelectorAll('svg[data-plot="heat-map"] rect.cell')];
  return {
    intervals: [...forest.querySelectorAll('line.interval')].map(box),
    estimates: [...forest.querySelectorAll('rect.estimate')].map(box),
    cells: cells.map((c) => [box(c)[1], getComputedStyle(c).fill, c.textContent]),
  };
})()"""


def test_forest_plot_and_heat_map_lay_out_in_headless_chromium(tmp_path: Path) -> None:
    browser = _chromium()
    tasks = [f"t{i}" for i in range(10)]
    records = [r for i, t in enumerate(tasks) for r in _runs("m-a", t, [1.0, 1.0 if i % 3 else 0.0])]
    records += [r for i, t in enumerate(tasks) for r in _runs("m-b", t, [0.0, 1.0 if i % 2 else 0.0])]
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(build_report(records, ["model_id"]), records), encoding="utf-8")
    page = _chromium_page_class()(browser, tmp_path / "profile")
    try:
        page.goto(page_file.as_uri())
        page.wait_for_text(["Configurations with their intervals", "Tasks by configuration"])
        layout = page.evaluate(LAYOUT)
    finally:
        page.close()
    assert len(layout["intervals"]) == len(layout["estimates"]) == 2
    for (left, width), (square_left, square_width) in zip(layout["intervals"], layout["estimates"], strict=True):
        assert width > 20 and left < square_left + square_width / 2 < left + width  # the mean inside its interval
    assert len(layout["cells"]) == 20 and all(width > 20 for width, _, _ in layout["cells"])
    fills = {title.split(": ")[1].split(" ")[0]: fill for _, fill, title in layout["cells"]}
    assert fills["1.00"] != fills["0.50"] != fills["0.00"] != fills["1.00"]  # shaded by the score


def test_plan_prints_the_tasks_needed_from_a_rate_or_the_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--rate", "0.4", "--effect", "0.05", "--runs-per-task", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1531 tasks to find a difference of 0.05 with 80% power") and "511 tasks if" in out
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(url)
    for t in range(6):
        for r in _runs("m-a", f"t{t}", [1.0, 0.0]) + _runs("m-b", f"t{t}", [0.0, 1.0]):
            ledger.add(r)
    ledger.close()
    assert main(["plan", "--from-ledger", url, "--effect", "0.1", "--runs-per-task", "2", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert (plan["task_variance"], plan["run_variance"]) == (0.0, 0.5) and plan["tasks"] == 393
    assert "paired differences of m-a/p1 and m-b/p1 on 6 tasks" in plan["source"]
    assert main(["plan", "--effect", "0.1"]) == 2


def test_ten_tasks_of_one_repository_are_one_cluster_too_few_to_tell() -> None:
    def of_repo(records: list[GradeRecord]) -> list[GradeRecord]:
        return [r.model_copy(update={"labels": {"repository": "one"}}) for r in records]

    a = of_repo([r for i in range(10) for r in _runs("m-a", f"t{i}", [1.0, 1.0])])
    b = of_repo([r for i in range(10) for r in _runs("m-b", f"t{i}", [0.0, 0.5])])
    found = compare(({"model_id": "m-a"}, a), ({"model_id": "m-b"}, b))
    assert (found.tasks, found.clusters, found.cluster_by, found.ci, found.significant) == (
        10,
        1,
        "repository",
        None,
        False,
    )
    assert "too few repository clusters to tell (1)" in found.verdict
