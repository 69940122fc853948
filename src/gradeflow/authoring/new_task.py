"""``gradeflow task new``: a task spec derived from a repository, a base and a reference fix.

Every input is checked before any flow runs (``SpecError``, exit 2): the test command's ``{junit}``,
the repository, the revisions, the reference patch and whether it applies. Then the test files the
reference adds or edits are written beside the task spec as its hidden tests (``hidden_tests/``), the
rest of the reference as ``reference.diff``, and the tests run ``repeat`` times on the base and on the
base with the reference, both with the hidden tests injected; the last runs of each side are the written
spec's baseline and validation grades (:mod:`gradeflow.authoring.task_runs`). The lists follow
:func:`~gradeflow.authoring.derive.derive_tests`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from gradeflow.authoring.derive import DerivedTests
from gradeflow.authoring.patches import (
    applied_tree,
    commit_of,
    copy_files,
    diff_between,
    is_test_path,
    run_git,
    split_diff,
)
from gradeflow.authoring.run_progress import RunProgress
from gradeflow.authoring.task_runs import RunPlan, derive_and_validate
from gradeflow.errors import SpecError
from gradeflow.flows.session import flow_runs_without_heartbeat, open_session
from gradeflow.flows.validate import ValidationReport, doctest_warnings
from gradeflow.models import TaskSpec, TaskType, TestsSpec
from gradeflow.spec import load_task
from gradeflow.tasks.flaky import run_listener

__all__ = [
    "HIDDEN_FOLDER",
    "REFERENCE_FILE",
    "NewTask",
    "NewTaskRequest",
    "PreparedTask",
    "new_task",
    "prepare_new_task",
]

HIDDEN_FOLDER = "hidden_tests"
"""The hidden tests' folder, beside the task spec."""
REFERENCE_FILE = "reference.diff"
"""The reference patch without its test files, beside the task spec."""
Progress = Callable[[str], None]


class NewTaskRequest(BaseModel):
    """What ``task new`` was asked for."""

    model_config = ConfigDict(frozen=True)

    repo: Path
    base: str
    reference: Path | None = None
    """A patch file; or ``fix_commit``."""
    fix_commit: str | None = None
    """A commit whose difference from ``base`` is the reference."""
    tests: str
    out: Path
    type: TaskType = "bugfix"
    repeat: int = 3
    task_id: str | None = None
    setup: str | None = None


class NewTask(BaseModel):
    """What was written and what validation found."""

    path: Path
    derived: DerivedTests
    hidden: list[str]
    """The hidden test files, relative to the repository root."""
    report: ValidationReport


def _read_reference(request: NewTaskRequest, repo: Path, base: str) -> str:
    if request.fix_commit is not None:
        fix = commit_of(repo, request.fix_commit, "--fix-commit")
        if fix == base or run_git(repo, "merge-base", "--is-ancestor", base, fix, check=False).returncode != 0:
            raise SpecError(
                f"--fix-commit: {request.fix_commit} does not descend from --base {base[:12]} (a fix is a later "
                "commit on top of the base; the reference would be the base's difference from it)"
            )
        patch = diff_between(repo, base, fix)
        what = f"--fix-commit: {request.fix_commit}"
    else:
        assert request.reference is not None
        try:
            patch = request.reference.read_bytes().decode("utf-8", errors="surrogateescape")
        except OSError as exc:
            raise SpecError(f"--reference: cannot read {request.reference}: {exc.strerror or exc}") from None
        what = f"--reference: {request.reference}"
    if not split_diff(patch):
        raise SpecError(f"{what} holds no change (not a unified diff, or empty)")
    return patch


