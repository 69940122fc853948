"""What ``gradeflow task new`` costs, in runs of the suite it derives a task from, measured in one run.

Builds a git repository with N tests (a few hundred by default; one module fixed by the reference commit),
then, in one process and one Prefect test server:

- times one plain run of the suite (``python -m pytest`` in a fresh checkout, as a task's command runs it; the
  median of three runs before ``task new`` and three after, so that neither one run slowed by a busy machine
  nor a load that changed while ``task new`` ran sets the ratio);
- runs ``task new --repeat R`` (its base and reference runs, the baseline, the validation grades), counting
  every run of the test command in a sandbox and how many the grader's harness joined;

and prints both, their ratio (the issue's target: at most 4 at ``--repeat 3``) and the runs counted.

    python bench/task_new.py [--tests 300] [--repeat 3]
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
from gradeflow.sandbox.local import LocalSandbox

COMMAND = "python -m pytest -q -p no:cacheprovider --junitxml={junit}"
GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def _repository(root: Path, tests: int) -> tuple[Path, str, str]:
    """A repo whose add() subtracts, ``tests`` passing tests in ten modules, and a fix commit with its test."""
    repo = root / "suite"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n")
    per_module = max(1, tests // 10)
    for module in range(10):
        body = "".join(
            f"def test_sub_{module}_{n}():\n    assert sub({n} + 2, 2) == {n}\n\n\n" for n in range(per_module)
        )
        (repo / "tests" / f"test_m{module}.py").write_text("from calc import sub\n\n\n" + body)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
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
            runs.append("-p _gradeflow_" in kwargs["env"].get("PYTEST_ADDOPTS", ""))
        return run(self, command, **kwargs)

    LocalSandbox.run = counted  # type: ignore[method-assign]
    return runs


def main(tests: int, repeat: int) -> int:
    root = Path(tempfile.mkdtemp(prefix="gradeflow-task-new-"))
    repo, base, fix = _repository(root, tests)
    before = _plain_runs(repo, root)
    argv = ["task", "new", "--repo", str(repo), "--base", base, "--fix-commit", fix, "--tests", COMMAND]
    argv += ["--repeat", str(repeat), "--out", str(root / "derived" / "task.yaml")]
    runs = _counting_runs()
    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}), prefect_test_harness(server_startup_timeout=60):
        started = time.perf_counter()
        code = gradeflow(argv)
        whole = time.perf_counter() - started
    # Three plain runs before task new and three after: on a shared machine the load moves during the bench.
    after = _plain_runs(repo, root)
    one = statistics.median(before + after)
    shown = ", ".join(f"{t:.2f}" for t in before + after)
    print(f"suite: {tests} tests; one run {one:.2f} s (median of 3 runs before task new and 3 after: {shown})")
    print(f"task new --repeat {repeat}: {whole:.1f} s, exit {code}")
    print(f"ratio task new / one run: {whole / one:.1f} (target <= 4 at --repeat 3)")
    print(f"runs of the suite: {len(runs)} ({runs.count(True)} with the grader's harness)")
    return 0 if code == 0 else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    sys.exit(main(options.tests, options.repeat))
