"""What bench/sealing.py and bench/varied_run.py share: one example's tests step made ready to run again and again,
and steps timed in alternation in one process."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gradeflow.api import make_submission
from gradeflow.models import TaskSpec
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.sandbox.isolated import IsolatedSandboxFactory
from gradeflow.sandbox.local import LocalSandboxFactory
from gradeflow.spec import load_task
from gradeflow.tasks import baseline, environment, snapshot


@dataclass(frozen=True)
class Prepared:
    """The example's task, its baseline and the reference patch's snapshot: the tests step's inputs."""

    task: TaskSpec
    base: baseline.Baseline
    snap: snapshot.Snapshot
    factory: SandboxFactory
    workspace: Path


@contextmanager
def prepared(example: Path) -> Iterator[Prepared]:
    """The tests step's inputs for ``example`` (a folder with task.yaml and reference.diff), local sandbox (the
    isolated one with ``GRADEFLOW_BENCH_SANDBOX=isolated``); the snapshot's workspace discarded after."""
    task = load_task(example / "task.yaml")
    submission = make_submission(patch=example / "reference.diff", submission_id="bench")
    isolated = os.environ.get("GRADEFLOW_BENCH_SANDBOX") == "isolated"
    factory: SandboxFactory = IsolatedSandboxFactory(task.environment) if isolated else LocalSandboxFactory()
    env = environment.describe_environment.fn(task, factory)
    base = baseline.prepare_baseline.fn(task, environment.pin_base.fn(task), env, factory)
    snap = snapshot.take_snapshot.fn(task, submission, base)
    assert snap.workspace is not None
    try:
        yield Prepared(task, base, snap, factory, snap.workspace)
    finally:
        snapshot.discard(snap.workspace)


def alternated(
    steps: dict[str, Callable[[], bool]], n: int, what: str, indent: str = "", width: int = 0
) -> dict[str, float]:
    """Each step timed ``n`` times, alternating, after a first round that warms caches and is dropped; each step
    must return true. Prints each step's mean and minimum (labels right-aligned to ``width``, at least the
    longest's); returns the means."""
    samples: dict[str, list[float]] = {label: [] for label in steps}
    for _ in range(n + 1):
        for label, step in steps.items():
            started = time.perf_counter()
            ok = step()
            samples[label].append(time.perf_counter() - started)
            assert ok, f"{what}: {label} did not pass as expected"
    width = max(width, *map(len, steps))
    for label, values in samples.items():
        kept = values[1:]
        print(f"{indent}{label:>{width}}: mean {statistics.mean(kept):.3f} s  min {min(kept):.3f} s  (n={len(kept)})")
    return {label: statistics.mean(values[1:]) for label, values in samples.items()}
