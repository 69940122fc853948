"""What sealing and the canary harness add to the tests step of one grade.

On examples/calc (a bugfix task) with its reference patch, alternates N times, in the same process:

- **raw**: a fresh copy of the candidate's tree, the test command run in the local sandbox, its JUnit
  report read (what the tests step cost before sealing);
- **raw, same plugins**: the same, with pytest's plugin autoload off and the base's entry-point
  plugins named, as the candidate's sealed runs load them (so the difference is gradeflow's work, not
  fewer plugins);
- **sealed**: the tests step itself (``run_tests.fn``): a fresh copy, sealed to the base's test
  harness, canaries written, gradeflow's plugin installed, the run checked against its record.

Prints the mean and minimum of each, the difference per grade and the ratio (target: ≤ 0.2 s added).

Then, at 1,000 tests (ten modules of 100, each test calling a small library that builds dataclasses and
opens files, so the audit hook sees its ordinary traffic), pytest alone against pytest with gradeflow's
plugin (its test-module namespace checks included) without its audit hook, with it, and with it and the
channel a grade hands it on standard input (the run's signing key alone, then with the test modules it
serves from memory instead of reading them from disk), side by side (target: the plugin as a grade runs
it ≤ 0.2 s over the raw run).

    python bench/sealing.py [N]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_HOME", tempfile.mkdtemp(prefix="gradeflow-bench-"))

from pydantic import SecretStr

from gradeflow.api import make_submission
from gradeflow.integrity.harness import Harness
from gradeflow.logs import quiet_prefect
from gradeflow.sandbox.local import LocalSandboxFactory
from gradeflow.spec import load_task
from gradeflow.tasks import baseline, environment, snapshot, tests
from gradeflow.tasks._testrun import run_test_command

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "calc"


def main(n: int) -> None:
    quiet_prefect()
    task = load_task(EXAMPLE / "task.yaml")
    submission = make_submission(patch=EXAMPLE / "reference.diff", submission_id="bench")
    factory = LocalSandboxFactory()
    env = environment.describe_environment.fn(task, factory)
    base = baseline.prepare_baseline.fn(task, environment.pin_base.fn(task), env, factory)
    snap = snapshot.take_snapshot.fn(task, submission, base)
    assert snap.workspace is not None
    workspace = snap.workspace

    assert base.tests.harness is not None
    plugins = " ".join(f"-p {m}" for m in base.tests.harness.entrypoint_modules)
    same_plugins = task.model_copy(
        update={
            "env": {**task.env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": SecretStr("1"), "PYTEST_ADDOPTS": SecretStr(plugins)}
        }
    )

    def run_raw(spec: object) -> bool:
        tree = baseline.working_copy(workspace)
        try:
            with factory.open(tree) as sandbox:
                evidence = run_test_command(spec, sandbox)  # type: ignore[arg-type]
        finally:
            shutil.rmtree(tree.parent, ignore_errors=True)
        return evidence.exit_code == 0 and not evidence.junit_error

    def raw() -> bool:
        return run_raw(task)

    def raw_same_plugins() -> bool:
        return run_raw(same_plugins)

    def sealed() -> bool:
        outcome = tests.run_tests.fn(task, snap, base, factory)
        return outcome.component.passed and outcome.component.details.get("canaries") == "checked"

    steps: dict[str, Callable[[], bool]] = {"raw": raw, "raw, same plugins": raw_same_plugins, "sealed": sealed}
    samples: dict[str, list[float]] = {label: [] for label in steps}
    try:
        for _ in range(n + 1):  # the first round warms caches and is dropped
            for label, step in steps.items():
                started = time.perf_counter()
                ok = step()
                samples[label].append(time.perf_counter() - started)
                assert ok, f"{label} run did not pass"
    finally:
        snapshot.discard(workspace)
    for label, values in samples.items():
        kept = values[1:]
        print(f"{label:>17}: mean {statistics.mean(kept):.3f} s  min {min(kept):.3f} s  (n={len(kept)})")
    mean = {label: statistics.mean(values[1:]) for label, values in samples.items()}
    for against in ("raw", "raw, same plugins"):
        added, ratio = mean["sealed"] - mean[against], mean["sealed"] / mean[against]
        print(f"sealed vs {against}: {added:+.3f} s per grade (ratio {ratio:.2f}x; target <= +0.2 s)")


LIBRARY = '''"""A small library the bench's tests call."""

import dataclasses
import json
import tempfile


