"""What a grade adds to its tests, at 10, 1,000 and 10,000 tests, in-process and through the CLI.

For each size, a generated repository (one module, one test file with that many tests, one of them
fail-to-pass) is graded with a one-line fix. Printed side by side, in one run, on the same machine:

- **raw**: the task's test command run directly on the fixed tree as a user runs it (pytest's entry-point
  plugins autoloaded: a grade's runs load the same ones, the base run's, by name), with the Python a grade's
  commands get (a private environment over the interpreter that runs gradeflow, showing what is installed
  beside gradeflow but not its engine) and no sandbox (the work a grade cannot avoid);
- **in-process**: ``gradeflow.grade()`` in this process (Prefect imported, baseline cached), minus raw,
  split into **engine** (the whole grade minus its tests step, as the result's ``timings`` has it: the
  target is ≤ 0.3 s, flat) and **tests step** (the tests step minus raw: copy, sealing, harness, parse);
  each grade is paired with a raw run just before it and the medians of the pairs' differences are shown;
- **CLI, first**: the first ``gradeflow grade`` of the task, as a user runs it (through the warm runner; the
  first size also starts the runner and the local Prefect server), minus twice raw: a first grade runs the
  tests on the base (its cached baseline) and on the fix;
- **CLI, later**: the same command again (server and baseline reused) in-process (``GRADEFLOW_RUNNER=off``:
  Prefect and gradeflow imported by the call), minus a raw run made just before it (the median of those
  pairs' differences);
- **runner, later**: the same command through the warm runner (a child forked from the process that imported
  them once), paired with a raw run the same way, the two kinds of call taking turns;
- the part of the tests step that grows with the suite: the raw command at the largest size with gradeflow's
  pytest harness loaded, minus without it (paired runs);
- start-up: ``python -c pass``, ``gradeflow --help``, two usage errors (an unknown command, a missing argument:
  exit 2) and ``gradeflow --version``, run in turn ``STARTUP_RUNS`` times through the installed ``gradeflow``
  executable: each one's median and the median of its differences from the ``python -c pass`` of the same
  round (the target is a whole call under 0.3 s on an idle machine);
- the time of ``gradeflow report`` on a small ledger.

The local server and the runner are started under a temporary ``GRADEFLOW_HOME`` and stopped at the end. ``--startup``
prints the start-up table only, from ``RUNS`` rounds (default ``STARTUP_RUNS``).

    python bench/cli_overhead.py [REPEAT [SIZE ...]]   (sizes default to 10, 1,000 and 10,000 tests)
    python bench/cli_overhead.py --startup [RUNS]
"""

from __future__ import annotations

import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOME = Path(tempfile.mkdtemp(prefix="gradeflow-bench-cli-"))
os.environ["GRADEFLOW_HOME"] = str(HOME / "home")
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ.pop("PREFECT_API_URL", None)
SIZES = (10, 1_000, 10_000)
COMMAND = "python -m pytest -q -p no:cacheprovider -p no:randomly --junitxml={junit}"
GRADEFLOW = [sys.executable, "-m", "gradeflow.cli"]
STARTUP_RUNS = 21
# The console script users run (``python -m`` adds runpy's imports), where the venv has one.
_SCRIPT = Path(sys.executable).with_name("gradeflow")
EXECUTABLE = [str(_SCRIPT)] if _SCRIPT.exists() else GRADEFLOW
STARTUP = (
    ("python -c pass", [sys.executable, "-c", "pass"], 0),
    ("gradeflow --help", [*EXECUTABLE, "--help"], 0),
    ("gradeflow frobnicate (usage error)", [*EXECUTABLE, "frobnicate"], 2),
    ("gradeflow grade task.yaml (usage error)", [*EXECUTABLE, "grade", "task.yaml"], 2),
    ("gradeflow --version", [*EXECUTABLE, "--version"], 0),
)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _repository(root: Path, tests: int) -> tuple[Path, Path]:
    """A repository with ``tests`` tests and a broken ``double``; the task spec and the fix's diff."""
    repo = root / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "mod.py").write_text("def double(x):\n    return x + x + 1\n")
    body = ["from mod import double\n", "def test_double():\n    assert double(2) == 4\n"]
    body += [f"def test_n{i}():\n    assert {i} == {i}\n" for i in range(tests - 1)]
    (repo / "tests" / "test_many.py").write_text("\n".join(body))
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = .\ntestpaths = tests\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True)
    task = root / "task.yaml"
    task.write_text(
        f"task_id: many-{tests}\ntype: bugfix\nrepo: ./repo\nbase_revision: {head.stdout.strip()}\n"
        f"tests:\n  command: {COMMAND!r}\n"
        "  fail_to_pass: ['tests/test_many.py::test_double']\n"
    )
    patch = root / "fix.diff"
    patch.write_text(
        "diff --git a/mod.py b/mod.py\n--- a/mod.py\n+++ b/mod.py\n@@ -1,2 +1,2 @@\n def double(x):\n"
        "-    return x + x + 1\n+    return x + x\n"
    )
    return task, patch


