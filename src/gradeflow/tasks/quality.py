"""Task: measure every function on ``quality.paths`` and score the limits."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.graders.base import GradingContext
from gradeflow.graders.quality import QualityGrader, SourceError, measure_source
from gradeflow.models import GradeComponent, TaskSpec
from gradeflow.models.evidence import FunctionMetrics
from gradeflow.tasks._files import list_files
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["measure_quality"]


@task(name="quality", cache_policy=NO_CACHE)
def measure_quality(task_spec: TaskSpec, snapshot: Snapshot) -> GradeComponent | None:
    """The quality component, or ``None`` when the task declares no quality section."""
    if task_spec.quality is None:
        return None
    view = snapshot.view()
    functions: list[FunctionMetrics] = []
    unreadable: list[str] = []
    for path in list_files(view.root, task_spec.quality.paths):
        try:
            functions += measure_source(path, view.read(path))
        except (SourceError, FileNotFoundError) as exc:
            unreadable.append(str(exc))
    context = GradingContext(task=task_spec, workspace=view, functions=functions, unreadable=unreadable)
    return QualityGrader().grade(context)
