"""Task: run custom graders, combine every component, publish artifacts."""

from __future__ import annotations

import json
import re

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.actions import ArtifactCreate
from prefect.utilities.context import get_task_and_flow_run_ids

from gradeflow.graders.base import GradingContext
from gradeflow.graders.composite import CompositeGrader, load_custom_grader
from gradeflow.graders.verdict import graded_result
from gradeflow.models import EnvironmentFingerprint, GradeComponent, GradeResult, TaskSpec
from gradeflow.profiles import Profile
from gradeflow.tasks.artifacts import post_artifacts
from gradeflow.tasks.snapshot import Snapshot
from gradeflow.tasks.tests import TestsOutcome
from gradeflow.text import for_markdown, for_terminal

__all__ = ["combine_components", "publish_artifacts"]


@task(name="combine", cache_policy=NO_CACHE)
def combine_components(
    task_spec: TaskSpec,
    submission_id: str,
    snapshot: Snapshot,
    components: list[GradeComponent],
    tests: TestsOutcome,
    profile: Profile,
    environment: EnvironmentFingerprint,
) -> GradeResult:
    context = GradingContext(task=task_spec, workspace=snapshot.view(), tests=tests.evidence)
    composite = CompositeGrader.for_task(task_spec, profile, [(load_custom_grader(s), s) for s in task_spec.graders])
    return graded_result(
        task_spec,
        submission_id,
        [*components, *composite.grade_components(context)],
        composite,
        patch=snapshot.patch,
        changes=snapshot.changes,
        environment=environment,
    )


def _artifact_key(result: GradeResult) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", f"grade-{result.task_id}-{result.submission_id}".lower())[:100]


def publish_artifacts(result: GradeResult) -> None:
    """A table of the components and a markdown summary on the current flow run (posted through one client,
    or off the caller's path inside :func:`~gradeflow.tasks.artifacts.deferred_artifacts`)."""
    key = _artifact_key(result)
    _, flow_run_id = get_task_and_flow_run_ids()
    table = [
        {
            "component": c.name,
            "role": c.role,
            "weight": c.weight,
            "score": round(c.score, 3),
            "passed": c.passed,
            "reasons": ", ".join(c.reason_codes),
        }
        for c in result.components
    ]
    # Messages quote file names and test ids the candidate chose: literal text, never markdown.
    lines = [
        f"# {result.task_id} / {result.submission_id}",
        "",
        f"**{for_markdown(result.summary())}**",
        "",
        f"- status: `{result.status}`",
        f"- decision: `{result.decision}`",
        f"- reason codes: {', '.join(f'`{c}`' for c in result.reason_codes) or 'none'}",
        f"- files changed: {len(result.files_changed)} (+{result.lines_added} -{result.lines_removed})",
        "",
    ]
    lines += [f"- {for_markdown(m)}" for m in result.messages]
    for component in result.components:
        lines += ["", f"## {for_markdown(component.short())}", *[f"- {for_markdown(m)}" for m in component.messages]]
    post_artifacts(
        [
            ArtifactCreate(
                key=key + "-components",
                type="table",
                description=result.summary(),
                data=json.dumps(table),
                flow_run_id=flow_run_id,
            ),
            ArtifactCreate(
                key=key + "-summary",
                type="markdown",
                description=for_terminal(result.summary()),
                data="\n".join(lines),
                flow_run_id=flow_run_id,
            ),
        ]
    )
