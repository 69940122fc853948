"""``task import-swebench`` on an instance written from a real project's history, graded into SWE-bench's buckets.

The history is more-itertools' own: release 10.7.0 is the base commit of a local mirror, and the change
to 10.8.0 is split the way SWE-bench splits a pull request: the package's source is the gold patch, the
test files are the test patch. Its ``FAIL_TO_PASS`` was derived by hand while writing this test (the
tests 10.8.0 adds for ``derangements``, ``extract``, ``interleave_randomly``, ``running_median`` and
the ``last``/``reshape`` fixes fail on 10.7.0 with 10.8.0's tests, and pass on 10.8.0) and is kept as
data; ``PASS_TO_PASS`` is everything else collected. The sdists come from PyPI through the false-alarm
check's cache (scripts/false_alarms.py): uncached and unreachable, the test skips, or fails under ``CI=true``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from builders import false_alarms_script
from gradeflow.cli import main

pytestmark = pytest.mark.slow

PROJECT, OLD, NEW = "more-itertools", "10.7.0", "10.8.0"
INSTANCE = "more-itertools__more-itertools-10.8.0"
# The prime sieve cross-check alone takes six seconds: left out of the command.
COMMAND = (
    "python -m pytest -q -p no:cacheprovider -p no:randomly tests "
    "--deselect tests/test_recipes.py::PrimeFunctionTests::test_primes --junitxml={junit}"
)
FAIL_TO_PASS = [
    "tests/test_more.py::DerangementsTests::test_repeated_values",
    "tests/test_more.py::DerangementsTests::test_unique_values",
    "tests/test_more.py::DerangementsTests::test_unsortable_unhashable",
    "tests/test_more.py::ExtractTests::test_all_orderings",
    "tests/test_more.py::ExtractTests::test_basics",
    "tests/test_more.py::ExtractTests::test_early_free",
    "tests/test_more.py::ExtractTests::test_lazy_consumption",
    "tests/test_more.py::ExtractTests::test_negative_one_bug",
    "tests/test_more.py::ExtractTests::test_none_value_bug",
    "tests/test_more.py::InterleaveRandomlyTests::test_all_empty",
    "tests/test_more.py::InterleaveRandomlyTests::test_bad_type",
    "tests/test_more.py::InterleaveRandomlyTests::test_basic",
    "tests/test_more.py::InterleaveRandomlyTests::test_no_args",
    "tests/test_more.py::InterleaveRandomlyTests::test_some_empty",
    "tests/test_more.py::LastTests::test_reversed_is_none",
    "tests/test_recipes.py::ReshapeTests::test_multidimensional",
    "tests/test_recipes.py::RunningMedianTests::test_error_cases",
    "tests/test_recipes.py::RunningMedianTests::test_vs_statistics_median",
    "tests/test_recipes.py::RunningMedianTests::test_vs_statistics_median_windowed",
]


def _sdists() -> dict[tuple[str, str], Path]:
    script = false_alarms_script()
    try:
        return dict(script.download(script.cache_dir(), [script.Project(PROJECT, OLD, NEW, tests="tests")]))
    except script.DownloadError as exc:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"{PROJECT} {OLD}/{NEW} is not cached and cannot be downloaded: {exc}")


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    env |= {"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def _unpacked(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as sdist:
        sdist.extractall(into, filter="data")
    (top,) = list(into.iterdir())
    return top


def _collected(tree: Path) -> list[str]:
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(argv, cwd=tree, env=env, check=True, capture_output=True, text=True)
    return [line for line in proc.stdout.splitlines() if "::" in line]


@pytest.fixture
def dataset(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    """A mirror holding 10.7.0 (the base) and 10.8.0, one instance row, its commands file, the gold patch."""
    sdists = _sdists()
    mirror = tmp_path / "repos" / "more-itertools__more-itertools"
    shutil.copytree(_unpacked(sdists[(PROJECT, OLD)], tmp_path / "old"), mirror)
    new = _unpacked(sdists[(PROJECT, NEW)], tmp_path / "new")
    _git(mirror, "init", "-q")
    _git(mirror, "add", "-A")
    _git(mirror, "commit", "-qm", f"more-itertools {OLD}")
    base = _git(mirror, "rev-parse", "HEAD").strip()
    for folder in ("more_itertools", "tests"):
        shutil.rmtree(mirror / folder)
        shutil.copytree(new / folder, mirror / folder)
    _git(mirror, "add", "-A")
    _git(mirror, "commit", "-qm", f"more-itertools {NEW}")
    gold = _git(mirror, "diff", base, "HEAD", "--", "more_itertools")
    tests = _git(mirror, "diff", base, "HEAD", "--", "tests")
    collected = _collected(mirror)  # the release's tests, at 10.8.0
    _git(mirror, "checkout", "-q", base)
    assert set(FAIL_TO_PASS) <= set(collected)
    row = {
        "instance_id": INSTANCE,
        "repo": "more-itertools/more-itertools",
        "base_commit": base,
        "patch": gold,
        "test_patch": tests,
        "FAIL_TO_PASS": json.dumps(FAIL_TO_PASS),
        "PASS_TO_PASS": json.dumps([t for t in collected if t not in FAIL_TO_PASS and "test_primes" not in t]),
        "version": "10.7",
        "environment_setup_commit": base,
        "problem_statement": "Add derangements, extract, interleave_randomly and running_median.\n",
    }
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(row) + "\n")
    commands = tmp_path / "commands.yaml"
    commands.write_text(
        yaml.safe_dump({"more-itertools/more-itertools": {"10.7": {"setup": None, "test_command": COMMAND}}})
    )
    return instances, tmp_path / "repos", commands, gold


@pytest.mark.usefixtures("prefect")
def test_a_real_release_imports_and_its_gold_patch_lands_in_swebenchs_resolved_bucket(
    dataset: tuple[Path, Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances, repos, commands, gold = dataset
    out = tmp_path / "tasks"
    argv = ["task", "import-swebench", str(instances), "--repos", str(repos), "--commands", str(commands)]
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    spec = yaml.safe_load((out / INSTANCE / "task.yaml").read_text())
    assert spec["tests"]["fail_to_pass"] == FAIL_TO_PASS
    assert (spec["tests"]["skipped_pass_to_pass"], spec["tests"]["xfail"]) == ("kept", "pass")
    assert (out / INSTANCE / "reference.diff").read_text() == gold
    assert (out / INSTANCE / "hidden_tests" / "tests" / "test_more.py").is_file()

    # The gold patch is resolved; the base as it is (an empty prediction) and a half fix are not.
    half = gold.split("diff --git a/more_itertools/recipes.py", 1)[0]  # more.py's half of the change only
    assert "diff --git a/more_itertools/more.py" in half and "recipes.py" not in half
    for model, patch, resolved in (("gold", gold, [INSTANCE]), ("half", half, [])):
        predictions = tmp_path / f"{model}.jsonl"
        prediction = {"instance_id": INSTANCE, "model_patch": patch, "model_name_or_path": model}
        predictions.write_text(json.dumps(prediction) + "\n")
        summary_file = tmp_path / f"{model}-summary.json"
        argv = ["evaluate", "--predictions", str(predictions), "--tasks", str(out / "*" / "task.yaml")]
        argv += ["--ledger", str(tmp_path / f"{model}.db"), "--no-progress", "--swebench-report", str(summary_file)]
        assert main(argv) == 0
        summary = json.loads(summary_file.read_text())
        assert (summary["resolved_ids"], summary["error_ids"]) == (resolved, []), (model, summary)
        assert summary["unresolved_ids"] == ([] if resolved else [INSTANCE])