@functools.cache
def _raw_python() -> Path:
    from gradeflow.sandbox._host_packages import VIEW_NAME, view_folder
    from gradeflow.sandbox.local import make_private_environment

    (HOME / VIEW_NAME).symlink_to(view_folder())  # beside the environment, as a sandbox shows it
    return make_private_environment(HOME / "raw-python")


def _raw(root: Path, extra: dict[str, str] | None = None) -> float:
    tree = root / "raw"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(root / "repo", tree)
    subprocess.run(["git", "apply", str(root / "fix.diff")], cwd=tree, check=True)
    started = time.perf_counter()
    # The entry-point plugins autoloaded, as a user's run of the command loads them (a grade's runs load the
    # base run's, the same ones, by name: until 2026-12 raw left them out, and a grade's figures carried their
    # import, about 0.08 s here), and the Python a grade's commands get first on PATH: a private environment
    # over gradeflow's interpreter showing what it shows (not gradeflow's engine, nor its pytest plugins: since
    # 2026-12-07; PATH alone may find another Python, with another pytest, behind a pyenv shim): the
    # difference is then gradeflow's work.
    path = f"{_raw_python()}/bin:{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    env = {**env, "PATH": path, **(extra or {})}
    subprocess.run(COMMAND.format(junit=root / "raw.xml").split(), cwd=tree, env=env, capture_output=True, check=False)
    return time.perf_counter() - started


def _harness_cost(root: Path, repeat: int) -> float:
    """Median of paired differences: the raw command with gradeflow's pytest harness loaded, minus without."""
    from gradeflow.integrity.plugin_files import plugin_files

    folder = root / "harness"
    folder.mkdir(exist_ok=True)
    config = {
        "nonce": "bench",
        "record": str(folder / "record.json"),
        "calls": str(folder / "calls.log"),
        "canary_file": str(folder / "no_canaries.py"),
        "canaries": ["test_canary_pass", "test_canary_fail"],
        "must_fail": "test_canary_fail",
        "select": None,
    }
    for name, data in plugin_files("_gradeflow_bench", config).items():
        (folder / name).write_bytes(data)
    differences = []
    for _ in range(repeat):
        plain = _raw(root)
        (folder / "calls.log").unlink(missing_ok=True)
        with_harness = _raw(root, {"PYTHONPATH": str(folder), "PYTEST_ADDOPTS": "-p _gradeflow_bench"})
        differences.append(with_harness - plain)
    return statistics.median(differences)


def _small_ledger(root: Path) -> str:
    """A SQLite ledger of 40 grades: two models, ten tasks, two runs each."""
    from gradeflow.evaluation.ledger import GradeRecord, Ledger

    url = f"sqlite:///{root / 'ledger.db'}"
    ledger = Ledger(url)
    for model in ("model-a", "model-b"):
        for task in range(10):
            for run in range(2):
                passed = (task + run + (model == "model-a")) % 3 != 0
                ledger.add(
                    GradeRecord(
                        **dict.fromkeys(("task_spec_hash", "patch_hash", "repository_revision"), "0" * 12),
                        run_id=f"{model}-{task}-{run}",
                        task_id=f"task-{task}",
                        submission_id=f"{model}-{task}-{run}",
                        content_key=f"{model}-{task}",
                        environment_fingerprint="bench",
                        model_id=model,
                        prompt_revision="p1",
                        grader_revision="g1",
                        profile="default",
                        score=1.0 if passed else 0.0,
                        passed=passed,
                        decision="merge-candidate" if passed else "rejected",
                        status="graded",
                    )
                )
    ledger.close()
    return url


def _timed(argv: list[str], expected: int = 0, runner: str = "on") -> float:
    started = time.perf_counter()
    env = {**os.environ, "GRADEFLOW_RUNNER": runner}
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if done.returncode != expected:
        raise SystemExit(f"{' '.join(argv[-4:])} exited {done.returncode}, not {expected}: {done.stderr[-500:]}")
    return time.perf_counter() - started


