"""Finding the task specs of a folder by ``task_id`` (what the webhook receiver routes on)."""

from __future__ import annotations

from pathlib import Path

from gradeflow.errors import SpecError
from gradeflow.spec import load_task, load_yaml

__all__ = ["find_task_specs"]


def find_task_specs(folder: Path) -> dict[str, Path]:
    """``task_id`` → absolute path of every valid task spec (``*.yaml``/``*.yml`` with a ``task_id``) under
    ``folder``. ``SpecError`` when the folder is missing, holds none, holds a broken one, or two share an id."""
    if not folder.is_dir():
        raise SpecError(f"--tasks: {folder} is not a folder")
    found: dict[str, Path] = {}
    for path in sorted([*folder.rglob("*.yaml"), *folder.rglob("*.yml")]):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        data = load_yaml(path, "YAML file")
        if not isinstance(data, dict) or "task_id" not in data or "tests" not in data:
            continue
        spec = load_task(path)
        if spec.task_id in found:
            raise SpecError(f"{path}: task_id {spec.task_id!r} is also used by {found[spec.task_id]}")
        found[spec.task_id] = path.resolve()
    if not found:
        raise SpecError(f"--tasks: {folder} holds no task spec")
    return found
