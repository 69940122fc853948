"""No hard-stop detector fires on the bundled examples' reference patches (real git, bandit, griffe)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from builders import EXAMPLES
from gradeflow.tasks.compatibility import api_breaks, top_level_packages
from gradeflow.tasks.data_loss import data_loss_between
from gradeflow.tasks.security import security_findings

REFERENCES = sorted(EXAMPLES.glob("*/reference.diff"))


def _git(repo: Path, *args: str) -> str:
    argv = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def _python_files(root: Path, paths: list[str]) -> dict[str, str]:
    return {p: (root / p).read_text() for p in paths if p.endswith(".py") and (root / p).is_file()}


@pytest.mark.parametrize("reference", REFERENCES, ids=lambda p: p.parent.name)
def test_reference_patch_trips_no_detector(tmp_path: Path, reference: Path) -> None:
    base, cand = tmp_path / "base", tmp_path / "cand"
    shutil.copytree(reference.parent / "repo", base)
    _git(base, "init", "-q")
    _git(base, "add", "-A")
    _git(base, "commit", "-qm", "base")
    shutil.copytree(base, cand)
    _git(cand, "apply", str(reference))
    _git(cand, "add", "-A")
    _git(cand, "commit", "-qm", "reference")
    changed = _git(cand, "diff", "--name-only", "HEAD~1", "HEAD").split()
    assert changed, "the reference patch changes something"
    assert security_findings(_python_files(base, changed), _python_files(cand, changed)) == []
    assert data_loss_between(cand, "HEAD~1", "HEAD", scope=["src/**"]) == []
    assert top_level_packages(base), "the API check has a package to compare"
    assert api_breaks(base, cand) == []
