"""What a grade costs when the task's ``setup`` installs a heavy environment (pandas and numpy, ~150 MB).

The environment is built once per baseline key and mounted read-only into every run of the isolated sandbox
(an overlay: shared lower layer, each run's writes in its own upper layer). Printed side by side, in one run:

- **raw**: the task's test command in a venv holding the same packages, outside gradeflow (median);
- **grade**: one warm grade of the reference fix (the environment already built), whole (median);
- **tests step**: that grade's ``tests`` step (acceptance run plus varied run), and its difference to raw;
- **cold**: the first grade, which builds the environment (pip over the network, once).

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


def _task(root: Path) -> Path:
    repo = root / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "stats.py").write_text(BUGGY)
    (repo / "tests" / "test_stats.py").write_text(TESTS)
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
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


def _raw(root: Path, repeat: int) -> list[float]:
    """The test command in a venv of the same packages, on the fixed tree, outside gradeflow."""
    folder = root / "raw-venv"
    venv.EnvBuilder(with_pip=True).create(folder)
    python = folder / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES.split()], check=True)
    tree = root / "raw-tree"
    subprocess.run(["git", "clone", "-q", str(root / "repo"), str(tree)], check=True)
    subprocess.run(["git", "-C", str(tree), "apply", "-"], input=FIX, text=True, check=True)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={root / 'raw.xml'}"]
        subprocess.run(command, cwd=tree, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def main(repeat: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="gradeflow-bench-shared-env-"))
    task = load_task(_task(root))
    started = time.perf_counter()
    first = grade(task, patch=FIX)
    cold = time.perf_counter() - started
    assert first.passed, first.summary()
    totals, steps = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        result = grade(task, patch=FIX)
        totals.append(time.perf_counter() - started)
        steps.append(result.timings.get("tests", float("nan")))
        assert result.passed, result.summary()
    raw = statistics.median(_raw(root, repeat))
    total, step = statistics.median(totals), statistics.median(steps)
    print(f"{'raw test command':28} {raw:7.2f} s")
    print(f"{'grade (warm, median)':28} {total:7.2f} s   raw + {total - raw:5.2f} s   ({total / raw:4.1f}x raw)")
    print(f"{'  of which the tests step':28} {step:7.2f} s   raw + {step - raw:5.2f} s   ({step / raw:4.1f}x raw)")
    print(f"{'first grade (builds it)':28} {cold:7.2f} s")
    print(f"repeat {repeat}; environment: setup `pip install {PACKAGES}`, built once, mounted read-only")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
