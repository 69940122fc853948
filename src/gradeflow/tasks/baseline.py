"""Task: the pristine baseline, materialized once per task and environment and cached across runs.

The cached value points at a folder under ``$GRADEFLOW_HOME/baselines``; the baseline's health (setup
and one test run on the pristine base, hidden tests included) is checked when it is built. A broken
baseline raises, so nothing inconclusive is ever cached.
"""

from __future__ import annotations

import hashlib
import pickle
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from prefect import task
from pydantic import BaseModel, ConfigDict, Field
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from gradeflow.bulk import collector_paused
from gradeflow.config import cache_dir
from gradeflow.environments.roots import locked
from gradeflow.environments.store import touch_built, touch_used
from gradeflow.errors import BaselineBroken, SubmissionError
from gradeflow.integrity.files import inject_tree, list_files
from gradeflow.integrity.handed import Prior, prior_state
from gradeflow.integrity.harness import Harness
from gradeflow.integrity.plugin_files import plugin_template
from gradeflow.models import EnvironmentFingerprint, TaskSpec
from gradeflow.models.evidence import TestRunEvidence
from gradeflow.sandbox.base import Sandbox, SandboxFactory, remove_tree
from gradeflow.tasks._environment import (
    TaskEnvironment,
    capture_environment,
    import_environment,
    lay_workspace,
    shared_folder,
    tree_manifest,
)
from gradeflow.tasks._git import git
from gradeflow.tasks._patching import apply_patch
from gradeflow.tasks._retry import INFRA_RETRIES, retry_on_infra
from gradeflow.tasks._state import data_digest, inode_digest
from gradeflow.tasks._testrun import require_report, run_setup, run_test_command, start_harness
from gradeflow.tasks.repo import BaseRef, materialize
from gradeflow.tasks.shared import setup_failure, shared_environment, shared_present

__all__ = [
    "Baseline",
    "base_test_run",
    "baseline_key",
    "build_base",
    "build_environment",
    "changed_state",
    "discard_state",
    "ensure_pristine",
    "inject_hidden",
    "inject_hidden_on_base",
    "open_sandbox",
    "pack_tests",
    "prepare_baseline",
    "replaced_by_hidden",
    "state_digests",
    "task_environment",
    "task_sandbox",
    "working_copy",
]


class Baseline(BaseModel):
    """A healthy pristine base: where it lives and how its tests behave.

    The base run's evidence is kept pickled (``tests_record``, made by :func:`pack_tests`) and unpickled the
    first time ``tests`` is read. On a cache hit Prefect reads the cached baseline twice (once to see
    that it exists, once to use it), and a base run of 10,000 test cases costs about 0.1 s to unpickle each
    time: as bytes it is unpickled once per grade, whatever the suite's size.
    """

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    base: BaseRef
    key: str
    pristine: Path
    """One-commit repository of the base content; never modified after it is built."""
    tests_record: bytes = Field(repr=False)
    """``tests`` pickled."""
    environment: TaskEnvironment | None = None
    """What ``setup`` built on the pristine base, copied into every run (``None``: the task has no setup)."""
    digests: dict[str, str] = Field(default_factory=dict)
    """Keyed digests of the cached state taken when it was built (``pristine``, ``environment``, ``record``),
    checked before every use by :func:`changed_state`."""

    @cached_property
    def tests(self) -> TestRunEvidence:
        """The test command on the pristine base with hidden tests injected."""
        with collector_paused():  # tens of thousands of objects at once
            evidence = pickle.loads(self.tests_record)
        assert isinstance(evidence, TestRunEvidence)
        return evidence

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()  # the unpickled evidence stays out of the pickle: the bytes are there
        state["__dict__"] = {k: v for k, v in state["__dict__"].items() if k != "tests"}
        return state


def pack_tests(evidence: TestRunEvidence) -> bytes:
    """``evidence`` as a :class:`Baseline` keeps it."""
    return pickle.dumps(evidence, protocol=pickle.HIGHEST_PROTOCOL)


