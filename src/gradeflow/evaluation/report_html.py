"""The report as one self-contained HTML page: inline CSS and inline SVG plots, no script, no network.

Plots (each an ``<svg class="plot" data-plot=NAME>``): ``forest`` and ``heat-map`` (see
:mod:`gradeflow.evaluation.report_svg`), ``score-distribution`` (every graded score per
configuration, with box, whiskers and mean), ``pass-rate`` (rate and Wilson interval, with the strict
rate, inconclusive counted as failed, as a hollow ring and the inconclusive rate beside it) and
``reason-codes`` (top reason codes, one bar per configuration).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from html import escape

from gradeflow.evaluation.ledger import GradeRecord, ReviewRecord
from gradeflow.evaluation.report import GroupStats, Report, group_records
from gradeflow.evaluation.report_svg import COLOURS as _COLOURS
from gradeflow.evaluation.report_svg import LEFT as _LEFT
from gradeflow.evaluation.report_svg import ROW as _ROW
from gradeflow.evaluation.report_svg import WIDTH as _WIDTH
from gradeflow.evaluation.report_svg import axis as _axis
from gradeflow.evaluation.report_svg import forest_plot, heat_map
from gradeflow.evaluation.report_svg import label as _label
from gradeflow.evaluation.report_svg import svg as _svg
from gradeflow.evaluation.report_svg import x as _x
from gradeflow.evaluation.reviews import review_report

__all__ = ["render_html"]

_CSS = """body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}h2{margin-top:1.6em}svg{display:block;margin:1em 0}
.verdict{padding:.6em 1em;background:#f4f4f8;border-left:4px solid #3366cc}"""


def _distribution_row(index: int, stats: GroupStats, scores: list[float]) -> list[str]:
    y, colour = 16 + index * _ROW + _ROW / 2, _COLOURS[index % len(_COLOURS)]
    parts = [f'<text x="{_LEFT - 8}" y="{y + 4}" font-size="12" text-anchor="end">{escape(_label(stats.key))}</text>']
    if len(scores) >= 2:
        q1, _, q3 = statistics.quantiles(scores, n=4, method="inclusive")
        parts.append(
            f'<line x1="{_x(min(scores))}" y1="{y}" x2="{_x(max(scores))}" y2="{y}" stroke="#999"/>'
            f'<rect x="{_x(q1)}" y="{y - 10}" width="{max(_x(q3) - _x(q1), 1)}" height="20" '
            f'fill="{colour}" fill-opacity="0.15" stroke="{colour}"/>'
        )
    for i, score in enumerate(scores):
        jitter = ((i * 37) % 17 - 8) * 1.1
        parts.append(
            f'<circle class="score" cx="{_x(score):.1f}" cy="{y + jitter:.1f}" r="3.5" fill="{colour}" '
            f'fill-opacity="0.7"><title>{score:.3f}</title></circle>'
        )
    if stats.median_score is not None and stats.mean_score is not None:
        m = _x(stats.mean_score)
        parts.append(
            f'<line x1="{_x(stats.median_score)}" y1="{y - 12}" x2="{_x(stats.median_score)}" '
            f'y2="{y + 12}" stroke="#222" stroke-width="2"/>'
            f'<path d="M{m} {y - 6}L{m + 6} {y}L{m} {y + 6}L{m - 6} {y}Z" fill="#222"/>'
        )
    parts.append(
        f'<text x="{_LEFT + _WIDTH + 10}" y="{y + 4}" font-size="11">n={stats.graded}'
        f"{f', inconclusive {stats.inconclusive}' if stats.inconclusive else ''}</text>"
    )
    return parts


def _distribution_plot(groups: list[GroupStats], members: list[list[GradeRecord]]) -> str:
    height = 16 + len(groups) * _ROW + 30
    body: list[str] = []
    for index, (stats, records) in enumerate(zip(groups, members, strict=True)):
        scores = [r.score for r in records if r.status == "graded" and r.score is not None]
        body += _distribution_row(index, stats, scores)
    return _svg(
        "score-distribution",
        "Score distribution per configuration",
        height,
        body + _axis(height, "score (box: quartiles, bar: median, diamond: mean)"),
    )


def _pass_rate_plot(groups: list[GroupStats]) -> str:
    height = 16 + len(groups) * _ROW + 30
    body: list[str] = []
    for index, stats in enumerate(groups):
        y, colour = 16 + index * _ROW + _ROW / 2, _COLOURS[index % len(_COLOURS)]
        body.append(
            f'<text x="{_LEFT - 8}" y="{y + 4}" font-size="12" text-anchor="end">{escape(_label(stats.key))}</text>'
        )
        if stats.strict_pass_rate is not None:
            body.append(
                f'<circle class="strict-rate" cx="{_x(stats.strict_pass_rate)}" cy="{y}" r="7" fill="none" '
                f'stroke="{colour}" stroke-width="2"><title>strict {stats.strict_pass_rate:.2f}</title></circle>'
            )
        if stats.pass_rate is None or stats.pass_rate_ci is None:
            body.append(f'<text x="{_LEFT + 14}" y="{y + 4}" font-size="11">no graded run{_rates(stats, ", ")}</text>')
            continue
        low, high = stats.pass_rate_ci
        body.append(
            f'<line x1="{_x(low)}" y1="{y}" x2="{_x(high)}" y2="{y}" stroke="{colour}" stroke-width="3"/>'
            f'<circle class="rate" cx="{_x(stats.pass_rate)}" cy="{y}" r="5" fill="{colour}"/>'
            f'<text x="{_LEFT + _WIDTH + 10}" y="{y + 4}" font-size="11">{stats.pass_rate:.2f} '
            f"[{low:.2f}, {high:.2f}]{_rates(stats, ' · ')}</text>"
        )
    return _svg(
        "pass-rate",
        "Pass rate with Wilson 95% interval; ring: strict pass rate (inconclusive counted as failed)",
        height,
        body + _axis(height, "pass rate (Wilson 95% interval); ring: inconclusive counted as failed"),
    )


def _rates(stats: GroupStats, separator: str) -> str:
    """`` · strict 0.40 · inconclusive 20%`` (nothing for an empty group)."""
    if stats.strict_pass_rate is None or stats.inconclusive_rate is None:
        return ""
    return f"{separator}strict {stats.strict_pass_rate:.2f} · inconclusive {stats.inconclusive_rate:.0%}"


def _reason_plot(groups: list[GroupStats], members: list[list[GradeRecord]], top: int = 8) -> str:
    counts = [Counter(c for r in records for c in dict.fromkeys(r.reason_codes)) for records in members]
    codes = [code for code, _ in sum(counts, Counter()).most_common(top)]
    bar, gap = 12, 10
    block = bar * max(len(groups), 1) + gap
    height = 16 + max(len(codes), 1) * block + 30 + 16 * len(groups)
    peak = max((c[code] for c in counts for code in codes), default=1)
    body = [] if codes else [f'<text x="{_LEFT}" y="30" font-size="12">no reason codes recorded</text>']
    for row, code in enumerate(codes):
        top_y = 16 + row * block
        body.append(
            f'<text x="{_LEFT - 8}" y="{top_y + block / 2}" font-size="12" text-anchor="end">{escape(code)}</text>'
        )
        for index, count in enumerate(c[code] for c in counts):
            width = _WIDTH * count / peak
            body.append(
                f'<rect class="bar" x="{_LEFT}" y="{top_y + index * bar}" width="{width:.1f}" '
                f'height="{bar - 2}" fill="{_COLOURS[index % len(_COLOURS)]}"><title>{escape(code)}: '
                f"{count}</title></rect>"
            )
    legend_y = 16 + max(len(codes), 1) * block + 10
    for index, stats in enumerate(groups):
        y = legend_y + index * 16
        body.append(
            f'<rect x="{_LEFT}" y="{y}" width="10" height="10" fill="{_COLOURS[index % len(_COLOURS)]}"/>'
            f'<text x="{_LEFT + 16}" y="{y + 9}" font-size="11">{escape(_label(stats.key))}</text>'
        )
    return _svg("reason-codes", "Reason codes per configuration (records carrying each code)", height, body)


def _table(rows: Sequence[GroupStats]) -> str:
    head = (
        "<tr><th>configuration</th><th>n</th><th>graded</th><th>tasks</th><th>clusters</th><th>inconclusive</th>"
        "<th>mean ± SE</th><th>median</th><th>std</th><th>min</th><th>max</th><th>pass rate [95% CI]</th>"
        "<th>inconclusive rate</th><th>strict pass rate [95% CI]</th><th>detectable (80%)</th><th>pass@k</th>"
        "<th>pass^k</th><th>decisions</th><th>top reasons</th></tr>"
    )

    def cell(value: float | None) -> str:
        return "–" if value is None else f"{value:.3f}"

    body = []
    for s in rows:
        ci = f" [{s.pass_rate_ci[0]:.2f}, {s.pass_rate_ci[1]:.2f}]" if s.pass_rate_ci else ""
        strict_ci = (
            f" [{s.strict_pass_rate_ci[0]:.2f}, {s.strict_pass_rate_ci[1]:.2f}]" if s.strict_pass_rate_ci else ""
        )
        body.append(
            f"<tr><td>{escape(_label(s.key))}{' (weak task)' if s.weak_tasks else ''}</td><td>{s.n}</td>"
            f"<td>{s.graded}</td><td>{s.tasks}</td><td>{s.clusters} {s.cluster_by}</td><td>{s.inconclusive}</td>"
            f"<td>{cell(s.mean_score)} ± {cell(s.mean_score_se)}</td><td>{cell(s.median_score)}</td>"
            f"<td>{cell(s.std_score)}</td>"
            f"<td>{cell(s.min_score)}</td><td>{cell(s.max_score)}</td><td>{cell(s.pass_rate)}{ci}</td>"
            f"<td>{cell(s.inconclusive_rate)}</td><td>{cell(s.strict_pass_rate)}{strict_ci}</td><td>{cell(s.mde)}</td>"
            f"<td>{escape(', '.join(f'@{k} {v:.2f}' for k, v in s.pass_at_k.items()))}</td>"
            f"<td>{escape(', '.join(f'^{k} {v:.2f}' for k, v in s.pass_hat_k.items()))}</td>"
            f"<td>{escape(', '.join(f'{k} {v}' for k, v in s.decisions.items()))}</td>"
            f"<td>{escape(', '.join(f'{c} ({n})' for c, n in s.top_reasons))}</td></tr>"
        )
    return f"<table>{head}{''.join(body)}</table>"


def _reviews_section(records: Sequence[GradeRecord], reviews: Sequence[ReviewRecord], by: Sequence[str]) -> str:
    if not reviews:
        return ""
    found = review_report(records, reviews, by)
    rows = "".join(
        f"<tr><td>{escape(' / '.join(s.key.values()) or 'overall')}</td><td>{s.reviewed}</td>"
        f"<td>{_num(s.agreement)}</td><td>{_num(s.kappa)}</td><td>{s.timed_out}</td></tr>"
        for s in [*found.groups, found.overall]
    )
    lines = "".join(
        f"<tr><td>{escape(g.task_id)}</td><td>{escape(g.run_id)}</td><td>{escape(' / '.join(g.key.values()))}</td>"
        f"<td>{_num(g.score)}</td><td>{escape(g.automatic_decision)}</td><td>{escape(g.final_decision)}</td>"
        f"<td>{escape(g.reviewer)}</td><td>{escape(', '.join(g.reason_codes))}</td></tr>"
        for g in found.disagreements
    )
    return (
        "<h2>Reviews</h2><p>The automatic verdict (approve when passed) against the reviewer's (reject and retry "
        "count as reject); the final decision of a reviewed grade is the reviewer's.</p>"
        "<table><tr><th>configuration</th><th>reviewed</th><th>agreement</th><th>Cohen's kappa</th>"
        f"<th>timed out</th></tr>{rows}</table>"
        "<h3>Disagreements</h3><table><tr><th>task</th><th>run</th><th>configuration</th><th>score</th>"
        f"<th>automatic</th><th>reviewer</th><th>by</th><th>reason codes</th></tr>{lines}</table>"
    )


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def render_html(report: Report, records: Sequence[GradeRecord], reviews: Sequence[ReviewRecord] = ()) -> str:
    """The whole page for ``report`` (built from ``records``, with the ``reviews`` answering them): one
    string, nothing to fetch."""
    members = [group for _, group in group_records(records, report.by)]
    verdict = "".join(f'<p class="verdict">{escape(c.verdict)}</p>' for c in report.comparisons) or (
        "<p>Fewer than two configurations: nothing to compare.</p>"
    )
    by = escape(", ".join(report.by))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>gradeflow report</title>'
        f"<style>{_CSS}</style></head><body><h1>gradeflow report</h1>"
        f"<p>{len(records)} records, grouped by {by}. Inconclusive grades are kept out of the pass rate and "
        "the scores; the inconclusive rate stands beside each pass rate, and the strict pass rate counts them "
        "as failures.</p>"
        f"<h2>Comparisons</h2>{verdict}"
        f"<h2>Configurations with their intervals</h2>{forest_plot(report.groups)}"
        f"<h2>Tasks by configuration</h2>{heat_map(report)}"
        f"<h2>Score distributions</h2>{_distribution_plot(report.groups, members)}"
        f"<h2>Pass rate</h2>{_pass_rate_plot(report.groups)}"
        f"<h2>Reason codes</h2>{_reason_plot(report.groups, members)}"
        f"<h2>Per configuration</h2>{_table(report.groups)}"
        f"<h2>Per configuration and task</h2>{_table(report.by_task)}"
        f"{_reviews_section(records, reviews, report.by)}"
        "</body></html>\n"
    )
