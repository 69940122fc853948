"""``gradeflow task new``: a task spec derived from a real repository, a bug and its fix."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from gradeflow.authoring.derive import derive_tests, node_id_of
from gradeflow.authoring.patches import split_diff
from gradeflow.cli import main
from gradeflow.models.evidence import TestCaseResult
from gradeflow.models.testids import is_doctest_id

COMMAND = "python -m pytest -q -p no:cacheprovider --junitxml={junit}"
# Passes on odd runs of one workspace, fails on even ones: flaky, whatever the side.
FLAKY = """
from pathlib import Path


def test_flaky():
    counter = Path(__file__).with_name(".counter")
    count = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(count))
    assert count % 2
"""


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    env |= {"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def calc_repository(root: Path, extra: dict[str, str]) -> tuple[Path, str, str]:
    """A repository whose add() subtracts, ``extra`` test files beside its test of sub(), and a fix commit (calc.py
    plus a new test file); checked out at the base."""
    repo = root / "calc"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n")
    (repo / "tests" / "test_calc.py").write_text("from calc import sub\n\ndef test_sub():\n    assert sub(3, 1) == 2\n")
    for name, text in extra.items():
        (repo / "tests" / name).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    (repo / "tests" / "test_add.py").write_text("from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "fix add")
    fix = _git(repo, "rev-parse", "HEAD").strip()
    _git(repo, "checkout", "-q", base)
    return repo, base, fix


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str, str, Path]:
    """calc_repository with a flaky test, and its fix as commit and diff."""
    repo, base, fix = calc_repository(tmp_path, {"test_flaky.py": FLAKY})
    patch = tmp_path / "fix.diff"
    patch.write_text(_git(repo, "diff", base, fix))
    return repo, base, fix, patch


@pytest.mark.usefixtures("prefect")
def test_the_derived_task_lists_the_right_tests_and_validates(
    project: tuple[Path, str, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base, _, patch = project
    out = tmp_path / "calc-add" / "task.yaml"
    argv = ["task", "new", "--repo", str(repo), "--base", base, "--reference", str(patch), "--tests", COMMAND]
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert captured.out.startswith("VALID: calc-add") and "running the tests 3x" in captured.err
    spec = yaml.safe_load(out.read_text())
    assert (spec["task_id"], spec["type"], spec["base_revision"]) == ("calc-add", "bugfix", base)
    tests = spec["tests"]
    assert tests["fail_to_pass"] == ["tests/test_add.py::test_add"]
    assert tests["pass_to_pass"] == ["tests/test_calc.py::test_sub"]
    assert tests["quarantine"] == ["tests/test_flaky.py::test_flaky"]
    assert tests["hidden"] == "hidden_tests" and tests["publish_hidden_details"] is False
    hidden = out.parent / "hidden_tests"
    assert [p.relative_to(hidden).as_posix() for p in hidden.rglob("*") if p.is_file()] == ["tests/test_add.py"]
    reference = (out.parent / "reference.diff").read_text()
    assert "calc.py" in reference and "test_add" not in reference
    assert main(["validate", str(out), "--reference", str(out.parent / "reference.diff")]) == 0
    assert capsys.readouterr().out.startswith("VALID: calc-add")


@pytest.mark.usefixtures("prefect")
def test_a_fix_commit_stands_in_for_the_reference(
    project: tuple[Path, str, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base, fix, _ = project
    out = tmp_path / "by-commit" / "task.yaml"
    argv = ["task", "new", "--repo", str(repo), "--base", base, "--fix-commit", fix, "--tests", COMMAND]
    assert main([*argv, "--repeat", "2", "--type", "feature", "--out", str(out)]) == 0, capsys.readouterr().err
    spec = yaml.safe_load(out.read_text())
    assert spec["type"] == "feature" and spec["tests"]["fail_to_pass"] == ["tests/test_add.py::test_add"]


def _bad_inputs(tmp_path: Path, repo: Path, base: str, patch: Path) -> dict[str, tuple[list[str], str]]:
    other = tmp_path / "other.diff"
    other.write_text("--- a/nothing.py\n+++ b/nothing.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    good = ["--repo", str(repo), "--base", base, "--reference", str(patch), "--tests", COMMAND]
    return {
        "missing repo": (["--repo", str(tmp_path / "nope"), *good[2:]], f"--repo: {tmp_path / 'nope'} is not a folder"),
        "not a repository": (["--repo", str(tmp_path), *good[2:]], "is not a git repository"),
        "unknown revision": ([*good[:2], "--base", "v9.9", *good[4:]], "--base: revision v9.9 not found"),
        "unreadable patch": ([*good[:4], "--reference", str(tmp_path / "x.diff"), *good[6:]], "cannot read"),
        "does not apply": ([*good[:4], "--reference", str(other), *good[6:]], "does not apply to"),
        "no junit": ([*good[:6], "--tests", "python -m pytest"], "--tests: the command must contain {junit}"),
        "unknown fix commit": ([*good[:4], "--fix-commit", "feedbeef", *good[6:]], "--fix-commit: revision feedbeef"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing repo",
        "not a repository",
        "unknown revision",
        "unreadable patch",
        "does not apply",
        "no junit",
        "unknown fix commit",
    ],
)
def test_bad_input_exits_2_naming_what_and_where(
    case: str, project: tuple[Path, str, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base, _, patch = project
    argv, message = _bad_inputs(tmp_path, repo, base, patch)[case]
    out = tmp_path / "out" / "task.yaml"
    assert main(["task", "new", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_ids_name_the_file_when_the_tree_has_it() -> None:
    files = {"tests/test_x.py", "pkg/mod.py", "docs/guide.rst"}
    cases = {
        ("tests.test_x", "test_a[1-::]"): "tests/test_x.py::test_a[1-::]",
        ("tests.test_x.TestX.Inner", "test_b"): "tests/test_x.py::TestX::Inner::test_b",
        ("pkg.mod", "pkg.mod.func"): "pkg/mod.py::pkg.mod.func",
        ("docs.guide.rst", "guide.rst"): "docs/guide.rst::guide.rst",
        ("com.acme.CalcTest", "testDivide"): "com.acme.CalcTest::testDivide",
    }
    for (classname, name), expected in cases.items():
        assert node_id_of(TestCaseResult(classname=classname, name=name, outcome="passed"), files) == expected
    assert is_doctest_id(node_id_of(TestCaseResult(classname="pkg.mod", name="pkg.mod.func", outcome="failed"), files))


def test_tests_are_sorted_by_their_outcomes_on_both_sides() -> None:
    runs = {
        "t::fixed": (["failed"] * 3, ["passed"] * 3),
        "t::new": (["missing"] * 3, ["passed"] * 3),
        "t::kept": (["passed"] * 3, ["passed"] * 3),
        "t::flips": (["passed"] * 3, ["passed", "failed", "passed"]),
        "t::broken": (["passed"] * 3, ["failed"] * 3),
        "t::skipped": (["skipped"] * 3, ["passed"] * 3),
        # an expected failure is a failure: xfailed on the base and passing with the fix is fail-to-pass
        "t::xfixed": (["xfailed"] * 3, ["passed"] * 3),
        "t::xfailed": (["xfailed"] * 3, ["xfailed"] * 3),
        "t::xbroken": (["passed"] * 3, ["xfailed"] * 3),
    }
    cases = {k: TestCaseResult(classname="t", name=k[3:], outcome="passed") for k in runs}
    derived = derive_tests({k: v[0] for k, v in runs.items()}, {k: v[1] for k, v in runs.items()}, cases, set())  # type: ignore[misc]
    assert (derived.fail_to_pass, derived.pass_to_pass) == (["t::fixed", "t::new", "t::xfixed"], ["t::kept"])
    assert derived.quarantine == ["t::flips"]
    assert derived.unscored == ["t::broken", "t::skipped", "t::xbroken", "t::xfailed"]


def test_a_diff_splits_per_file_and_joins_back() -> None:
    patch = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n"
        "diff --git a/t/test_a.py b/t/test_a.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/t/test_a.py\n@@ -0,0 +1 @@\n+z\n"
        "diff --git a/old.py b/new.py\nsimilarity index 100%\nrename from old.py\nrename to new.py\n"
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-q\n"
    )
    blocks = split_diff(patch)
    assert "".join(b.text for b in blocks) == patch
    assert [(b.old, b.new, b.adds_or_edits) for b in blocks] == [
        ("a.py", "a.py", True),
        (None, "t/test_a.py", True),
        ("old.py", "new.py", False),
        ("gone.py", None, False),
    ]
