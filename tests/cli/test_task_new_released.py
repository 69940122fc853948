"""``gradeflow task new`` on a real release with a planted bug (as SWE-smith makes tasks) finds the hand-derived lists.

The release is more-itertools 10.8.0's sdist from PyPI, cached like tests/test_false_alarms.py's (the same
cache and download helper, scripts/false_alarms.py): when it is not cached and PyPI cannot be reached, the
test skips, except under ``CI=true`` where it fails. The sdist is committed as the release; ``tail()``'s
sized branch then drops the first item (``max(1, size - n)``) in a base commit on top. The reference is the
release's ``recipes.py`` back (``git diff base release``) plus a new test file, which must become the hidden
tests. The lists the command writes are compared with the ones derived by hand, by running the release's
tests/test_recipes.py on both sides once while writing this test, kept below as data.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from builders import false_alarms_script
from gradeflow.cli import main

pytestmark = pytest.mark.slow

PROJECT, OLD, VERSION = "more-itertools", "10.7.0", "10.8.0"
"""The release used (10.7.0 is only there to share the false-alarm check's download of the pair)."""
# The prime sieve cross-check alone takes six seconds: left out, on both sides and in the collection.
SLOW = "tests/test_recipes.py::PrimeFunctionTests::test_primes"
SELECTION = f"tests/test_recipes.py tests/test_tail_sized.py --deselect {SLOW}"
COMMAND = f"python -m pytest -q -p no:cacheprovider -p no:randomly {SELECTION} --junitxml={{junit}}"
CORRECT = "        return islice(iterable, max(0, size - n), None)\n"
PLANTED = "        return islice(iterable, max(1, size - n), None)\n"
NEW_TEST = """import more_itertools as mi


def test_tail_of_a_list_shorter_than_n():
    assert list(mi.tail(5, [1, 2])) == [1, 2]
"""
# Derived by hand: the release's test file run on the base (bug planted) and on the release, plus the new
# test (missing from the base's tree, failing there once injected, passing with the fix).
FAIL_TO_PASS = [
    "tests/test_recipes.py::TailTests::test_sized_equal",
    "tests/test_recipes.py::TailTests::test_sized_less",
    "tests/test_tail_sized.py::test_tail_of_a_list_shorter_than_n",
]
SKIPPED = {"tests/test_recipes.py::TransposeTests::test_incompatible_allow"}
"""Skipped on every Python from 3.9 on, on both sides: neither list holds it."""


def _sdist() -> Path:
    script = false_alarms_script()
    try:
        sdists = script.download(script.cache_dir(), [script.Project(PROJECT, OLD, VERSION, tests="tests")])
    except script.DownloadError as exc:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"{PROJECT} {VERSION} is not cached and cannot be downloaded: {exc}")
    return sdists[(PROJECT, VERSION)]


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    env |= {"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD").strip()


def _collected(repo: Path) -> set[str]:
    """Every test id the command selects, as ``pytest --collect-only -q`` lists them."""
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *SELECTION.split()]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True, text=True)
    return {line for line in proc.stdout.splitlines() if "::" in line}


@pytest.fixture
def released(tmp_path: Path) -> tuple[Path, str, str, str, Path]:
    """The release committed, a bug planted in ``tail()`` on top (the base), and the fix as commit and diff."""
    with tarfile.open(_sdist()) as sdist:
        sdist.extractall(tmp_path / "unpacked", filter="data")
    repo = tmp_path / "unpacked" / f"more_itertools-{VERSION}"
    _git(repo, "init", "-q")
    release = _commit(repo, f"more-itertools {VERSION}")
    recipes = repo / "more_itertools" / "recipes.py"
    source = recipes.read_text()
    assert source.count(CORRECT) == 1
    recipes.write_text(source.replace(CORRECT, PLANTED))
    base = _commit(repo, "tail: planted bug")
    recipes.write_text(source)
    (repo / "tests" / "test_tail_sized.py").write_text(NEW_TEST)
    fix = _commit(repo, "tail: fixed, with a regression test")
    patch = tmp_path / "fix.diff"
    patch.write_text(_git(repo, "diff", base, fix))
    assert _git(repo, "diff", base, release) in patch.read_text()
    return repo, release, base, fix, patch


@pytest.mark.usefixtures("prefect")
def test_task_new_on_a_release_with_a_planted_bug_matches_the_lists_derived_by_hand(
    released: tuple[Path, str, str, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, release, base, fix, patch = released
    _git(repo, "checkout", "-q", fix)
    every = _collected(repo)
    _git(repo, "checkout", "-q", base)
    assert set(FAIL_TO_PASS) | SKIPPED <= every and len(every) > 100

    out = tmp_path / "more-itertools-tail" / "task.yaml"
    argv = ["task", "new", "--repo", str(repo), "--base", base, "--reference", str(patch), "--tests", COMMAND]
    assert main([*argv, "--repeat", "2", "--out", str(out)]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("VALID: more-itertools-tail")

    spec = yaml.safe_load(out.read_text())
    assert spec["base_revision"] == base
    tests = spec["tests"]
    assert tests["fail_to_pass"] == FAIL_TO_PASS
    assert set(tests["pass_to_pass"]) == every - set(FAIL_TO_PASS) - SKIPPED
    assert len(tests["pass_to_pass"]) == len(set(tests["pass_to_pass"]))
    assert tests["quarantine"] == []
    assert tests["hidden"] == "hidden_tests"
    hidden = out.parent / "hidden_tests"
    assert [p.relative_to(hidden).as_posix() for p in hidden.rglob("*") if p.is_file()] == ["tests/test_tail_sized.py"]
    assert (hidden / "tests" / "test_tail_sized.py").read_text() == NEW_TEST
    reference = (out.parent / "reference.diff").read_text()
    assert reference == _git(repo, "diff", base, release) and "test_tail_sized" not in reference