BASELINE_FORMAT = 9
"""Bumped whenever what a baseline holds changes, so no older cached one is served (2: the harness summary;
3: the base is a git checkout, not an archive; 5: setup's environment is built once on the base;
6: the base run's evidence is kept pickled; 7: the harness summary names the files of outcome hooks;
8: digests of the cached state; 9: test modules served from memory)."""


def baseline_key(task_spec: TaskSpec, base: BaseRef, fingerprint: EnvironmentFingerprint) -> str:
    """Task id, base revision, environment, gradeflow version, the spec's own hash and the baseline format."""
    material = f"{BASELINE_FORMAT}|{fingerprint.key()}|{task_spec.spec_hash()}"
    digest = hashlib.sha256(material.encode()).hexdigest()[:16]
    return f"{task_spec.task_id}-{base.revision[:12]}-{digest}"


@cache
def harness_digest() -> str:
    """A digest of the code that runs inside the test process and writes the base run's record (the plugin as
    assembled from its parts, its boot file, the served-modules finder's host side): a base run recorded by other
    harness code is not this one's witness, even under the same version number (an editable install, a checkout
    moved on)."""
    folder = resources.files("gradeflow.integrity")
    digest = hashlib.sha256(plugin_template().encode())
    for name in ("plugin_files.py", "boot.py", "handed.py", "harness.py"):
        digest.update(folder.joinpath(name).read_bytes())
    return digest.hexdigest()[:12]


def _cache_key(context: Any, parameters: dict[str, Any]) -> str:
    # Prefect's result storage may be shared by several gradeflow homes; a baseline cached by another home
    # names that home's pristine folder and carries digests under that home's key, so each home has its own.
    del context
    home = hashlib.sha256(str(cache_dir().resolve()).encode()).hexdigest()[:12]
    key = baseline_key(parameters["task_spec"], parameters["base"], parameters["fingerprint"])
    return f"baseline-{home}-{harness_digest()}-{key}"


def ensure_pristine(base: BaseRef, key: str) -> Path:
    """The pristine folder for ``key``, rebuilt when a cleaned cache lost it."""
    folder = cache_dir() / "baselines" / key / "repo"
    if not (folder / ".git").is_dir():
        staging = Path(tempfile.mkdtemp(prefix="staging-", dir=cache_dir()))
        materialize(base, staging / "repo")
        folder.parent.mkdir(parents=True, exist_ok=True)
        remove_tree(folder, ignore_errors=True)
        (staging / "repo").rename(folder)
        remove_tree(staging, ignore_errors=True)
    return folder


def working_copy(pristine: Path) -> Path:
    """A private, disposable copy of the pristine repository (git metadata included), links kept as links.

    Made by ``cp -a``: a copy per run, so its cost is paid several times a grade, and on 2,000 files
    ``shutil.copytree`` (a few system calls per file from Python) took about three times as long."""
    root = Path(tempfile.mkdtemp())  # named as any temporary folder: commands run in it
    done = subprocess.run(["cp", "-a", "--", str(pristine), str(root / "repo")], capture_output=True, check=False)
    if done.returncode != 0:
        remove_tree(root, ignore_errors=True)
        raise OSError(f"cannot copy {pristine}: {done.stderr.decode(errors='replace').strip()[-300:]}")
    return root / "repo"


@task(
    name="baseline",
    cache_key_fn=_cache_key,
    persist_result=True,
    retries=INFRA_RETRIES,
    retry_delay_seconds=1,
    retry_condition_fn=retry_on_infra,
)
def prepare_baseline(
    task_spec: TaskSpec, base: BaseRef, fingerprint: EnvironmentFingerprint, sandboxes: SandboxFactory
) -> Baseline:
    """Materialize the pristine base, build the task's environment on it, and health-check both.

    ``BaselineBroken`` when setup fails there or the tests give no usable report.
    """
    key = baseline_key(task_spec, base, fingerprint)
    pristine, environment = build_base(task_spec, base, key, sandboxes)
    tests = base_test_run(task_spec, pristine, sandboxes, environment)
    record = pack_tests(tests)
    return Baseline(
        base=base,
        key=key,
        pristine=pristine,
        tests_record=record,
        environment=environment,
        digests=state_digests(pristine, environment, record),
    )


