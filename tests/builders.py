"""Builders shared by the tests (imported as ``builders``; pytest puts this folder on sys.path)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def make_task(**overrides: Any) -> dict[str, Any]:
    """A minimal valid task spec as a dict, with ``overrides`` merged at the top level."""
    spec: dict[str, Any] = {
        "task_id": "t1",
        "type": "bugfix",
        "repo": "/nonexistent",
        "tests": {"command": "pytest --junitxml={junit}", "fail_to_pass": [], "pass_to_pass": []},
    }
    spec.update(overrides)
    return spec