def _check_repo(repo: Path) -> None:
    if not repo.is_dir():
        raise SpecError(f"--repo: {repo} is not a folder")
    if run_git(repo, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise SpecError(f"--repo: {repo} is not a git repository")


def _task_id(request: NewTaskRequest) -> str:
    raw = request.task_id or request.out.resolve().parent.name or request.repo.resolve().name
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", raw).strip("-._")[:128] or "task"
    if request.task_id is not None and name != request.task_id:
        raise SpecError(f"--task-id: {request.task_id!r} is not an id (letters, digits, . _ -)")
    return name


def _write_inputs(
    request: NewTaskRequest, repo: Path, base: str, patch: str
) -> tuple[dict[str, object], list[str], list[str]]:
    """Hidden tests and reference.diff written beside the task spec: the spec's skeleton, the tree's files
    (base plus reference) and the hidden test files."""
    folder = request.out.resolve().parent
    test_globs = TestsSpec(command="{junit}").test_files
    blocks = split_diff(patch)
    hidden = [b.new for b in blocks if b.adds_or_edits and b.new and is_test_path(b.new, test_globs)]
    with applied_tree(repo, base, patch, f"--reference ({len(blocks)} files)") as tree:
        files = run_git(tree, "ls-files", "-co", "-z").stdout.split("\0")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(folder / HIDDEN_FOLDER, ignore_errors=True)
        copy_files(tree, hidden, folder / HIDDEN_FOLDER)
    (folder / REFERENCE_FILE).write_text(
        "".join(b.text for b in blocks if b.new not in hidden), encoding="utf-8", errors="surrogateescape"
    )
    tests: dict[str, object] = {"command": request.tests}
    if hidden:
        tests["hidden"] = HIDDEN_FOLDER
    spec: dict[str, object] = {
        "task_id": _task_id(request),
        "type": request.type,
        "repo": os.path.relpath(repo.resolve(), folder),
        "base_revision": base,
        "setup": request.setup,
        "tests": tests,
    }
    return spec, [f for f in files if f], hidden


def _sealed(spec: dict[str, object], derived: DerivedTests) -> dict[str, object]:
    """The skeleton with the derived lists and the sealed defaults written out."""
    tests = spec["tests"]
    assert isinstance(tests, dict)
    tests = tests | {
        "fail_to_pass": derived.fail_to_pass,
        "pass_to_pass": derived.pass_to_pass,
        "quarantine": derived.quarantine,
        "partial_credit": True,
        "require_all_pass_to_pass": False,
        "publish_hidden_details": False,
        "infrastructure_editable": [],
    }
    return {**spec, "tests": tests, "constraints": {"allow_new_tests": False}}


def write_spec(path: Path, data: dict[str, object], header: str) -> None:
    """Write ``data`` as a task spec YAML file under a comment ``header``."""
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    body = yaml.safe_dump({k: v for k, v in data.items() if v is not None}, sort_keys=False, allow_unicode=True)
    path.write_text(comment + body, encoding="utf-8")


class PreparedTask(BaseModel):
    """A checked request with its inputs written: the skeleton spec (no test lists yet) and what it needs."""

    request: NewTaskRequest
    skeleton: dict[str, object]
    files: list[str]
    """Every file of the base with the reference applied (to name tests by their files)."""
    hidden: list[str]
    reference: str
    """The reference patch without the hidden test files."""
    header: str


def prepare_new_task(request: NewTaskRequest) -> PreparedTask:
    """Check every input (``SpecError`` naming it), then write hidden_tests/, reference.diff and a skeleton spec.

    Runs no flow: a caller may start a Prefect server only after this succeeded.
    """
    if "{junit}" not in request.tests:
        raise SpecError("--tests: the command must contain {junit} (where the JUnit XML report goes)")
    _check_repo(request.repo)
    base = commit_of(request.repo, request.base, "--base")
    patch = _read_reference(request, request.repo, base)
    _task_id(request)
    skeleton, files, hidden = _write_inputs(request, request.repo, base, patch)
    reference = (request.out.resolve().parent / REFERENCE_FILE).read_text(encoding="utf-8", errors="surrogateescape")
    header = f"Derived by `gradeflow task new` from {request.repo} at {base[:12]} ({request.repeat} runs per side)."
    write_spec(request.out, skeleton, header)
    return PreparedTask(
        request=request, skeleton=skeleton, files=files, hidden=hidden, reference=reference, header=header
    )


def new_task(prepared: PreparedTask, progress: Progress) -> NewTask:
    """Run the tests on both sides, write the derived lists into the task spec, and validate it."""
    request = prepared.request
    task = load_task(request.out, scored=False)
    session = open_session(task)  # the sandbox the task will be graded in (isolated by default)
    plan = RunPlan(request.repeat)
    progress(
        f"running the tests {plan.base}x on the base and {plan.reference}x with the reference "
        "(the last runs are the validation's)"
    )

    def written(derived: DerivedTests) -> TaskSpec:
        write_spec(request.out, _sealed(prepared.skeleton, derived), prepared.header)
        return load_task(request.out)

    with session, RunProgress(plan.total) as display, flow_runs_without_heartbeat():
        token = run_listener.set(display)
        try:
            derived, report = derive_and_validate(
                task, prepared.reference, session, plan, set(prepared.files), written, display, progress
            )
        finally:
            run_listener.reset(token)
    for warning in doctest_warnings(load_task(request.out)):
        progress(f"warning: {warning}")
    progress(
        f"wrote {request.out}: {len(derived.fail_to_pass)} fail_to_pass, {len(derived.pass_to_pass)} pass_to_pass, "
        f"{len(derived.quarantine)} quarantined"
    )
    return NewTask(path=request.out, derived=derived, hidden=prepared.hidden, report=report)