def build_base(
    task_spec: TaskSpec, base: BaseRef, key: str, sandboxes: SandboxFactory
) -> tuple[Path, TaskEnvironment | None]:
    """The pristine folder of baseline ``key`` and the environment ``setup`` builds on it (each made when missing),
    their entry of the store held by ``sandboxes`` from the checkout on (the base run after it may take longer
    than the store spares an entry unused); once built, its size is recorded and the store kept under its cap
    with it kept (:func:`~gradeflow.environments.store.touch_built`)."""
    pristine = ensure_pristine(base, key)
    sandboxes.hold(pristine.parent)
    environment = build_environment(task_spec, pristine, key, sandboxes)
    touch_built(pristine.parent)
    return pristine, environment


def state_digests(pristine: Path, environment: TaskEnvironment | None, record: bytes) -> dict[str, str]:
    """The digests :func:`changed_state` checks: the pristine tree (``.git`` by its commit's tree), the
    environment folder, the pickled base run."""
    digests = {"pristine": _pristine_digest(pristine), "record": data_digest(record)}
    if environment is not None:
        # By every entry's inode and times (its layers can be hundreds of megabytes), its record by content.
        record = (environment.folder / "environment.json").read_bytes() if environment.folder.is_dir() else b""
        digests["environment"] = data_digest(f"{inode_digest(environment.folder)}|{data_digest(record)}".encode())
        if environment.shared is not None:  # the layers under it: pruned and built again, it is built again too
            under = shared_folder(environment.shared) / "layers"  # not its folder, whose ``used`` each grade touches
            digests["shared environment"] = inode_digest(under)
    return digests


def _pristine_digest(pristine: Path) -> str:
    # The worktree by every entry's inode and times (checked at every grade: a repository's thousands of files
    # are not read each time); the repository by the tree its HEAD names (a fresh checkout of the same base has
    # other index and pack files, never another tree).
    tree = git(pristine, "rev-parse", "HEAD^{tree}", check=False).stdout.decode().strip()
    return data_digest(f"{tree}|{inode_digest(pristine, skip_git=True)}".encode())


def changed_state(baseline: Baseline) -> list[str]:
    """The parts of the cached state that differ from their digests at build time (``[]``: all intact)."""
    touch_used(baseline.pristine.parent)
    now = state_digests(baseline.pristine, baseline.environment, baseline.tests_record)
    return sorted(part for part, digest in baseline.digests.items() if now.get(part) != digest)


def discard_state(key: str) -> None:
    """Remove the pristine base and environment of baseline ``key`` (found changed: rebuilt from scratch)."""
    remove_tree(cache_dir() / "baselines" / key, ignore_errors=True)


def base_test_run(
    task_spec: TaskSpec, pristine: Path, sandboxes: SandboxFactory, environment: TaskEnvironment | None
) -> TestRunEvidence:
    """Test a throwaway copy of the pristine base (hidden tests injected) in a copy of the task's environment."""
    workspace = working_copy(pristine)
    try:
        hidden = inject_hidden_on_base(task_spec, workspace, "on the pristine base")
        harness = start_harness(task_spec, workspace, None, None, hidden=hidden)
        with open_sandbox(workspace, pristine, sandboxes, environment) as sandbox:
            evidence = run_test_command(task_spec, sandbox, harness=harness)
        lost = evidence.harness is None or evidence.harness_not_joined
        if lost and harness is not None and any(p.endswith(".py") for p in hidden):
            # pytest ran without the harness, or without its channel (tox off a terminal), so nothing served
            # the hidden tests: they go back on disk, as every later run of this task has them (its
            # candidates' runs get no harness either, so no channel is left unread for their code to find).
            evidence = _without_harness(task_spec, pristine, sandboxes, environment, harness, evidence)
        return require_report(evidence, f"task {task_spec.task_id} base", task_spec)
    finally:
        remove_tree(workspace.parent, ignore_errors=True)


