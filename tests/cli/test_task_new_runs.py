"""``task new`` runs the suite ``--repeat`` times a side and no more: the validation's baseline and grades are the
last runs of each side (counted here, run by run; a passing grade adds its varied re-run); a test whose outcome
changes in those runs is quarantined and the spec validated again."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_task_new import COMMAND, calc_repository

from gradeflow.authoring import task_runs
from gradeflow.cli import main
from gradeflow.config import cache_dir
from gradeflow.integrity.harness import MODULE_PREFIX
from gradeflow.sandbox.local import LocalSandbox
from gradeflow.tasks import flaky

# Passes in a plain run and fails under the grader's harness (the baseline's and the grades' runs).
HARNESS_SHY = """
import os


def test_shy():
    assert "_plugin_" not in os.environ.get("PYTEST_ADDOPTS", "")
"""


SETUP = "python -c \"open('built.txt', 'w').write('built')\""
# Passes only where setup's output was laid into the workspace.
BUILT = """
from pathlib import Path


def test_built():
    assert Path("built.txt").read_text() == "built"
"""


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Every command run in a local or isolated sandbox, with whether the grader's harness joined it."""
    runs: list[tuple[str, bool]] = []
    original = LocalSandbox.run

    def counted(self: LocalSandbox, command: str, **kwargs: Any) -> Any:
        runs.append((command, f"-p {MODULE_PREFIX}" in kwargs["env"].get("PYTEST_ADDOPTS", "")))
        return original(self, command, **kwargs)

    monkeypatch.setattr(LocalSandbox, "run", counted)
    return runs


def _suite_runs(commands: list[tuple[str, bool]]) -> tuple[int, int]:
    """The runs of the test command: (plain, harnessed)."""
    harnessed = [joined for command, joined in commands if "--junitxml" in command]
    return harnessed.count(False), harnessed.count(True)


def _task_new(repo: Path, base: str, fix: str, out: Path, repeat: int, *more: str) -> int:
    argv = ["task", "new", "--repo", str(repo), "--base", base, "--fix-commit", fix, "--tests", COMMAND]
    return main([*argv, "--repeat", str(repeat), "--out", str(out), *more])


@pytest.mark.usefixtures("prefect")
@pytest.mark.parametrize(("repeat", "plain", "harnessed"), [(3, 3, 4), (4, 5, 4), (1, 2, 4)])
def test_each_side_runs_repeat_times_and_the_validation_runs_nothing_more(
    repeat: int,
    plain: int,
    harnessed: int,
    commands: list[tuple[str, bool]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo, base, fix = calc_repository(tmp_path, {})
    out = tmp_path / "steady" / "task.yaml"
    assert _task_new(repo, base, fix, out, repeat) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("VALID: steady")
    # Plain: the base's runs before its baseline and the reference's before its grade. Harnessed: the baseline's
    # health check and the two validation grades, each once (at least three on the base, two with the reference),
    # and the reference's varied re-run of its fixed tests (a passing grade's; the base's grade fails, so none).
    assert _suite_runs(commands) == (plain, harnessed)
    tests = yaml.safe_load(out.read_text())["tests"]
    assert (tests["fail_to_pass"], tests["pass_to_pass"]) == (
        ["tests/test_add.py::test_add"],
        ["tests/test_calc.py::test_sub"],
    )


@pytest.mark.usefixtures("prefect")
def test_a_test_that_changes_in_the_validation_runs_is_quarantined_and_the_spec_validated_again(
    commands: list[tuple[str, bool]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base, fix = calc_repository(tmp_path, {"test_shy.py": HARNESS_SHY})
    out = tmp_path / "shy" / "task.yaml"
    assert _task_new(repo, base, fix, out, 3) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert captured.out.startswith("VALID: shy")
    assert "a test changed outcome in a later run" in captured.err
    tests = yaml.safe_load(out.read_text())["tests"]
    assert tests["quarantine"] == ["tests/test_shy.py::test_shy"]
    assert tests["pass_to_pass"] == ["tests/test_calc.py::test_sub"]
    # The second validation builds the rewritten spec's baseline and grades it again: three more harnessed runs,
    # and one varied re-run, of the second validation's passing reference (the first one's broke test_shy).
    assert _suite_runs(commands) == (3, 7)


@pytest.mark.usefixtures("prefect")
def test_setup_runs_once_for_the_runs_and_the_validation(
    commands: list[tuple[str, bool]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base, fix = calc_repository(tmp_path, {"test_built.py": BUILT})
    out = tmp_path / "built" / "task.yaml"
    assert _task_new(repo, base, fix, out, 3, "--setup", SETUP) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("VALID: built")
    assert "tests/test_built.py::test_built" in yaml.safe_load(out.read_text())["tests"]["pass_to_pass"]
    # The environment setup built for the plain runs is the written spec's: its baseline finds it, not rebuilds it.
    assert [command for command, _ in commands].count(SETUP) == 1
    assert _suite_runs(commands) == (3, 4)  # with the reference's varied re-run


@pytest.mark.usefixtures("prefect")
def test_plain_runs_that_start_after_the_hand_over_still_find_the_built_environment(
    commands: list[tuple[str, bool]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each side's later plain runs wait for the ground's folder to be handed to the written spec's baseline: they
    # start their commands from the ground's paths (the isolated sandbox mounts the environment's layers from there).
    handed = threading.Event()
    hand_over, run_once = task_runs._hand_over, flaky._run_once

    def hand_over_then_say_so(*args: Any) -> Any:
        try:
            return hand_over(*args)
        finally:
            handed.set()

    def later_runs_wait(task_spec: Any, sandbox: Any, repeated: Any, number: int) -> None:
        if number > 1:
            assert handed.wait(120)
        run_once(task_spec, sandbox, repeated, number)

    monkeypatch.setattr(task_runs, "_hand_over", hand_over_then_say_so)
    monkeypatch.setattr(flaky, "_run_once", later_runs_wait)
    repo, base, fix = calc_repository(tmp_path, {"test_built.py": BUILT})
    out = tmp_path / "late" / "task.yaml"
    assert _task_new(repo, base, fix, out, 4, "--setup", SETUP) == 0, capsys.readouterr().err
    assert handed.is_set()
    assert [command for command, _ in commands].count(SETUP) == 1
    assert _suite_runs(commands) == (5, 4)
    # The written spec's baseline folder is the built one, moved (no link left behind), and the ground's is gone.
    bases = [entry for entry in (cache_dir() / "baselines").iterdir() if entry.name.startswith("late-")]
    assert [entry.is_symlink() for entry in bases] == [False]
    assert (bases[0] / "environment" / "environment.json").is_file()
