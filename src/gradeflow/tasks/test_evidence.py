"""Task: run the patch's own tests on the pristine base and on the candidate, then grade that evidence.

Two runs, each on a fresh tree after the task's setup command, with gradeflow's pytest harness:

* a copy of the candidate as the patch left it, its test infrastructure (configuration, code loaders)
  sealed to the base (hidden tests are not injected);
* a fresh copy of the pristine base with only the patch's test files (``tests.test_files`` it adds or
  changes, ``conftest.py`` included) copied in.

What runs (see :func:`gradeflow.tasks._functions.selected_test_ids`): a test file the patch adds is
run whole; in a test file it changes, only the test functions (or ``Test*`` classes) whose own lines
changed. The command is ``tests.evidence_command`` with ``{tests}`` replaced by the shell-quoted node
ids, or else ``tests.command`` with the node ids appended, which suits pytest and runners that take
pytest-style node ids. gradeflow's harness then keeps only the selected tests in the run, so the
task's own tests never count as the patch's proof, whatever paths the command names. Limits: touched
module-level helpers or fixtures select no test, a test file that does not parse is run whole, and
pytest's ``python_functions``/``python_classes`` are not read.

On the candidate run the harness also records, per test, which lines the patch changed outside its tests
(inside functions: :mod:`gradeflow.tasks._reach`) the test ran; a test that runs none of them proves nothing
about the change, whatever it does on the base.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.graders.base import GradingContext
from gradeflow.graders.test_evidence import TestEvidenceGrader
from gradeflow.integrity.sealing import seal_infrastructure
from gradeflow.models import ChangedFile, GradeComponent, TaskSpec
from gradeflow.models.evidence import PatchTestsEvidence, TestRunEvidence
from gradeflow.models.globs import matches_any
from gradeflow.sandbox.base import SandboxFactory, remove_tree
from gradeflow.tasks._functions import selected_test_ids, touched_lines
from gradeflow.tasks._reach import reach_targets
from gradeflow.tasks._retry import INFRA_RETRIES, retry_on_infra
from gradeflow.tasks._sources import file_functions
from gradeflow.tasks._testrun import run_test_command, start_harness
from gradeflow.tasks.baseline import Baseline, task_sandbox, working_copy
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["check_test_evidence", "evidence_command", "patch_test_files", "select_patch_tests"]

_Selection = tuple[str, list[str]]
"""The evidence command and the tests it must run (and nothing else)."""

_Reach = dict[str, list[int]]
"""File → the lines the patch changed in it that a test must run one of (:mod:`gradeflow.tasks._reach`)."""


def patch_test_files(task_spec: TaskSpec, snapshot: Snapshot) -> list[ChangedFile]:
    """The test files the patch adds or changes (removed ones are gone from the candidate)."""
    return [c for c in snapshot.changes if c.status != "removed" and matches_any(c.path, task_spec.tests.test_files)]


def select_patch_tests(task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline) -> list[str]:
    """Node ids (or whole files) of the patch's own tests, in the order of the diff."""
    lines = touched_lines(snapshot.patch)
    view = snapshot.view()
    selected: list[str] = []
    for change in patch_test_files(task_spec, snapshot):
        if not change.path.endswith(".py") or change.path.rsplit("/", 1)[-1] == "conftest.py":
            continue
        if change.status == "added":
            selected.append(change.path)
            continue
        functions = file_functions(change, view, baseline.pristine, lines.get(change.path))
        if functions is None:
            selected.append(change.path)
        else:
            selected += selected_test_ids(change.path, functions.touched, functions.after)
    return list(dict.fromkeys(selected))


def evidence_command(task_spec: TaskSpec, selected: list[str]) -> str:
    """The command that runs only ``selected`` (``{junit}`` is left for the run to fill in)."""
    quoted = " ".join(shlex.quote(s) for s in selected)
    if task_spec.tests.evidence_command:
        return task_spec.tests.evidence_command.replace("{tests}", quoted)
    return f"{task_spec.tests.command} {quoted}"


def _run(
    task_spec: TaskSpec,
    tree: Path,
    sandboxes: SandboxFactory,
    run: _Selection,
    baseline: Baseline,
    reach: _Reach | None = None,
) -> TestRunEvidence:
    """The command with the harness (checked against the base run) in a sandbox over ``tree`` holding a
    copy of the task's environment.

    The harness keeps only the selected tests, so the task's own tests never run with them (a command
    that names test paths, ``pytest tests/``, would otherwise collect those too and count them as proof).
    """
    command, selected = run
    harness = start_harness(task_spec, tree, command, baseline.tests, selected, reach=reach)
    with task_sandbox(task_spec, tree, baseline, sandboxes) as sandbox:
        return run_test_command(task_spec, sandbox, command, harness=harness, base=baseline.tests)


def _candidate_run(
    task_spec: TaskSpec,
    snapshot: Snapshot,
    baseline: Baseline,
    sandboxes: SandboxFactory,
    run: _Selection,
    reach: _Reach | None,
) -> TestRunEvidence:
    """The command on a fresh copy of the candidate, its test infrastructure sealed to the base; the harness
    records which of the ``reach`` lines each test runs."""
    assert snapshot.workspace is not None
    tree = working_copy(snapshot.workspace)
    try:
        seal_infrastructure(task_spec, snapshot.changes, tree, baseline.pristine)
        return _run(task_spec, tree, sandboxes, run, baseline, reach)
    finally:
        remove_tree(tree.parent, ignore_errors=True)


def _base_run(
    task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline, sandboxes: SandboxFactory, run: _Selection
) -> TestRunEvidence:
    """The command on a pristine copy holding only the patch's test files from the candidate."""
    assert snapshot.workspace is not None
    copy = working_copy(baseline.pristine)
    try:
        for change in patch_test_files(task_spec, snapshot):
            source, target = snapshot.workspace / change.path, copy / change.path
            if source.is_file() and not source.is_symlink():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        return _run(task_spec, copy, sandboxes, run, baseline)
    finally:
        remove_tree(copy.parent, ignore_errors=True)


@task(
    name="test-evidence",
    cache_policy=NO_CACHE,
    retries=INFRA_RETRIES,
    retry_delay_seconds=1,
    retry_condition_fn=retry_on_infra,
)
def check_test_evidence(
    task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline, sandboxes: SandboxFactory
) -> GradeComponent:
    """The test-evidence component: the patch's tests on the candidate (should pass) and the base (should fail)."""
    assert snapshot.workspace is not None
    files = [c.path for c in patch_test_files(task_spec, snapshot)]
    selected = select_patch_tests(task_spec, snapshot, baseline)
    evidence = PatchTestsEvidence(files=files, selected=selected)
    if selected:
        run = (evidence_command(task_spec, selected), selected)
        # Measured where the task's runs have the harness (pytest); the plugin records it.
        evidence.reach = reach_targets(task_spec, snapshot) if baseline.tests.harness is not None else None
        evidence.candidate = _candidate_run(task_spec, snapshot, baseline, sandboxes, run, evidence.reach)
        evidence.base = _base_run(task_spec, snapshot, baseline, sandboxes, run)
    context = GradingContext(task=task_spec, workspace=snapshot.view(), patch_tests=evidence)
    return TestEvidenceGrader().grade(context)
