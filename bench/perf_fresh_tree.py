"""What the fresh-tree-per-run rule costs one perf step in the docker sandbox, measured side by side.

For each tree (the bundled perf example, a few files; and a synthetic one of 2,000 files, 20 MB) and a
benchmark that does nothing (``python -c pass``), it times one perf step both ways, alternating, R times:

- shared: the old rule, one container per side for setup and every timed run;
- fresh: gradeflow's perf task (``run_perf``), setup once per side, then each timed run in a fresh
  container holding the tree exported after setup.

It prints the median seconds per perf step of each, the difference, the difference per timed run
(there are 2 x runs of them) and the ratio.

    python bench/perf_fresh_tree.py [RUNS] [R]     (default RUNS=5 interleaved pairs, R=3)
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("GRADEFLOW_HOME", tempfile.mkdtemp(prefix="gradeflow-bench-"))

from gradeflow.models import ChangedFile, TaskSpec
from gradeflow.models.evidence import TestRunEvidence
from gradeflow.sandbox import DockerSandboxFactory
from gradeflow.tasks.baseline import Baseline, pack_tests, working_copy
from gradeflow.tasks.perf import run_perf
from gradeflow.tasks.repo import BaseRef
from gradeflow.tasks.snapshot import Snapshot

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "perf" / "repo"
COMMAND = "python -c pass"


def _synthetic(root: Path, files: int = 2000, size: int = 10_000) -> Path:
    for index in range(files):
        path = root / f"pkg{index % 20}" / f"mod{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {index}\n" + "x = 1\n" * (size // 6))
    return root


def _task(repo: Path, runs: int) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "task_id": "bench-perf",
            "type": "perf",
            "repo": str(repo),
            "tests": {"command": "true {junit}"},
            "perf": {"command": COMMAND, "runs": runs},
            "environment": {"sandbox": "docker"},
        }
    )


def _shared(task: TaskSpec, pristine: Path, factory: DockerSandboxFactory) -> float:
    """The old rule: both sides' runs share one container (and one tree) each."""
    assert task.perf is not None
    started = time.perf_counter()
    base, cand = working_copy(pristine), working_copy(pristine)
    try:
        with factory.open(base) as base_box, factory.open(cand) as cand_box:
            for _ in range(task.perf.runs):
                for box in (base_box, cand_box):
                    assert box.run(COMMAND, env={}, timeout=60).ok
    finally:
        shutil.rmtree(base.parent, ignore_errors=True)
        shutil.rmtree(cand.parent, ignore_errors=True)
    return time.perf_counter() - started


def _fresh(task: TaskSpec, pristine: Path, factory: DockerSandboxFactory) -> float:
    """gradeflow's perf task, on a candidate identical to the base (so every run is the same work)."""
    baseline = Baseline(
        base=BaseRef(kind="folder", location=str(pristine), revision="0" * 40),
        key="bench",
        pristine=pristine,
        tests_record=pack_tests(TestRunEvidence()),
    )
    snapshot = Snapshot(workspace=pristine, changes=[ChangedFile(path="README.md")])
    started = time.perf_counter()
    component = run_perf.fn(task, snapshot, baseline, factory)
    assert component is not None and component.details["errors"] == [], component
    return time.perf_counter() - started


def main(runs: int, repeats: int) -> int:
    factory = DockerSandboxFactory()
    factory.describe()
    scratch = Path(tempfile.mkdtemp(prefix="gradeflow-bench-trees-"))
    trees = {"examples/perf": EXAMPLE, "2,000 files, 20 MB": _synthetic(scratch / "synthetic")}
    print(f"docker, benchmark {COMMAND!r}, {runs} interleaved pairs ({2 * runs} timed runs) per perf step")
    print(f"{'tree':>20}  {'shared s':>9}  {'fresh s':>8}  {'added s':>8}  {'per timed run':>13}  {'ratio':>6}")
    try:
        for name, tree in trees.items():
            task = _task(tree, runs)
            shared, fresh = [], []
            _shared(task, tree, factory)  # warm the engine and the page cache
            for _ in range(repeats):
                shared.append(_shared(task, tree, factory))
                fresh.append(_fresh(task, tree, factory))
            s, f = statistics.median(shared), statistics.median(fresh)
            print(f"{name:>20}  {s:9.2f}  {f:8.2f}  {f - s:+8.2f}  {(f - s) / (2 * runs):+13.3f}  {f / s:6.2f}x")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    given = [int(a) for a in sys.argv[1:3]]
    sys.exit(main(*given, *[5, 3][len(given) :]))