def _without_harness(
    task_spec: TaskSpec,
    pristine: Path,
    sandboxes: SandboxFactory,
    environment: TaskEnvironment | None,
    harness: Harness,
    joined: TestRunEvidence,
) -> TestRunEvidence:
    """The base run again with the hidden tests on disk and no harness; it says why, as the first run did.

    On a fresh copy of the base, as every candidate's run is: what the first run left in its tree (tox's
    environment folder, a build, a cache) could make the base pass where no candidate's run can."""
    workspace = working_copy(pristine)
    try:
        inject_hidden_on_base(task_spec, workspace, "on the pristine base")
        for rel, text in harness.sources.items():
            (workspace / rel).write_bytes(text.encode("utf-8", "surrogateescape"))
        with open_sandbox(workspace, pristine, sandboxes, environment) as sandbox:
            evidence = run_test_command(task_spec, sandbox)
    finally:
        remove_tree(workspace.parent, ignore_errors=True)
    return evidence.model_copy(update={"harness_not_joined": joined.harness_not_joined})


def inject_hidden_on_base(task_spec: TaskSpec, workspace: Path, where: str) -> Prior:
    """:func:`inject_hidden` into a copy of the base; ``BaselineBroken`` naming ``where`` when it fails."""
    try:
        return inject_hidden(task_spec, workspace, workspace.parent / "backup")
    except (OSError, SubmissionError) as exc:
        raise BaselineBroken(f"task {task_spec.task_id}: hidden tests cannot be injected {where}: {exc}") from None


def build_environment(
    task_spec: TaskSpec, pristine: Path, key: str, sandboxes: SandboxFactory
) -> TaskEnvironment | None:
    """The task's environment for baseline ``key``: ``setup`` run once on a copy of the pristine base.

    Kept beside the pristine folder and reused while it is there; ``None`` when the task has no setup.
    ``BaselineBroken`` (``setup-failed``) when setup fails.
    """
    if not task_spec.setup and not task_spec.environment.shared_setup:
        return None
    folder = pristine.parent / "environment"
    failed = pristine.parent / "setup-failed.txt"
    # One build per key: a second grade waits for the first, then takes its environment (or its failure).
    with locked(pristine.parent / "environment.lock"):
        if (folder / "environment.json").is_file():
            return TaskEnvironment.load(folder)
        if failed.is_file():
            again = failed.read_text(errors="replace").strip()
            again += f" (a failed build is not retried: remove {failed} to retry)"
            raise BaselineBroken(again, reason_code="setup-failed")
        try:
            return _build_environment(task_spec, pristine, folder, sandboxes)
        except BaselineBroken as exc:
            if exc.reason_code == "setup-failed":
                failed.write_text(f"{exc}\n")
            raise


def _build_environment(task_spec: TaskSpec, pristine: Path, folder: Path, sandboxes: SandboxFactory) -> TaskEnvironment:
    workspace = working_copy(pristine)
    staging = Path(tempfile.mkdtemp(prefix="environment-", dir=pristine.parent))
    if task_spec.environment.setup_network:
        sandboxes = sandboxes.with_network()
    try:
        inject_hidden_on_base(task_spec, workspace, "before setup")
        before = tree_manifest(workspace)
        with sandboxes.open(workspace) as sandbox:
            shared = None
            if task_spec.environment.shared_setup and sandbox.stacks_layers:
                shared = shared_environment(task_spec, pristine, sandboxes)
            steps: list[tuple[str | None, str]] = [(None, "setup")]
            if shared is not None:
                import_environment(shared, sandbox, workspace)
            elif task_spec.environment.shared_setup:  # nothing to stack on: the task's own build runs it first
                steps.insert(0, (task_spec.environment.shared_setup, "environment.shared_setup"))
            for command, what in steps:
                result = run_setup(task_spec, sandbox, command)
                if result is not None and not result.ok:
                    raise BaselineBroken(setup_failure(task_spec, result, what), reason_code="setup-failed")
            capture_environment(sandbox, before, staging, under=shared)
        staging.rename(folder)
        return TaskEnvironment.load(folder)
    finally:
        remove_tree(workspace.parent, ignore_errors=True)
        remove_tree(staging, ignore_errors=True)