def startup(runs: int) -> None:
    """Print the start-up table: each command's median and its median paired difference from ``python -c pass``.

    The commands run in turn, one round after another, so a load that comes and goes falls on all of them.
    """
    times: dict[str, list[float]] = {label: [] for label, _, _ in STARTUP}
    for _ in range(runs):
        for label, argv, expected in STARTUP:
            times[label].append(_timed(argv, expected))
    empty = times[STARTUP[0][0]]
    width = max(len(label) for label, _, _ in STARTUP)
    print(f"{'start-up, median of ' + str(runs):<{width}} {'seconds':>8} {'- python -c pass':>17}")
    for label, _, _ in STARTUP:
        added = statistics.median(t - e for t, e in zip(times[label], empty, strict=True))
        shown = "" if label == STARTUP[0][0] else f"{added:+17.3f}"
        print(f"{label:<{width}} {statistics.median(times[label]):8.3f} {shown}")


def _in_process(root: Path, task: Path, patch: Path, repeat: int) -> tuple[float, float, float]:
    """What a warm grade in this process adds to raw, its engine, and its tests step minus raw (medians, seconds).

    Each grade is paired with a raw run just before it, and the differences are taken pair by pair: on a
    shared machine, runs minutes apart differ by more than the figures measured.
    """
    from gradeflow import grade
    from gradeflow.logs import configure_logging, quiet_prefect

    configure_logging("WARNING")  # as the CLI does: the table is the output
    quiet_prefect()
    grade(task, patch=patch)  # the baseline, built once and cached
    added, engine, step = [], [], []
    for _ in range(repeat):
        raw = _raw(root)
        started = time.perf_counter()
        result = grade(task, patch=patch)
        whole = time.perf_counter() - started
        added.append(whole - raw)
        engine.append(whole - result.timings["tests"])
        step.append(result.timings["tests"] - raw)
    return statistics.median(added), statistics.median(engine), statistics.median(step)


def _later(root: Path, argv: list[str], repeat: int) -> tuple[float, float]:
    """What a later call adds to raw, in-process and through the runner: medians of paired differences, the
    two kinds of call taking turns so that a load that comes and goes falls on both."""
    in_process, warm = [], []
    for _ in range(repeat):
        raw = _raw(root)
        in_process.append(_timed(argv, runner="off") - raw)
        raw = _raw(root)
        warm.append(_timed(argv, runner="on") - raw)
    return statistics.median(in_process), statistics.median(warm)


def main(repeat: int, sizes: tuple[int, ...] = SIZES) -> None:
    print(
        f"{'tests':>6} {'raw':>7} {'in-process +':>13} {'engine +':>9} {'tests step +':>13} {'CLI first +':>12}"
        f" {'CLI later +':>12} {'runner later +':>15}  (seconds)"
    )
    first = True
    for size in sizes:
        root = HOME / f"n{size}"
        task, patch = _repository(root, size)
        raw = statistics.median(_raw(root) for _ in range(repeat))
        argv = [*GRADEFLOW, "grade", str(task), "--patch", str(patch), "--json"]
        cli_first = _timed(argv)  # starts the runner and the local server on the first size, builds the baseline
        cli_later, runner_later = _later(root, argv, repeat)
        added, engine, step = _in_process(root, task, patch, repeat)
        label = "runner, server and baseline" if first else "baseline"
        first = False
        print(
            f"{size:>6} {raw:7.2f} {added:+13.2f} {engine:+9.2f} {step:+13.2f}"
            f" {cli_first - 2 * raw:+12.2f} {cli_later:+12.2f} {runner_later:+15.2f}  first call starts the {label}"
        )
    harness = _harness_cost(root, repeat)
    print(
        f"in the tests step at {sizes[-1]} tests: gradeflow's pytest harness {harness:+.2f} s"
        f" ({harness / sizes[-1] * 1e6:.0f} µs a test: the integrity checks after every test call)"
    )
    startup(STARTUP_RUNS)
    ledger = _small_ledger(HOME)
    reported = statistics.median(_timed([*GRADEFLOW, "report", "--ledger", ledger]) for _ in range(repeat))
    print(f"gradeflow report on a ledger of 40 grades {reported:.2f} s")
    subprocess.run([*GRADEFLOW, "runner", "stop"], capture_output=True, check=False)
    subprocess.run([*GRADEFLOW, "server", "stop"], capture_output=True, check=False)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--startup"]:
        startup(int(sys.argv[2]) if len(sys.argv) > 2 else STARTUP_RUNS)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 3, tuple(int(n) for n in sys.argv[2:]) or SIZES)
