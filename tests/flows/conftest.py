"""Fixtures for flow tests: a tiny repository folder with its task spec, and a fake sandbox."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes import BUG, fake_pytest

from gradeflow.sandbox import FakeSandboxFactory


@pytest.fixture
def repo_task(tmp_path: Path) -> Callable[..., Path]:
    """Write a repository folder and a task.yaml next to it; returns the task file's path."""

    def make(**overrides: Any) -> Path:
        repo = tmp_path / "repo"
        (repo / "src").mkdir(parents=True, exist_ok=True)
        (repo / "tests").mkdir(exist_ok=True)
        (repo / "src" / "calc.py").write_text(BUG)
        (repo / "tests" / "test_calc.py").write_text("def test_div(): ...\ndef test_add(): ...\n")
        (repo / ".gitignore").write_text("*.log\n")
        spec: dict[str, Any] = {
            "task_id": "calc",
            "type": "bugfix",
            "repo": "./repo",
            "tests": {
                "command": "pytest --junitxml={junit}",
                "fail_to_pass": ["tests/test_calc.py::test_div"],
                "pass_to_pass": ["tests/test_calc.py::test_add"],
            },
            "constraints": {"protected": ["tests/**"]},
        }
        spec.update(overrides)
        path = tmp_path / "task.yaml"
        path.write_text(yaml.safe_dump(spec))
        return path

    return make


@pytest.fixture
def fake() -> FakeSandboxFactory:
    return FakeSandboxFactory(fake_pytest)
