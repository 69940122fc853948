"""``gradeflow checkout``: the base an agent starts from holds no future, no answer and no task spec."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from gradeflow.cli import main


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    env |= {"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def task(tmp_path: Path) -> tuple[Path, str, str]:
    """A task pinned to the first of two commits; a tag and a branch point at the second (the answer)."""
    repo = tmp_path / "upstream"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def f():\n    return 1\n")
    (repo / "tests" / "test_calc.py").write_text("from calc import f\n\ndef test_f():\n    assert f() == 2\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text("def f():\n    return 2\n")
    _git(repo, "commit", "-qam", "the fix")
    _git(repo, "tag", "v1")
    answer = _git(repo, "rev-parse", "HEAD").strip()
    spec = {
        "task_id": "calc-f",
        "type": "bugfix",
        "repo": str(repo),
        "base_revision": base,
        "issue": "f() should return 2.\n",
        "tests": {"command": "pytest --junitxml={junit}", "fail_to_pass": ["tests/test_calc.py::test_f"]},
    }
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(spec))
    return tmp_path / "task.yaml", base, answer


def test_the_checkout_holds_exactly_the_base_tree_and_one_commit(
    task: tuple[Path, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, base, answer = task
    dest, issue = tmp_path / "agent", tmp_path / "issue.md"
    assert main(["checkout", str(spec), str(dest), "--issue-out", str(issue)]) == 0
    assert issue.read_text() == "f() should return 2.\n"
    assert sorted(p.name for p in dest.iterdir()) == [".git", "calc.py", "tests"]
    assert (dest / "calc.py").read_text() == "def f():\n    return 1\n"
    assert _git(dest, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/main"]
    assert _git(dest, "rev-list", "--all").split() == [_git(dest, "rev-parse", "HEAD").strip()]
    objects = set(_git(dest, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split())
    tree = {line.split()[2] for line in _git(dest, "ls-tree", "-r", "-t", "HEAD").splitlines()}
    assert objects == tree | {_git(dest, "rev-parse", "HEAD").strip(), _git(dest, "rev-parse", "HEAD^{tree}").strip()}
    assert not (dest / ".git" / "logs").exists() and not _git(dest, "tag")
    for leaked in (base, answer):
        assert subprocess.run(["git", "cat-file", "-e", leaked], cwd=dest, capture_output=True).returncode != 0


def test_the_issue_goes_to_stdout_and_never_into_the_checkout(
    task: tuple[Path, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, _, _ = task
    assert main(["checkout", str(spec), str(tmp_path / "agent")]) == 0
    assert capsys.readouterr().out == "f() should return 2.\n"
    code = main(["checkout", str(spec), str(tmp_path / "other"), "--issue-out", str(tmp_path / "other" / "i.md")])
    assert code == 2 and "inside" in capsys.readouterr().err


def test_a_folder_that_is_not_empty_is_refused(task: tuple[Path, str, str], tmp_path: Path) -> None:
    spec, _, _ = task
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("")
    assert main(["checkout", str(spec), str(tmp_path / "busy")]) == 2
