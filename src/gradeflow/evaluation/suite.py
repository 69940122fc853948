"""Suites: many submissions against a few task specs, from ``suite.yaml`` or SWE-bench predictions.

A suite file lists task spec paths and submissions, paths relative to the suite file::

    tasks: [examples/calc/task.yaml]
    submissions:
      - {task_id: calc-divzero, patch: runs/m-a/1.diff, run_id: r-001, model_id: m-a, prompt_revision: p3,
         tool_calls: 7, labels: {tools: basic}}
      - {task_id: calc-divzero, workspace: runs/m-b/1/, run_id: r-002, model_id: m-b}

A SWE-bench predictions file (JSON lines with ``instance_id``, ``model_patch``, ``model_name_or_path``)
pairs each line with the task spec whose ``task_id`` is the ``instance_id``.

Identity of a grade: the **content key** (task spec hash, patch hash, grading profile, gradeflow
version) together with the **run id**. Two runs that produced the same patch are two records, because
repeated runs are samples (pass@k counts them); regrading the same run of the same content is skipped.
A run id may appear once per task in a suite. Every problem is a ``SpecError`` naming file and key.
"""

from __future__ import annotations

import glob
import hashlib
import re
from pathlib import Path
from typing import Any, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from gradeflow.config import gradeflow_version
from gradeflow.errors import SpecError
from gradeflow.models import Submission, TaskSpec
from gradeflow.models.spec import patch_bytes
from gradeflow.profiles import load_profile
from gradeflow.spec import json_object, load_model, load_task

__all__ = [
    "Suite",
    "SuiteItem",
    "SuiteSubmission",
    "content_key",
    "load_predictions",
    "load_suite",
    "patch_hash",
]

_IDENT = r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,199}$"
_SKIP = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


class SuiteSubmission(BaseModel):
    """One submission line of ``suite.yaml``: what was handed in, and which agent run produced it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    """The ``task_id`` of one of the suite's task specs."""
    patch: str | None = None
    """A unified diff file, relative to the suite file."""
    workspace: str | None = None
    """A modified checkout folder, relative to the suite file."""
    run_id: str = Field(pattern=_IDENT)
    """The agent run that produced this submission; unique per task within a suite."""
    model_id: str = Field(default="unknown", pattern=_IDENT)
    prompt_revision: str = Field(default="unknown", pattern=_IDENT)
    tool_calls: int | None = Field(default=None, ge=0)
    labels: dict[str, str] = Field(default_factory=dict)
    """Short identifiers describing the configuration (``tools: basic``); never free text."""

    @model_validator(mode="after")
    def _exactly_one(self) -> SuiteSubmission:
        if (self.patch is None) == (self.workspace is None):
            raise ValueError("give exactly one of patch or workspace")
        for key, value in self.labels.items():
            if not re.match(_IDENT, key) or not re.match(_IDENT, value):
                raise ValueError(f"labels.{key}: keys and values are short identifiers")
        return self


class _SuiteFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: list[str] = Field(min_length=1)
    submissions: list[SuiteSubmission] = Field(min_length=1)


