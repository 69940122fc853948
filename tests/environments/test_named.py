"""Host folders a task names: shown read-only (a venv whole, with its base interpreter); the unseeable refused."""

from __future__ import annotations

import venv
from pathlib import Path
from typing import Any

import pytest

from gradeflow.environments.named import interpreter_site_folders, shown_folders
from gradeflow.errors import SpecError
from gradeflow.models import TaskSpec


def _task(command: str, **environment: Any) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "task_id": "named",
            "type": "bugfix",
            "repo": "/nonexistent-repo",
            "tests": {"command": command, "fail_to_pass": ["t.py::a"], "pass_to_pass": []},
            "environment": environment,
        }
    )


@pytest.fixture
def project_venv(tmp_path: Path) -> Path:
    folder = tmp_path / "venvs" / "proj"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    return folder


@pytest.mark.parametrize(
    "command",
    [
        "{venv}/bin/python -m pytest --junitxml={{junit}}",
        "PYTHONPATH=src {venv}/bin/python -m pytest --junitxml={{junit}}",
        "cd src && env -u PYTEST_ADDOPTS {venv}/bin/python -m pytest --junitxml={{junit}}",
        "make deps; exec {venv}/bin/python -m pytest --junitxml={{junit}}",
    ],
)
def test_a_venv_named_as_the_program_is_shown_whole_with_its_interpreter(project_venv: Path, command: str) -> None:
    shown = shown_folders(_task(command.format(venv=project_venv)))
    assert str(project_venv.resolve()) in shown.folders
    assert shown.interpreters == (str(project_venv.resolve()),)
    assert interpreter_site_folders(shown.interpreters[0])  # where the harness's site file goes


def test_a_missing_program_is_refused_at_load_with_the_path_and_the_remedies() -> None:
    with pytest.raises(SpecError) as caught:
        shown_folders(_task("/opt/venvs/absent/bin/python -m pytest --junitxml={junit}"))
    message = str(caught.value)
    assert "/opt/venvs/absent/bin/python" in message and "tests.command" in message
    assert "environment.root" in message and "\n" not in message


def test_on_a_root_a_missing_host_program_is_the_roots_business() -> None:
    shown = shown_folders(_task("/opt/venv/bin/python -m pytest --junitxml={junit}"), host_root=False)
    assert shown.folders == ()


def test_listed_mounts_and_named_data_folders_are_shown(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    tool = tmp_path / "tools" / "run.sh"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    task = _task(f"{tool} {data} --junitxml={{junit}}", mounts=[str(data)])
    assert set(shown_folders(task).folders) == {str(data.resolve()), str(tool.parent.resolve())}


def test_system_and_visible_folders_are_not_bound_again(tmp_path: Path) -> None:
    task = _task(f"/usr/bin/env python -m pytest /tmp --junitxml={{junit}}; cat {tmp_path}/x")
    assert shown_folders(task, visible=(str(tmp_path),)).folders == ()


@pytest.mark.parametrize("where", ["home", "home-parent", "hidden", "sockets", "root"])
def test_gradeflow_state_and_the_task_files_are_never_shown(
    where: str, tmp_path: Path, gradeflow_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hidden = tmp_path / "task" / "hidden"
    hidden.mkdir(parents=True)
    named = {
        "home": gradeflow_home,
        "home-parent": gradeflow_home.parent,
        "hidden": tmp_path / "task",
        "sockets": Path("/run"),
        "root": Path("/"),
    }[where]
    spec = _task(f"ls {named} && pytest --junitxml={{junit}}").model_dump()
    spec["tests"]["hidden"] = str(hidden)
    with pytest.raises(SpecError, match="never shows"):
        shown_folders(TaskSpec.model_validate(spec))


def test_a_listed_mount_that_is_not_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"environment\.mounts"):
        shown_folders(_task("pytest --junitxml={junit}", mounts=[str(tmp_path / "absent")]))


def test_a_wrapped_missing_program_is_refused(project_venv: Path) -> None:
    with pytest.raises(SpecError, match="bin/pytest"):
        shown_folders(_task(f"cd src && env -u PYTEST_ADDOPTS {project_venv}/bin/pytest --junitxml={{junit}}"))
