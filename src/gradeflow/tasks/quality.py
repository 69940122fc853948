"""Task: measure every unit of code on ``quality.paths`` and score the limits.

Units are functions, lambdas, class bodies and module bodies (see :mod:`gradeflow.graders.quality`).

A link on the paths is measured where it leads (a file inside the tree), so a module cannot hide behind
one; a link the patch added or changed there is not measured at all but is a finding (the component is
``quality-unparseable``): turning a measured file into a link to a text file made every limit hold.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.graders.base import GradingContext
from gradeflow.graders.quality import QualityGrader, SourceError, measure_units
from gradeflow.integrity.files import matching_entries
from gradeflow.models import GradeComponent, TaskSpec
from gradeflow.models.evidence import FunctionMetrics
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["measure_quality", "measured_links"]


@task(name="quality", cache_policy=NO_CACHE)
def measure_quality(task_spec: TaskSpec, snapshot: Snapshot) -> GradeComponent | None:
    """The quality component, or ``None`` when the task declares no quality section."""
    if task_spec.quality is None:
        return None
    view = snapshot.view()
    globs = task_spec.quality.paths
    functions: list[FunctionMetrics] = []
    changed = {c.path for c in snapshot.changes if c.status != "removed"}
    files, links = matching_entries(view.root, globs)
    unreadable = [f"{path}: the patch made it a link" for path in links if path in changed]
    for path in files:
        try:
            functions += measure_units(path, view.read(path))
        except (SourceError, FileNotFoundError) as exc:
            unreadable.append(str(exc))
    for path in (p for p in links if p not in changed):
        try:  # the base's own link: measured where it leads, when that is a source inside the tree
            functions += measure_units(path, view.read(path))
        except (SourceError, FileNotFoundError):
            continue
    context = GradingContext(task=task_spec, workspace=view, functions=functions, unreadable=unreadable)
    return QualityGrader().grade(context)


def measured_links(root: Path, globs: list[str]) -> list[str]:
    """Repository-relative paths of the links to files under ``root`` that match ``globs`` (no .git)."""
    return matching_entries(root, globs)[1]
