"""Docker fixtures: a real engine (skipped without one, a failure in CI), leak checks, hostile task specs.

Every docker test runs against the engine named by ``DOCKER_HOST`` (default socket) and the image
``gradeflow-python:bookworm`` (``scripts/build-image.sh``). When ``CI`` is set, a missing engine or
image fails the session instead of skipping it: no docker test may be skipped in CI.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from gradeflow import grade
from gradeflow.models import GradeResult, TaskSpec
from gradeflow.sandbox import DEFAULT_IMAGE, SANDBOX_LABEL
from gradeflow.sandbox.docker import OWNER_LABEL

BASE_FILES = {
    "pytest.ini": "[pytest]\npythonpath = src\n",
    "src/mod.py": 'def f():\n    return "base"\n',
    "tests/test_mod.py": "import mod\n\n\ndef test_f():\n    assert mod.f() == 'ok'\n\n\ndef test_stable():\n"
    "    assert True\n",
    "setup_hook.py": "",
}
"""A repository whose ``test_f`` fails until a candidate's ``f()`` returns ``'ok'``."""


@pytest.fixture
def base_files() -> dict[str, str]:
    """The files of the repository :func:`hostile_task` grades against (path → text)."""
    return dict(BASE_FILES)


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _engine_problem() -> tuple[Any, str | None]:
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:  # any failure means "no usable engine"; the reason is reported
        return None, f"no docker engine answers ({exc}); run scripts/start-dockerd.sh"
    try:
        client.images.get(DEFAULT_IMAGE)
    except docker.errors.ImageNotFound:
        return None, f"the image {DEFAULT_IMAGE} is missing; run scripts/build-image.sh"
    return client, None


@pytest.fixture(scope="session")
def docker_client() -> Any:
    """A client of a live engine that holds the default image; skip (fail in CI) otherwise."""
    client, problem = _engine_problem()
    if problem is not None:
        if _in_ci():
            pytest.fail(f"CI runs every docker test, but {problem}")
        pytest.skip(problem)
    return client


def own_containers(client: Any) -> list[str]:
    """Ids of the sandbox containers this test process created and that still exist (any state)."""
    labels = [f"{SANDBOX_LABEL}", f"{OWNER_LABEL}={os.getpid()}"]
    return [c.id for c in client.containers.list(all=True, filters={"label": labels})]


@pytest.fixture
def no_leftovers(docker_client: Any) -> Iterator[None]:
    """Fail the test when it leaves a sandbox container behind (the engine is the judge)."""
    before = set(own_containers(docker_client))
    yield
    left = set(own_containers(docker_client)) - before
    assert not left, f"sandbox containers left behind: {sorted(c[:12] for c in left)}"


def unified_diff(path: str, old: str | None, new: str) -> str:
    """A ``git apply``-able diff turning ``old`` (``None``: absent) into ``new`` at ``path``."""
    lines = difflib.unified_diff(
        (old or "").splitlines(True), new.splitlines(True), f"a/{path}" if old is not None else "/dev/null", f"b/{path}"
    )
    return "".join(lines)


def write_base_repo(repo: Path) -> Path:
    """:data:`BASE_FILES` written into the folder ``repo``; returns it."""
    for name, text in BASE_FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return repo


@pytest.fixture
def hostile_task(tmp_path: Path) -> Callable[..., TaskSpec]:
    """A task spec over a fresh copy of :data:`BASE_FILES`, graded in docker with small limits."""

    def make(**overrides: Any) -> TaskSpec:
        repo = write_base_repo(tmp_path / "repo")
        spec: dict[str, Any] = {
            "task_id": "hostile",
            "type": "bugfix",
            "repo": str(repo),
            "tests": {
                "command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}",
                "fail_to_pass": ["tests/test_mod.py::test_f"],
                "pass_to_pass": ["tests/test_mod.py::test_stable"],
                "timeout": 20,
            },
            "environment": {"sandbox": "docker", "memory": "256m", "pids": 64},
        }
        for key, value in overrides.items():
            spec[key] = {**spec[key], **value} if isinstance(value, dict) and key in spec else value
        return TaskSpec.model_validate(spec)

    return make


@pytest.fixture
def grade_candidate(
    hostile_task: Callable[..., TaskSpec], prefect: None, no_leftovers: None
) -> Callable[..., GradeResult]:
    """Grade a candidate's files (path → new text) against :func:`hostile_task` in the docker sandbox."""
    del prefect, no_leftovers

    def run(files: dict[str, str], **overrides: Any) -> GradeResult:
        patch = "".join(unified_diff(path, BASE_FILES.get(path), text) for path, text in files.items())
        return grade(hostile_task(**overrides), patch=patch, sandbox="docker")

    return run