@dataclasses.dataclass
class Point:
    x: int
    y: int


def roundtrip(i):
    with tempfile.TemporaryFile("w+") as handle:
        json.dump(dataclasses.asdict(Point(i, i + 1)), handle)
        handle.seek(0)
        return Point(**json.load(handle))
'''


def _thousand_tests(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "lib.py").write_text(LIBRARY)
    for module in range(10):
        body = "from lib import roundtrip\n\n" + "".join(
            f"\ndef test_{module}_{i}():\n    assert roundtrip({i}).y == {i + 1}\n" for i in range(100)
        )
        (root / "tests" / f"test_m{module}.py").write_text(body)
    (root / "tests" / "test_canary.py").write_text(
        "def test_ok_1():\n    pass\n\n\ndef test_no_1():\n    assert False\n"
    )


def _plugin(root: Path, out: Path, audit: bool, channel: bool = False) -> str:
    """The harness plugin's source for a run over ``root`` (its audit hook on or off, reading the channel or not)."""
    config = {
        "nonce": "0bec0000",
        "record": str(out / "record.json"),
        "calls": str(out / "calls.log"),
        "canary_file": str(root / "tests" / "test_canary.py"),
        "canaries": ["test_ok_1", "test_no_1"],
        "must_fail": "test_no_1",
        "select": None,
        "workspace": str(root) if audit else None,
        "channel": channel,
    }
    template = (Path(__file__).resolve().parent.parent / "src/gradeflow/integrity/plugin.py.txt").read_text()
    return template.replace("__GRADEFLOW_CONFIG__", json.dumps(config))


def audit_cost(n: int) -> None:
    """pytest alone, with the plugin, and with the plugin's audit hook, on 1,000 tests."""
    scratch = Path(tempfile.mkdtemp(prefix="gradeflow-bench-audit-"))
    root, out = scratch / "repo", scratch / "out"
    try:
        _thousand_tests(root)
        out.mkdir()
        sources = {path.relative_to(root).as_posix(): path.read_text() for path in (root / "tests").glob("*.py")}
        harness = Harness(
            nonce="0bec0000",
            canary_file="tests/test_canary.py",
            must_pass="test_ok_1",
            must_fail="test_no_1",
            sources=sources,
            key="5e" * 32,  # the record and each call signed, as in a grade
        )
        for name, audit, channel in (("plain", False, False), ("audited", True, False), ("handed", True, True)):
            (out / name).mkdir()
            (out / name / f"{harness.module}.py").write_text(_plugin(root, out, audit, channel))
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
        env = {**os.environ, "PYTHONPATH": "src", "PYTHONDONTWRITEBYTECODE": "1"}
        runs = {
            "raw": (base, env),
            "plugin, no audit": ([*base, "-p", harness.module], {**env, "PYTHONPATH": f"{out / 'plain'}:src"}),
            "plugin + audit": ([*base, "-p", harness.module], {**env, "PYTHONPATH": f"{out / 'audited'}:src"}),
            "+ key": ([*base, "-p", harness.module], {**env, "PYTHONPATH": f"{out / 'handed'}:src"}),
            "+ key, served": ([*base, "-p", harness.module], {**env, "PYTHONPATH": f"{out / 'handed'}:src"}),
        }
        stdin = {"+ key": json.dumps({"key": harness.key}).encode(), "+ key, served": harness.channel(str(root))}
        samples: dict[str, list[float]] = {label: [] for label in runs}
        for _ in range(n + 1):
            for label, (argv, variables) in runs.items():
                started = time.perf_counter()
                subprocess.run(argv, cwd=root, env=variables, input=stdin.get(label), capture_output=True, check=False)
                samples[label].append(time.perf_counter() - started)
        means = {label: statistics.mean(values[1:]) for label, values in samples.items()}
        print("1,000 tests: " + "  ".join(f"{label} {mean:.3f} s" for label, mean in means.items()))
        hook = means["plugin + audit"] - means["plugin, no audit"]
        key, served = means["+ key"] - means["plugin + audit"], means["+ key, served"] - means["+ key"]
        over = means["+ key, served"] - means["raw"]
        print(f"audit hook: {hook:+.3f} s; signing key: {key:+.3f} s; test modules served from memory: {served:+.3f} s")
        print(
            f"the plugin as a grade runs it (audit, namespace checks, signing, served modules) over raw: {over:+.3f} s"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    main(runs)
    audit_cost(runs)
