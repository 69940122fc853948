"""The shared part of a task's environment: ``environment.shared_setup``, built once per key and laid read-only
under the environment of every task that names it.

SWE-bench builds one environment image per repository and version (its requirements, pinned packages) and each
instance's image over it (the repository installed at the instance's base). Here the same split is a task's
``environment.shared_setup`` (with the files of the base it reads, ``shared_inputs``) and its ``setup``:

- The **key** of a shared environment is what its build depends on: the sandbox as it describes itself (kind,
  root, architecture, Python), the root and its ``packages``, ``setup_network``, ``environment.user``, the task's
  ``env``, the command, and the name and content of each input. Tasks whose keys agree share one build, whatever
  their ids and base revisions; the key is a digest (the task's variables, which may be secrets, are not kept).
  A requirements file among the inputs brings the files it includes (``-r``, ``-c``).
- It is **built** once per key (a lock: a second grade waits for the first) in a sandbox over a workspace that
  holds only the inputs, copied from the base (a missing input, or one that is not a regular file, is left out),
  so nothing else of the base can change what it builds. What it left in the environment roots (``HOME``, the
  private Python environment) is kept unpacked under ``<cache>/shared/<key>`` (:mod:`gradeflow.environments.store`
  lists, prunes and caps it); its workspace writes are dropped.
- A task's ``setup`` then runs with those layers mounted under the roots, and what it wrote over them is the
  task's own layer (:func:`~gradeflow.tasks._environment.capture_environment` with ``under``): a few files for an
  editable install, its whiteouts and opaque folders (files setup removed or replaced) kept. Every run lays both,
  the shared one below. A base whose shared layer was pruned builds its own environment again over a new one.
- Only a sandbox that stacks layers (:attr:`~gradeflow.sandbox.base.Sandbox.stacks_layers`: isolated, local as
  root) shares: elsewhere (docker, local without root), and where the shared build fails over the inputs alone,
  ``shared_setup`` runs first in the task's own build, over the whole base.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path, PurePosixPath

import structlog

from gradeflow.environments.roots import locked
from gradeflow.environments.store import touch_built, touch_used
from gradeflow.errors import BaselineBroken
from gradeflow.logs import scrub
from gradeflow.models import TaskSpec
from gradeflow.sandbox.base import CommandResult, SandboxFactory, remove_tree
from gradeflow.tasks._environment import (
    WORKSPACE_ARCHIVE,
    TaskEnvironment,
    capture_environment,
    shared_folder,
    tree_manifest,
)

__all__ = ["SHARED_FORMAT", "setup_failure", "shared_environment", "shared_key", "shared_present"]

_log = structlog.get_logger(__name__)

SHARED_FORMAT = 1
"""Bumped when a shared environment's layout or build changes: older ones are no longer found (and age out)."""


_INCLUDE = re.compile(r"^\s*(?:-r|-c|--requirement|--constraint)(?:\s*=\s*|\s+)(\S+)")
"""A requirements file's line that reads another one (pip's ``-r``/``-c``)."""
_MOST_INPUTS = 200


def _input_files(task_spec: TaskSpec, pristine: Path) -> dict[str, Path]:
    """Each of ``shared_inputs`` that is a regular file of the base, under no link, by its name, and the files a
    requirements file among them includes (``-r``, ``-c``: relative to it), as pip reads them."""
    found: dict[str, Path] = {}
    top = pristine.resolve()
    waiting = list(task_spec.environment.shared_inputs)
    while waiting and len(found) < _MOST_INPUTS:
        name = str(PurePosixPath(os.path.normpath(waiting.pop(0))))
        path = pristine / name
        if name in found or name.startswith("..") or path.is_symlink() or not path.is_file():
            continue
        if path.resolve() != top / PurePosixPath(name):
            continue
        found[name] = path
        if name.endswith((".txt", ".in")):
            for line in path.read_text(errors="replace").splitlines():
                match = _INCLUDE.match(line)
                if match and "://" not in match[1] and not match[1].startswith("/"):
                    waiting.append(str(PurePosixPath(name).parent / match[1]))
    return found


