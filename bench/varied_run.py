"""What the varied re-run adds to the tests step of a passing grade, beside the main run, in one run.

For each example (examples/calc: a bugfix whose two fail_to_pass tests are run again; examples/tidy: a
refactor whose five pass_to_pass tests are) with its reference patch, alternates N times, in the same
process and the local sandbox:

- **main run only**: the tests step (``run_tests.fn``) with the varied re-run left out;
- **with varied run**: the tests step as a grade runs it (the main run, then the passed tests again, each
  call in a forked child with pytest's marks off the process, on a fresh sealed copy).

    ratio = mean["with varied run"] / mean["main run only"]
    print(f"  the varied run adds {added:+.3f} s to a passing grade's tests step ({ratio:.2f}x)")
nothing: it gets no varied run).

    python bench/varied_run.py [N]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_HOME", tempfile.mkdtemp(prefix="gradeflow-bench-"))

from gradeflow.api import make_submission
from gradeflow.logs import quiet_prefect
from gradeflow.sandbox.local import LocalSandboxFactory
from gradeflow.spec import load_task
from gradeflow.tasks import baseline, environment, snapshot, tests

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _no_varied_run(*_args: object) -> None:
    return None


def bench(example: str, n: int) -> None:
    task = load_task(EXAMPLES / example / "task.yaml")
    submission = make_submission(patch=EXAMPLES / example / "reference.diff", submission_id="bench")
    factory = LocalSandboxFactory()
    env = environment.describe_environment.fn(task, factory)
    base = baseline.prepare_baseline.fn(task, environment.pin_base.fn(task), env, factory)
    snap = snapshot.take_snapshot.fn(task, submission, base)
    assert snap.workspace is not None
    real = tests.varied_run

    def main_only() -> bool:
        tests.varied_run = _no_varied_run  # type: ignore[assignment]
        try:
            outcome = tests.run_tests.fn(task, snap, base, factory)
        finally:
            tests.varied_run = real
        return outcome.component.passed and outcome.evidence.varied is None

    def with_varied() -> bool:
        outcome = tests.run_tests.fn(task, snap, base, factory)
        varied = outcome.evidence.varied
        return outcome.component.passed and varied is not None and set(varied.outcomes.values()) == {"passed"}

    steps: dict[str, Callable[[], bool]] = {"main run only": main_only, "with varied run": with_varied}
    samples: dict[str, list[float]] = {label: [] for label in steps}
    try:
        for _ in range(n + 1):  # the first round warms caches and is dropped
            for label, step in steps.items():
                started = time.perf_counter()
                ok = step()
                samples[label].append(time.perf_counter() - started)
                assert ok, f"{example}: {label} did not pass as expected"
    finally:
        snapshot.discard(snap.workspace)
    print(f"{example}:")
    for label, values in samples.items():
        kept = values[1:]
        print(f"  {label:>16}: mean {statistics.mean(kept):.3f} s  min {min(kept):.3f} s  (n={len(kept)})")
    mean = {label: statistics.mean(values[1:]) for label, values in samples.items()}
    added = mean["with varied run"] - mean["main run only"]
    ratio = mean["with varied run"] / mean["main run only"]
    print(f"  the varied run adds {added:+.3f} s to a passing grade's tests step ({ratio:.2f}x)")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    quiet_prefect()
    for example in ("calc", "tidy"):
        bench(example, n)


if __name__ == "__main__":
    main()
