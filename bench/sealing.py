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

    python bench/sealing.py [N]
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_HOME", tempfile.mkdtemp(prefix="gradeflow-bench-"))

from pydantic import SecretStr

from gradeflow.api import make_submission
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


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
