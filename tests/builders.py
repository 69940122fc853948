"""Builders shared by the tests (imported as ``builders``; pytest puts this folder on sys.path)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
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


FALSE_ALARMS_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "false_alarms.py"


def false_alarms_script() -> ModuleType:
    """``scripts/false_alarms.py`` as a module: its PyPI sdist download-and-cache helpers serve every test on
    released projects, so they share one cache."""
    spec = importlib.util.spec_from_file_location("false_alarms", FALSE_ALARMS_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
