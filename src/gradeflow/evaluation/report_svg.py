"""Inline SVG pieces of the HTML report: the shared axis and frame, the forest plot and the heat map.

``forest`` (``data-plot="forest"``): one row per configuration, its mean score as a dot and the
clustered 95% interval as a line (class ``interval``), with the tasks, runs and clusters behind it.
``heat-map``: one cell (class ``cell``) per task and configuration, shaded by the mean score; a weak
task (recorded strength below the threshold) is marked in its row label.
"""

from __future__ import annotations

from html import escape

from gradeflow.evaluation.report import GroupStats, Report

__all__ = ["COLOURS", "LEFT", "ROW", "WIDTH", "axis", "forest_plot", "heat_map", "label", "svg", "x"]

COLOURS = ["#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6", "#dd4477", "#66aa00"]
LEFT, WIDTH, ROW = 190, 480, 44


def label(key: dict[str, str]) -> str:
    return " / ".join(key.values()) or "all"


def x(score: float) -> float:
    return LEFT + score * WIDTH


def axis(height: float, caption: str) -> list[str]:
    parts = [f'<line x1="{LEFT}" y1="{height - 24}" x2="{LEFT + WIDTH}" y2="{height - 24}" stroke="#666"/>']
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{x(tick)}" y1="{height - 24}" x2="{x(tick)}" y2="{height - 20}" stroke="#666"/>'
            f'<text x="{x(tick)}" y="{height - 8}" font-size="11" text-anchor="middle">{tick:g}</text>'
        )
    parts.append(
        f'<text x="{LEFT + WIDTH / 2}" y="{height + 6}" font-size="11" text-anchor="middle">{escape(caption)}</text>'
    )
    return parts


def svg(name: str, title: str, height: float, body: list[str], width: float = LEFT + WIDTH + 140) -> str:
    return (
        f'<svg class="plot" data-plot="{name}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height + 12}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
        + "".join(body)
        + "</svg>"
    )


def _forest_row(index: int, stats: GroupStats) -> list[str]:
    y, colour = 16 + index * ROW + ROW / 2, COLOURS[index % len(COLOURS)]
    parts = [f'<text x="{LEFT - 8}" y="{y + 4}" font-size="12" text-anchor="end">{escape(label(stats.key))}</text>']
    units = f"{stats.tasks} tasks, {stats.graded} runs, {stats.clusters} {stats.cluster_by} clusters"
    if stats.mean_score is None:
        return [*parts, f'<text x="{LEFT + 14}" y="{y + 4}" font-size="11">no graded run</text>']
    if stats.mean_score_ci is not None:
        low, high = (min(max(v, 0.0), 1.0) for v in stats.mean_score_ci)
        parts.append(
            f'<line class="interval" x1="{x(low):.1f}" y1="{y}" x2="{x(high):.1f}" y2="{y}" stroke="{colour}" '
            f'stroke-width="3"><title>95% CI {stats.mean_score_ci[0]:.3f} to {stats.mean_score_ci[1]:.3f}'
            "</title></line>"
        )
    parts.append(
        f'<rect class="estimate" x="{x(stats.mean_score) - 5:.1f}" y="{y - 5}" width="10" height="10" '
        f'fill="{colour}"><title>mean {stats.mean_score:.3f}</title></rect>'
        f'<text x="{LEFT + WIDTH + 10}" y="{y + 4}" font-size="11">{escape(units)}</text>'
    )
    return parts


def forest_plot(groups: list[GroupStats]) -> str:
    height = 16 + len(groups) * ROW + 30
    body = [part for index, stats in enumerate(groups) for part in _forest_row(index, stats)]
    title = "Mean score per configuration with its clustered 95% interval"
    return svg("forest", title, height, body + axis(height, "mean score (line: 95% interval, clustered)"), 900)


def _shade(score: float) -> str:
    """Red (0) through white (0.5) to blue (1), light enough for black text."""
    end, weight = ((230, 110, 100), (0.5 - score) * 2) if score < 0.5 else ((110, 150, 230), (score - 0.5) * 2)
    red, green, blue = (round(255 + (channel - 255) * weight) for channel in end)
    return f"rgb({red},{green},{blue})"


def heat_map(report: Report) -> str:
    configs = [label(g.key) for g in report.groups]
    weak = {task for g in report.groups for task in g.weak_tasks}
    tasks = sorted({s.key.get("task_id", "") for s in report.by_task})
    cell, top = max(36.0, min(90.0, 600 / max(len(configs), 1))), 70
    body = [
        f'<text x="{LEFT + (i + 0.5) * cell}" y="{top - 8}" font-size="11" text-anchor="end" '
        f'transform="rotate(-30 {LEFT + (i + 0.5) * cell} {top - 8})">{escape(name)}</text>'
        for i, name in enumerate(configs)
    ]
    for row, task in enumerate(tasks):
        y = top + row * 24
        mark = " (weak)" if task in weak else ""
        body.append(f'<text x="{LEFT - 8}" y="{y + 16}" font-size="12" text-anchor="end">{escape(task + mark)}</text>')
    for stats in report.by_task:
        row, col = tasks.index(stats.key.get("task_id", "")), configs.index(label(_config_key(stats, report.by)))
        value = "–" if stats.mean_score is None else f"{stats.mean_score:.2f}"
        fill = "#eee" if stats.mean_score is None else _shade(stats.mean_score)
        body.append(
            f'<rect class="cell" x="{LEFT + col * cell}" y="{top + row * 24}" width="{cell - 2}" height="22" '
            f'fill="{fill}"><title>{escape(stats.key.get("task_id", ""))} · {escape(configs[col])}: {value} '
            f"over {stats.graded} runs</title></rect>"
            f'<text x="{LEFT + (col + 0.5) * cell}" y="{top + row * 24 + 15}" font-size="11" '
            f'text-anchor="middle">{value}</text>'
        )
    height = top + len(tasks) * 24 + 10
    title = "Mean score per task (rows) and configuration (columns)"
    return svg("heat-map", title, height, body, LEFT + cell * len(configs) + 20)


def _config_key(stats: GroupStats, by: list[str]) -> dict[str, str]:
    return {name: stats.key[name] for name in by}