class SuiteItem(BaseModel):
    """One submission ready to grade, with the agent-run identifiers the ledger keeps."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    submission: Submission
    run_id: str
    model_id: str = "unknown"
    prompt_revision: str = "unknown"
    tool_calls: int | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    empty_patch: bool = False
    """The patch text is empty or only whitespace (SWE-bench's ``empty_patch_ids``)."""


class Suite(BaseModel):
    """Task specs by ``task_id`` and the submissions to grade, in file order.

    Its JSON form is a summary (source and counts): the suite is a parameter of the ``evaluate-suite``
    flow, which runs in the caller's process and receives the object itself, while Prefect stores a
    flow run's parameters as JSON and refuses more than 512 KiB, less than a few hundred tasks and
    their patches take.
    """

    model_config = ConfigDict(frozen=True)

    source: str
    tasks: dict[str, TaskSpec]
    items: list[SuiteItem]

    @model_serializer(mode="wrap")
    def _summary_as_json(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        if info.mode_is_json():
            return {"source": self.source, "tasks": len(self.tasks), "items": len(self.items)}
        return cast(dict[str, Any], handler(self))


def patch_hash(submission: Submission) -> str:
    """SHA-256 of the diff text, or of a checkout's files (paths and bytes, VCS and cache folders skipped)."""
    digest = hashlib.sha256()
    text = submission.diff()
    if text is not None:
        digest.update(b"patch\0" + patch_bytes(text))
        return digest.hexdigest()
    assert submission.workspace is not None
    root = Path(submission.workspace)
    digest.update(b"tree\0")
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if _SKIP.intersection(relative.parts) or not path.is_file():
            continue
        digest.update(relative.as_posix().encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def content_key(task: TaskSpec, submission_hash: str, profile: str | None) -> str:
    """Task spec hash, patch hash, the grading profile's content and the gradeflow version, hashed."""
    policy = load_profile(profile or task.grading.profile)
    parts = [task.spec_hash(), submission_hash, policy.model_dump_json(), gradeflow_version()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _submission_id(model_id: str, run_id: str) -> str:
    name = run_id if run_id.startswith(model_id) else f"{model_id}.{run_id}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:128] or "submission"


def load_suite(path: str | Path) -> Suite:
    """Read ``suite.yaml``, its task specs and its patch files; ``SpecError`` naming file and key."""
    file = Path(path)
    parsed = load_model(file, _SuiteFile, "suite file")
    base = file.resolve().parent
    tasks: dict[str, TaskSpec] = {}
    for index, task_path in enumerate(parsed.tasks):
        spec = load_task(base / task_path)
        if spec.task_id in tasks:
            raise SpecError(f"{file}: tasks.{index}: task_id {spec.task_id!r} appears twice")
        tasks[spec.task_id] = spec
    items = [_suite_item(file, base, index, entry, tasks) for index, entry in enumerate(parsed.submissions)]
    _check_unique_runs(file, items)
    return Suite(source=str(file), tasks=tasks, items=items)


def _suite_item(file: Path, base: Path, index: int, entry: SuiteSubmission, tasks: dict[str, TaskSpec]) -> SuiteItem:
    where = f"{file}: submissions.{index}"
    if entry.task_id not in tasks:
        raise SpecError(f"{where}.task_id: no task spec {entry.task_id!r} (suite has: {', '.join(tasks)})")
    sid = _submission_id(entry.model_id, entry.run_id)
    if entry.workspace is not None:
        folder = base / entry.workspace
        if not folder.is_dir():
            raise SpecError(f"{where}.workspace: {folder} is not a folder")
        submission, empty = Submission(submission_id=sid, workspace=folder.resolve()), False
    else:
        assert entry.patch is not None
        try:
            text = (base / entry.patch).read_bytes().decode("utf-8", errors="surrogateescape")
        except OSError as exc:
            raise SpecError(f"{where}.patch: cannot read {base / entry.patch}: {exc.strerror or exc}") from None
        submission, empty = Submission.of_patch(sid, text), not text.strip()
    return SuiteItem(
        task_id=entry.task_id,
        submission=submission,
        run_id=entry.run_id,
        model_id=entry.model_id,
        prompt_revision=entry.prompt_revision,
        tool_calls=entry.tool_calls,
        labels=dict(entry.labels),
        empty_patch=empty,
    )


def _check_unique_runs(file: Path, items: list[SuiteItem]) -> None:
    seen: dict[tuple[str, str], int] = {}
    for index, item in enumerate(items):
        first = seen.setdefault((item.task_id, item.run_id), index)
        if first != index:
            raise SpecError(
                f"{file}: submissions.{index}.run_id: {item.run_id!r} already used for task "
                f"{item.task_id!r} by submissions.{first}"
            )


def load_predictions(path: str | Path, tasks_glob: str) -> Suite:
    """Pair SWE-bench predictions (JSON lines) with the task specs matched by ``tasks_glob``.

    The run id of a line is its ``run_id`` when given, else ``<file stem>/<model_name_or_path>``, so
    each predictions file counts as one run per model. ``SpecError`` names the file and line.
    """
    file = Path(path)
    tasks = _tasks_from_glob(tasks_glob)
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{file}: cannot read predictions: {exc}") from None
    items: list[SuiteItem] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if line.strip():
            item = _prediction_item(f"{file}:{number}", file.stem, line, tasks)
            if first_line.setdefault(item.task_id, number) != number:
                raise SpecError(
                    f"{file}:{number}: instance_id {item.task_id!r} repeats line "
                    f"{first_line[item.task_id]} (one prediction per instance)"
                )
            items.append(item)
    if not items:
        raise SpecError(f"{file}: no predictions")
    return Suite(source=str(file), tasks=tasks, items=items)


def _tasks_from_glob(pattern: str) -> dict[str, TaskSpec]:
    paths = sorted(glob.glob(pattern, recursive=True))
    if not paths:
        raise SpecError(f"--tasks: no task spec matches {pattern!r}")
    tasks: dict[str, TaskSpec] = {}
    for path in paths:
        spec = load_task(path)
        tasks.setdefault(spec.task_id, spec)
    return tasks


def _prediction_item(where: str, stem: str, line: str, tasks: dict[str, TaskSpec]) -> SuiteItem:
    data = json_object(line, where, "a prediction")
    instance = data.get("instance_id")
    if not isinstance(instance, str) or instance not in tasks:
        raise SpecError(f"{where}: instance_id: no task spec with task_id {instance!r} among --tasks")
    patch = data.get("model_patch")
    if patch is not None and not isinstance(patch, str):
        raise SpecError(f"{where}: model_patch: must be a string or null")
    model = str(data.get("model_name_or_path") or "unknown")
    run_id = str(data.get("run_id") or f"{stem}/{model}")
    model_id = re.sub(r"[^A-Za-z0-9._:@/+-]+", "-", model)[:200]
    return SuiteItem(
        task_id=instance,
        submission=Submission.of_patch(_submission_id(model_id, run_id), patch or ""),
        run_id=run_id,
        model_id=model_id,
        empty_patch=not (patch or "").strip(),
    )
