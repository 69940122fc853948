"""Tasks: the three hard-stop detectors (security, compatibility, data loss) on a graded snapshot.

Each compares the pristine base (``baseline.pristine``) with the candidate's workspace, on the grader's
side: bandit runs as a subprocess of the grader's interpreter, griffe parses without importing, and the
data-loss check reads files. None of them runs inside the candidate's sandbox.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.graders.base import GradingContext
from gradeflow.graders.compatibility import CompatibilityGrader
from gradeflow.graders.data_loss import DataLossGrader
from gradeflow.graders.security import SecurityGrader
from gradeflow.models import GradeComponent, TaskSpec
from gradeflow.tasks.baseline import Baseline
from gradeflow.tasks.compatibility import api_breaks
from gradeflow.tasks.data_loss import data_loss_from
from gradeflow.tasks.security import security_findings
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["check_compatibility", "check_data_loss", "check_security"]


def _reader(root: Path) -> Callable[[str], str | None]:
    def read(path: str) -> str | None:
        try:
            return (root / path).read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    return read


def _workspace(snapshot: Snapshot) -> Path:
    if snapshot.workspace is None:
        raise ValueError("a refused submission has no workspace to check")
    return snapshot.workspace


def _python_texts(root: Path, paths: dict[str, str]) -> dict[str, str]:
    """The Python files of ``root`` at ``paths``' values, keyed by ``paths``' keys."""
    read = _reader(root)
    return {key: text for key, path in paths.items() if key.endswith(".py") and (text := read(path)) is not None}


@task(name="security", cache_policy=NO_CACHE)
def check_security(task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline) -> GradeComponent:
    """The security gate: bandit findings the patch adds to its changed Python files."""
    changed = [c for c in snapshot.changes if c.status != "removed" and not c.binary]
    # A renamed file is compared with its base under the new name, so its old findings stay forgiven.
    base = _python_texts(baseline.pristine, {c.path: c.old_path or c.path for c in changed})
    candidate = _python_texts(_workspace(snapshot), {c.path: c.path for c in changed})
    spec = task_spec.security
    findings = security_findings(base, candidate, spec.severity, spec.confidence)
    grader = SecurityGrader(findings, unavailable="bandit could not run")
    return grader.grade(GradingContext(task=task_spec, workspace=snapshot.view()))


@task(name="compatibility", cache_policy=NO_CACHE)
def check_compatibility(task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline) -> GradeComponent:
    """The compatibility gate: griffe's public-API breaks from the base to the candidate."""
    spec = task_spec.compatibility
    breaks = api_breaks(baseline.pristine, _workspace(snapshot), spec.packages, spec.allow)
    grader = CompatibilityGrader(breaks, unavailable="a package could not be loaded on the base")
    return grader.grade(GradingContext(task=task_spec, workspace=snapshot.view()))


@task(name="data-loss", cache_policy=NO_CACHE)
def check_data_loss(task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline) -> GradeComponent:
    """The data-loss gate: deleted tests, out-of-scope deletions, removed or truncated data files."""
    scope = task_spec.constraints.allowed_files or ["**"]
    findings = data_loss_from(
        snapshot.changes, _reader(baseline.pristine), _reader(_workspace(snapshot)), scope, task_spec.compatibility.data
    )
    return DataLossGrader(findings).grade(GradingContext(task=task_spec, workspace=snapshot.view()))