def shared_key(task_spec: TaskSpec, pristine: Path, sandboxes: SandboxFactory) -> str:
    """The key of the task's shared environment on the base at ``pristine`` (see the module)."""
    environment = task_spec.environment
    facts = sandboxes.describe().model_dump(exclude={"pythonhashseed"})
    variables = hashlib.sha256(json.dumps(sorted(task_spec.candidate_env().items())).encode()).hexdigest()
    inputs = {
        name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in _input_files(task_spec, pristine).items()
    }
    material = {
        "format": SHARED_FORMAT,
        "sandbox": facts,
        "root": environment.root,
        "packages": sorted(environment.packages),
        "network": environment.setup_network,
        "user": environment.user,
        "env": variables,
        "command": environment.shared_setup,
        "inputs": inputs,
    }
    digest = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:24]
    return f"shared-{digest}"


def shared_present(key: str) -> bool:
    """Whether the shared environment ``key`` is built and kept."""
    return (shared_folder(key) / "environment.json").is_file()


def shared_environment(task_spec: TaskSpec, pristine: Path, sandboxes: SandboxFactory) -> TaskEnvironment | None:
    """The task's shared environment, built when missing, held by ``sandboxes`` and marked used.

    ``None`` when ``shared_setup`` fails over the inputs alone (a requirements file that installs the repository
    itself, ``-e .``, reads more than its inputs): the task's own build then runs it first, over the whole base,
    and fails there if it fails for every tree. The failure is kept (``<key>.failed``, its one line): the key's
    other tasks go straight to their own builds; remove it to try again."""
    key = shared_key(task_spec, pristine, sandboxes)
    folder = shared_folder(key)
    folder.parent.mkdir(parents=True, exist_ok=True)
    failed = folder.with_name(f"{key}.failed")
    with locked(folder.with_name(f"{key}.lock")):
        if not shared_present(key):
            if failed.is_file():
                return None
            try:
                _build(task_spec, pristine, folder, sandboxes)
            except BaselineBroken as exc:
                failed.write_text(f"{exc}\n")
                _log.warning("shared environment not built: each task builds its own", key=key, reason=str(exc))
                return None
            touch_built(folder)
    sandboxes.hold(folder)
    touch_used(folder)
    return TaskEnvironment.load(folder)


def _build(task_spec: TaskSpec, pristine: Path, folder: Path, sandboxes: SandboxFactory) -> None:
    command = task_spec.environment.shared_setup
    assert command is not None
    remove_tree(folder, ignore_errors=True)  # a build killed after its rename left an entry without a record
    scratch = Path(tempfile.mkdtemp(prefix=".building-", dir=folder.parent))
    workspace, staging = scratch / "workspace", scratch / "environment"
    try:
        workspace.mkdir()
        for name, path in _input_files(task_spec, pristine).items():
            (workspace / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, workspace / name)
        if task_spec.environment.setup_network:
            sandboxes = sandboxes.with_network()
        before = tree_manifest(workspace)
        with sandboxes.open(workspace) as sandbox:
            result = sandbox.run(command, env=task_spec.run_env(pinned_seed=False), timeout=task_spec.tests.timeout)
            if not result.ok:
                failure = setup_failure(task_spec, result, "environment.shared_setup")
                raise BaselineBroken(failure, reason_code="setup-failed")
            environment = capture_environment(sandbox, before, staging)
        # Its workspace writes are dropped: only the roots are shared.
        (staging / f"{WORKSPACE_ARCHIVE}.tar").unlink(missing_ok=True)
        naming = {name: members for name, members in environment.naming.items() if name != WORKSPACE_ARCHIVE}
        environment.model_copy(update={"naming": naming, "removed": []}).save()
        staging.rename(folder)
        _log.info("shared environment built", key=folder.name, task_id=task_spec.task_id)
    finally:
        remove_tree(scratch, ignore_errors=True)


def setup_failure(task_spec: TaskSpec, result: CommandResult, what: str = "setup") -> str:
    """One line: how ``what`` (``setup`` or ``environment.shared_setup``) ended on the pristine base and its last
    output lines (pip's error, a missing compiler), secrets scrubbed."""
    how = "timed out" if result.timed_out else f"exit {result.exit_code}"
    lines = [line.strip() for line in f"{result.stdout}\n{result.stderr}".splitlines() if line.strip()][-_TAIL_LINES:]
    tail = scrub(" | ".join(lines), [v for v in task_spec.candidate_env().values() if len(v) >= 8])[-_TAIL_CHARS:]
    hint = "" if task_spec.environment.setup_network else " (setup has no network: environment.setup_network)"
    return f"task {task_spec.task_id}: {what} fails on the pristine base ({how}){hint}: {tail or 'no output'}"


_TAIL_LINES, _TAIL_CHARS = 6, 800
