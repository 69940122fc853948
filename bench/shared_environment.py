"""What a grade costs when the task's ``setup`` installs a heavy environment (pandas and numpy, ~150 MB).

The environment is built once per baseline key and mounted read-only into every run of the isolated sandbox
(an overlay: shared lower layer, each run's writes in its own upper layer). Printed side by side, in one run:

- **raw**: the task's test command in a venv holding the same packages, outside gradeflow (median; each
  repeat runs it just before its grade, so both meet the same load);
- **grade**: one warm grade of the reference fix (the environment already built), whole (median);
- **tests step**: that grade's ``tests`` step (acceptance run plus varied run), and its difference to raw, with
  where its time went (the tree's copy, sealing, the sandbox with the environment mounted, and reading the
  report; the acceptance run's command, harness included; the varied run's wait);
- **snapshot**: that grade's ``snapshot`` step on the repository of 2,000 files beside a raw ``cp -a`` of it;
- **cold**: the first grade, which builds the environment (pip over the network, once), beside **setup alone**:
  the same ``pip install`` into a fresh venv, outside gradeflow, downloading afresh as setup does in its
  sandbox (whose ``HOME``, pip's cache with it, starts empty).

Needs the package index (``environment.setup_network``); the figures are for this machine and its load.

    python bench/shared_environment.py [REPEAT]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

import yaml

from gradeflow import grade, load_task

PACKAGES = "pandas==2.2.3 numpy==2.1.3 pytest"
TESTS = """import pandas as pd
import pytest

from stats import mean_of


def test_mean_of_empty():
    with pytest.raises(ValueError):
        mean_of(pd.Series([], dtype=float))


def test_mean_of_values():
    assert mean_of(pd.Series([1.0, 2.0, 3.0])) == 2.0
"""
BUGGY = "def mean_of(series):\n    if series.empty:\n        return 0.0\n    return float(series.mean())\n"
FIX = (
    "--- a/stats.py\n+++ b/stats.py\n@@ -1,4 +1,4 @@\n def mean_of(series):\n     if series.empty:\n"
    '-        return 0.0\n+        raise ValueError("empty")\n     return float(series.mean())\n'
)
COMMAND = "python -m pytest -q -p no:cacheprovider --junitxml={junit}"
FILES = 2000
"""The repository's size in files: its package of small modules makes up the rest."""


def _task(root: Path) -> Path:
    repo = root / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "stats.py").write_text(BUGGY)
    (repo / "tests" / "test_stats.py").write_text(TESTS)
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = .\ntestpaths = tests\n")
    (repo / "pkg").mkdir()
    for number in range(FILES - 3):
        (repo / "pkg" / f"mod_{number:04}.py").write_text(f"VALUE = {number}\n")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    base = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    spec = {
        "task_id": "pandas-env",
        "type": "bugfix",
        "repo": "./repo",
        "base_revision": base,
        "setup": f"python -m pip install -q {PACKAGES}",
        "environment": {"setup_network": True},
        "tests": {
            "command": COMMAND,
            "fail_to_pass": ["tests/test_stats.py::test_mean_of_empty"],
            "pass_to_pass": ["tests/test_stats.py::test_mean_of_values"],
        },
    }
    (root / "task.yaml").write_text(yaml.safe_dump(spec))
    return root / "task.yaml"


def _raw_setup(root: Path) -> tuple[Path, float]:
    """A venv of the same packages outside gradeflow, and what making it cost (setup's own cost); the fixed
    tree the raw command runs on beside it."""
    folder = root / "raw-venv"
    started = time.perf_counter()
    venv.EnvBuilder(with_pip=True).create(folder)
    python = folder / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-cache-dir", *PACKAGES.split()], check=True)
    setup = time.perf_counter() - started
    subprocess.run(["git", "clone", "-q", str(root / "repo"), str(root / "raw-tree")], check=True)
    subprocess.run(["git", "-C", str(root / "raw-tree"), "apply", "-"], input=FIX, text=True, check=True)
    return python, setup


def _raw_run(root: Path, python: Path, number: int) -> tuple[float, float]:
    """One raw test command on the fixed tree and one plain copy of the repository, in seconds."""
    started = time.perf_counter()
    command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={root / 'raw.xml'}"]
    subprocess.run(command, cwd=root / "raw-tree", check=True, capture_output=True)
    run = time.perf_counter() - started
    started = time.perf_counter()
    subprocess.run(["cp", "-a", str(root / "repo"), str(root / f"copy-{number}")], check=True)
    return run, time.perf_counter() - started


PARTS = ("copy_seal_sandbox_and_read", "test_command", "varied_run")


def _breakdown(spent: list[dict[str, float]], steps: list[float]) -> str:
    """Each part's median, and the step's time beyond its parts (the engine's task run, grading the evidence)."""
    medians = [f"{part} {statistics.median(s[part] for s in spent):.2f}" for part in PARTS]
    beyond = statistics.median(step - sum(s[part] for part in PARTS) for s, step in zip(spent, steps, strict=True))
    return ", ".join([*medians, f"the rest {beyond:.2f}"])


def main(repeat: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="gradeflow-bench-shared-env-"))
    task = load_task(_task(root))
    started = time.perf_counter()
    first = grade(task, patch=FIX)
    cold = time.perf_counter() - started
    assert first.passed, first.summary()
    python, setup = _raw_setup(root)
    totals, steps, snapshots, spent, runs, copies = [], [], [], [], [], []
    beside = set()
    for number in range(repeat):  # raw and grade in turns, so both meet the same load
        run, copy = _raw_run(root, python, number)
        runs.append(run)
        copies.append(copy)
        started = time.perf_counter()
        result = grade(task, patch=FIX)
        totals.append(time.perf_counter() - started)
        steps.append(result.timings.get("tests", float("nan")))
        snapshots.append(result.timings.get("snapshot", float("nan")))
        assert result.passed, result.summary()
        spent.append(result.component("tests").details["time"])
        beside.add(spent[-1]["varied_run_beside_main"])
    raw, copy = statistics.median(runs), statistics.median(copies)
    total, step, snap = statistics.median(totals), statistics.median(steps), statistics.median(snapshots)
    print(f"{'raw test command':28} {raw:7.2f} s")
    print(f"{'grade (warm, median)':28} {total:7.2f} s   raw + {total - raw:5.2f} s   ({total / raw:4.1f}x raw)")
    print(f"{'  of which the tests step':28} {step:7.2f} s   raw + {step - raw:5.2f} s   ({step / raw:4.1f}x raw)")
    print(f"{'    where it went (median)':28} {_breakdown(spent, steps)}; varied run beside: {sorted(beside)}")
    each = " ".join(f"{step:.2f}" for step in steps)
    print(f"{'    each tests step':28} {each} s; raw {' '.join(f'{r:.2f}' for r in runs)} s")
    print(f"{'  of which the snapshot':28} {snap:7.2f} s   raw cp -a of the {FILES} files {copy:5.2f} s")
    print(f"{'first grade (builds it)':28} {cold:7.2f} s   setup alone (venv + pip install) {setup:6.2f} s")
    print(f"repeat {repeat}; environment: setup `pip install {PACKAGES}`, built once, mounted read-only")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