def task_environment(task_spec: TaskSpec, baseline: Baseline, sandboxes: SandboxFactory) -> TaskEnvironment | None:
    """The baseline's environment, built again when a cleaned cache lost it (or the shared one it lies over)."""
    environment = baseline.environment
    if environment is not None and (environment.folder / "environment.json").is_file():
        if environment.shared is None:
            return environment
        if sandboxes.hold(shared_folder(environment.shared)) and shared_present(environment.shared):
            touch_used(shared_folder(environment.shared))
            return environment
        remove_tree(environment.folder, ignore_errors=True)  # its layer lay over the one pruned: built again
    return build_environment(task_spec, baseline.pristine, baseline.key, sandboxes)


@contextmanager
def open_sandbox(
    tree: Path, pristine: Path, sandboxes: SandboxFactory, environment: TaskEnvironment | None
) -> Iterator[Sandbox]:
    """A sandbox over ``tree`` holding its own copy of the task's environment (none without setup)."""
    if environment is None:
        with sandboxes.open(tree) as sandbox:
            yield sandbox
        return
    lay_workspace(environment, tree, pristine)
    with sandboxes.open(tree) as sandbox:
        import_environment(environment, sandbox, tree)
        yield sandbox


@contextmanager
def task_sandbox(task_spec: TaskSpec, tree: Path, baseline: Baseline, sandboxes: SandboxFactory) -> Iterator[Sandbox]:
    """A sandbox over ``tree`` (a disposable copy) set up as the task's runs are: the base's environment."""
    with open_sandbox(tree, baseline.pristine, sandboxes, task_environment(task_spec, baseline, sandboxes)) as box:
        yield box


def inject_hidden(task_spec: TaskSpec, tree: Path, backup: Path) -> Prior:
    """``tests.hidden`` copied over ``tree``, then ``tests.hidden_patch`` applied to the base's version of
    every file it touches; ``OSError`` or ``SubmissionError`` when either cannot be done.

    Returns every path written with what ``tree`` held there before (for
    :func:`~gradeflow.integrity.handed.withdraw`)."""
    hidden = Path(task_spec.tests.hidden) if task_spec.tests.hidden else None
    patch = ""
    if task_spec.tests.hidden_patch:
        patch = Path(task_spec.tests.hidden_patch).read_bytes().decode("utf-8", errors="surrogateescape")
    touched = _patched_paths(patch)
    prior = prior_state(tree, [*(list_files(hidden, ["**"]) if hidden else []), *touched])
    if hidden is not None:
        inject_tree(hidden, tree, backup)
    if patch:
        _apply_hidden_patch(tree, patch, touched)
    return prior


def replaced_by_hidden(task_spec: TaskSpec) -> frozenset[str]:
    """The repository paths the hidden tests replace in every run: ``tests.hidden``'s files and the files
    ``tests.hidden_patch`` touches (empty without hidden tests, or when they cannot be read: the run says so)."""
    found: set[str] = set()
    try:
        if task_spec.tests.hidden:
            found.update(list_files(Path(task_spec.tests.hidden), ["**"]))
        if task_spec.tests.hidden_patch:
            patch = Path(task_spec.tests.hidden_patch).read_bytes().decode("utf-8", errors="surrogateescape")
            found.update(_patched_paths(patch))
    except (OSError, SubmissionError):
        return frozenset()
    return frozenset(found)


def _patched_paths(patch: str) -> list[str]:
    """The repository-relative paths ``patch`` names; ``SubmissionError`` when it is not a unified diff."""
    if not patch:
        return []
    try:
        named = {p for f in PatchSet(patch) for p in (f.source_file, f.target_file)}
    except UnidiffParseError as exc:
        raise SubmissionError(f"tests.hidden_patch is not a unified diff: {exc}") from None
    return sorted(p[2:] for p in named if p[:2] in ("a/", "b/"))


def _apply_hidden_patch(tree: Path, patch: str, touched: list[str]) -> None:
    """``patch`` applied to the base's version of each of ``touched``."""
    listed = git(tree, "ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *touched).stdout.decode() if touched else ""
    for rel in touched:
        target = tree / rel
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            remove_tree(target)
    on_base = [p for p in listed.split("\0") if p]
    if on_base:
        git(tree, "checkout", "-q", "HEAD", "--", *on_base)
    apply_patch(tree, patch)
