"""``task new``: a command that gives no report is explained (the command, the exit code with pytest's meaning
and the run's last output lines, one error line, exit 3); a fix commit must descend from the base; each run
is shown as it ends."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_task_new import project

from gradeflow.cli import main

__all__ = ["project"]


@pytest.mark.usefixtures("prefect")
def test_a_command_pytest_refuses_is_explained(
    project: tuple[Path, str, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base, _, patch = project
    command = "python -m pytest -q --no-such-option --junitxml={junit}"
    argv = ["task", "new", "--repo", str(repo), "--base", base, "--reference", str(patch), "--tests", command]
    assert main([*argv, "--repeat", "1", "--out", str(tmp_path / "t" / "task.yaml")]) == 3
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("gradeflow: error:")]
    assert len(err) == 1, err
    assert f"command: {command}" in err[0] and "exit code 4: pytest's usage error" in err[0]
    assert "unrecognized arguments: --no-such-option" in err[0]


@pytest.mark.parametrize("which", ["an ancestor", "the base itself"])
def test_a_fix_commit_that_does_not_descend_from_the_base_is_refused(
    which: str, project: tuple[Path, str, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base, fix, _ = project
    newer, older = (fix, base) if which == "an ancestor" else (base, base)
    argv = ["task", "new", "--repo", str(repo), "--base", newer, "--fix-commit", older, "--tests", "pytest {junit}"]
    out = tmp_path / "t" / "task.yaml"
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--fix-commit: {older} does not descend from --base {newer[:12]}" in err[0], err
    assert not out.exists()


@pytest.mark.usefixtures("prefect")
def test_each_run_is_shown_as_it_ends(
    project: tuple[Path, str, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base, _, patch = project
    command = "python -m pytest -q -p no:cacheprovider --junitxml={junit}"
    argv = ["task", "new", "--repo", str(repo), "--base", base, "--reference", str(patch), "--tests", command]
    assert main([*argv, "--repeat", "2", "--out", str(tmp_path / "t" / "task.yaml")]) == 0
    runs = [line for line in capsys.readouterr().err.splitlines() if line.startswith("gradeflow: run ")]
    # The two sides run at once: counted in the order they end, each side's runs in its own order. The base's
    # are at least three (one plain run, the baseline's, the empty grade's), the reference's two (its grade's last).
    assert [line.split()[2] for line in runs] == ["1/5", "2/5", "3/5", "4/5", "5/5"]
    sides = [line.split("(")[1].split(")")[0] for line in runs]
    assert [s for s in sides if s.startswith("base")] == ["base 1", "base 2", "base 3"]
    assert [s for s in sides if s.startswith("reference")] == ["reference 1", "reference 2"]
