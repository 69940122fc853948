"""Fixtures for flow tests: a tiny repository folder with its task spec, and a fake sandbox."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fakes import fake_pytest, write_task
from gradeflow.sandbox import FakeSandboxFactory


@pytest.fixture
def repo_task(tmp_path: Path) -> Callable[..., Path]:
    """Write a repository folder and a task.yaml next to it; returns the task file's path."""

    def make(**overrides: Any) -> Path:
        return write_task(tmp_path, **overrides)

    return make


@pytest.fixture
def fake() -> FakeSandboxFactory:
    return FakeSandboxFactory(fake_pytest)
