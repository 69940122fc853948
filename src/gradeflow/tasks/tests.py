"""Task: restore protected files, inject hidden tests, run the tests, score them."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from gradeflow.evidence import TestRunEvidence
from gradeflow.globs import matches_any
from gradeflow.graders.base import GradingContext
from gradeflow.graders.composite import safe_grade
from gradeflow.graders.constraints import protected_globs
from gradeflow.graders.tests import TestGrader
from gradeflow.models import GradeComponent, TaskSpec
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.tasks._files import inject_tree, remove_injected, restore_from
from gradeflow.tasks._retry import INFRA_RETRIES, retry_on_infra
from gradeflow.tasks._testrun import run_setup, run_test_command
from gradeflow.tasks.baseline import Baseline
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["TestsOutcome", "run_tests"]


class TestsOutcome(BaseModel):
    """The tests component and the raw evidence behind it."""

    __test__ = False

    component: GradeComponent
    evidence: TestRunEvidence
    restored: list[str]


@task(
    name="tests",
    cache_policy=NO_CACHE,
    retries=INFRA_RETRIES,
    retry_delay_seconds=1,
    retry_condition_fn=retry_on_infra,
)
def run_tests(task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline, sandboxes: SandboxFactory) -> TestsOutcome:
    workspace = snapshot.workspace
    assert workspace is not None
    touched = [p for c in snapshot.changes for p in (c.path, c.old_path) if p]
    # The patch's own test files go too: they had their run in the test-evidence step, and code in
    # them must not reach the acceptance tests (pytest imports every collected module in one process).
    keep_out = [*protected_globs(task_spec), *task_spec.tests.test_files]
    restored = restore_from(baseline.pristine, workspace, [p for p in touched if matches_any(p, keep_out)])
    evidence = candidate_test_run(task_spec, workspace, sandboxes)
    context = GradingContext(task=task_spec, workspace=snapshot.view(), tests=evidence, baseline_tests=baseline.tests)
    component = safe_grade(TestGrader(), context)
    if restored:
        component.messages.append(f"restored to base before the run: {', '.join(restored)}")
    return TestsOutcome(component=component, evidence=evidence, restored=restored)


def candidate_test_run(task_spec: TaskSpec, workspace: Path, sandboxes: SandboxFactory) -> TestRunEvidence:
    """Setup and tests in a sandbox over ``workspace``, hidden tests present only for the run."""
    backup = Path(tempfile.mkdtemp(prefix="gradeflow-hidden-"))
    injected: list[str] = []
    try:
        if task_spec.tests.hidden:
            try:
                injected = inject_tree(Path(task_spec.tests.hidden), workspace, backup)
            except OSError as exc:
                return TestRunEvidence(junit_error=f"hidden tests cannot be injected: {exc}")
        with sandboxes.open(workspace) as sandbox:
            setup = run_setup(task_spec, sandbox)
            if setup is not None and not setup.ok:
                return TestRunEvidence(
                    exit_code=setup.exit_code,
                    timed_out=setup.timed_out,
                    setup_failed=True,
                    output_tail=(setup.stdout + setup.stderr)[-2000:],
                )
            return run_test_command(task_spec, sandbox)
    finally:
        remove_injected(workspace, injected, backup)
        shutil.rmtree(backup, ignore_errors=True)
