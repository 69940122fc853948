"""Loading task specs from YAML, with one-line errors that name the file and the key.

Every YAML file gradeflow reads through :func:`load_yaml` refuses a mapping that repeats a key
(YAML itself would keep the last one silently): the error names the key and both lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from gradeflow.errors import SpecError
from gradeflow.models import TaskSpec
from gradeflow.models.spec import nothing_to_score

__all__ = ["json_object", "load_model", "load_task", "load_yaml", "validation_message"]

M = TypeVar("M", bound=BaseModel)
_MERGE = "tag:yaml.org,2002:merge"


class _DuplicateKey(yaml.constructor.ConstructorError):
    """A mapping names the same key twice."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a repeated key in a mapping (``<<`` merges may still be overridden)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in first:
                problem = f"duplicate key {key!r} (first on line {first[key]})"
                raise _DuplicateKey(None, None, problem, key_node.start_mark)
            first[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: Path, what: str) -> Any:
    """Parsed YAML of ``path``; ``SpecError`` when it is missing or not YAML."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: {what} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read {what}: {exc}") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        kind = "" if isinstance(exc, _DuplicateKey) else "YAML syntax error: "
        raise SpecError(f"{where}: {kind}{problem}") from None


def json_object(text: str, where: str, what: str) -> dict[str, Any]:
    """One JSON object (a line of a JSON-lines file); ``SpecError`` naming ``where`` when it is not one."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{where}: not JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise SpecError(f"{where}: {what} must be a JSON object, not {type(value).__name__}")
    return value


def validation_message(exc: ValidationError, where: str) -> str:
    """The first validation problem as ``where: key.path: message``."""
    error = exc.errors()[0]
    key = ".".join(str(p) for p in error["loc"]) or "(top level)"
    if error["type"] == "extra_forbidden":
        return f"{where}: unknown key {key!r}"
    if error["type"] == "missing":
        return f"{where}: missing required key {key!r}"
    message = error["msg"].removeprefix("Value error, ")
    more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
    return f"{where}: {key}: {message}{more}"


def load_model(
    path: Path, model: type[M], what: str, *, context: dict[str, Any] | None = None, allow_empty: bool = False
) -> M:
    """A YAML mapping file validated as ``model``; ``SpecError`` naming the file (and key) on any problem."""
    data = load_yaml(path, what)
    if data is None and allow_empty:
        data = {}
    if not isinstance(data, dict):
        raise SpecError(f"{path}: a {what} is a YAML mapping, got {type(data).__name__}")
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise SpecError(validation_message(exc, str(path))) from None


def load_task(path: str | Path, *, scored: bool = True) -> TaskSpec:
    """Read and validate a task spec; relative paths resolve against its folder. ``SpecError`` on any problem.

    ``scored``: a spec that leaves nothing to score (:func:`~gradeflow.models.spec.nothing_to_score`) is a
    problem too; ``task new`` reads its skeleton, whose tests are not derived yet, with ``scored=False``.
    """
    file = Path(path)
    task = load_model(file, TaskSpec, "task spec", context={"base_dir": file.resolve().parent})
    problem = nothing_to_score(task) if scored else None
    if problem is not None:
        raise SpecError(f"{file}: {problem}")
    return task
