"""What ``gradeflow task new`` costs, in runs of the suite it derives a task from, measured in one run.

Builds a git repository with N tests (a few hundred by default; one module fixed by the reference commit),
twice: tests that do next to nothing (one run about a second: what ``task new`` costs beyond the runs shows),
and tests that each do a fixed amount of work (``--work`` loop steps each; one run several seconds, as the
suites of issue 23 whose task new took 76-155 s ran in 7-10 s). For each, in one process and one Prefect test
server:

- times one plain run of the suite (``python -m pytest`` in a fresh checkout, as a task's command runs it; the
  median of three runs before ``task new`` and three after, so that neither one run slowed by a busy machine
  nor a load that changed while ``task new`` ran sets the ratio);
- runs ``task new --repeat R`` (its base and reference runs, the baseline, the validation grades), counting
  every run of the test command in a sandbox and how many the grader's harness joined;

and prints both, their ratio (the issue's target: at most 4 at ``--repeat 3``) and the runs counted.

    python bench/task_new.py [--tests 300] [--repeat 3] [--work 400000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_HOME", tempfile.mkdtemp(prefix="gradeflow-bench-"))

from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from prefect.testing.utilities import prefect_test_harness

from gradeflow.cli import main as gradeflow
from gradeflow.integrity.harness import MODULE_PREFIX
from gradeflow.sandbox.local import LocalSandbox

COMMAND = "python -m pytest -q -p no:cacheprovider --junitxml={junit}"
GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


WORK = """

def work(steps):
    total = 0
    for step in range(steps):
        total += step
    return total
"""


def _repository(root: Path, tests: int, work: int) -> tuple[Path, str, str]:
    """A repo whose add() subtracts, ``tests`` passing tests in ten modules (each doing ``work`` loop steps), and a
    fix commit with its test."""
    repo = root / "suite"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n" + WORK)
    per_module = max(1, tests // 10)
    for module in range(10):
        body = "".join(
            f"def test_sub_{module}_{n}():\n    work({work})\n    assert sub({n} + 2, 2) == {n}\n\n\n"
            for n in range(per_module)
        )
        (repo / "tests" / f"test_m{module}.py").write_text("from calc import sub, work\n\n\n" + body)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n" + WORK)
    test = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    (repo / "tests" / "test_add.py").write_text(test)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "fix add")
    fix = _git(repo, "rev-parse", "HEAD").strip()
    _git(repo, "checkout", "-q", base)
    return repo, base, fix


def _plain_runs(repo: Path, root: Path, samples: int = 3) -> list[float]:
    """Seconds of ``samples`` plain runs of the suite in a fresh checkout (what each of task new's runs repeats)."""
    checkout = Path(tempfile.mkdtemp(prefix="one-run-", dir=root)) / "suite"
    subprocess.run(["git", "clone", "-q", str(repo), str(checkout)], check=True)
    command = COMMAND.replace("{junit}", str(root / "one-run.xml")).split()
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        subprocess.run([sys.executable, *command[1:]], cwd=checkout, check=False, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def _counting_runs() -> list[bool]:
    """Every run of the test command in a local or isolated sandbox from now on, as whether the harness joined it."""
    runs: list[bool] = []
    run = LocalSandbox.run

    def counted(self: LocalSandbox, command: str, **kwargs: Any) -> Any:
        if "--junitxml" in command:
            runs.append(f"-p {MODULE_PREFIX}" in kwargs["env"].get("PYTEST_ADDOPTS", ""))
        return run(self, command, **kwargs)

    LocalSandbox.run = counted  # type: ignore[method-assign]
    return runs


def _measure(tests: int, repeat: int, work: int, counted: list[bool]) -> tuple[float, float, int, list[bool]]:
    """One plain run's median seconds, task new's seconds, its exit code, and its runs of the suite."""
    root = Path(tempfile.mkdtemp(prefix="gradeflow-task-new-"))
    repo, base, fix = _repository(root, tests, work)
    before = _plain_runs(repo, root)
    argv = ["task", "new", "--repo", str(repo), "--base", base, "--fix-commit", fix, "--tests", COMMAND]
    argv += ["--repeat", str(repeat), "--out", str(root / "derived" / "task.yaml")]
    first = len(counted)
    started = time.perf_counter()
    code = gradeflow(argv)
    whole = time.perf_counter() - started
    runs = counted[first:]
    # Three plain runs before task new and three after: on a shared machine the load moves during the bench.
    after = _plain_runs(repo, root)
    shown = ", ".join(f"{t:.2f}" for t in before + after)
    print(f"{tests} tests, {work} loop steps each: one run {statistics.median(before + after):.2f} s ({shown})")
    return statistics.median(before + after), whole, code, runs


def main(tests: int, repeat: int, work: int) -> int:
    rows, counted = [], _counting_runs()
    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}), prefect_test_harness(server_startup_timeout=60):
        for steps in (0, work):
            rows.append((steps, *_measure(tests, repeat, steps, counted)))
    print(f"\n{'work per test':>14} {'one run':>8} {'task new':>9} {'ratio':>6} {'beyond runs':>12}  runs (harnessed)")
    for steps, one, whole, code, runs in rows:
        # What task new costs beyond its runs, were the runs two at a time at one plain run's speed.
        beyond = whole - one * len(runs) / 2
        print(
            f"{steps:>14} {one:>7.2f}s {whole:>8.1f}s {whole / one:>6.1f} {beyond:>11.1f}s  "
            f"{len(runs)} ({runs.count(True)}){'' if code == 0 else f'  exit {code}'}"
        )
    print(f"target: ratio <= 4 at --repeat 3 (this run: --repeat {repeat})")
    return 0 if all(row[3] == 0 for row in rows) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=int, default=400_000, help="loop steps each test of the second suite does")
    options = parser.parse_args()
    sys.exit(main(options.tests, options.repeat, options.work))
