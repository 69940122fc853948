"""What ``gradeflow task strength`` costs, in grades of the reference measured in the same run.

On examples/calc (or the task given), in one process and one Prefect test server: make the wrong
patches (mutants, do-nothing, reverted blocks), then run the ``task-strength`` flow, which grades the
reference first and then each wrong patch through ``grade-submission``. Prints, as ratios to that one
grade of the reference (the same machine, the same moment, the same warm baseline):

- the whole strength run (patches made plus every grade), and the grades alone;
- the mean wrong-patch grade (≈ 1 when each costs what a real grade does);
- making the patches (git and ast work outside the sandbox).

Absolute seconds are printed beside the ratios only as context.

    python bench/task_strength.py [TASK.yaml [REFERENCE.diff]] [--mutants N] [--sandbox local]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_HOME", tempfile.mkdtemp(prefix="gradeflow-bench-"))

from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from prefect.testing.utilities import prefect_test_harness

from gradeflow.authoring.strength import wrong_patches
from gradeflow.flows.strength import task_strength
from gradeflow.logs import configure_logging, quiet_prefect
from gradeflow.spec import load_task

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "calc"


def main(task_path: Path, reference_path: Path, mutants: int, sandbox: str | None) -> None:
    configure_logging("WARNING")
    quiet_prefect()
    task = load_task(task_path)
    reference = reference_path.read_text(encoding="utf-8")
    # A warm-up grade: the baseline is built and cached, as it is before any real strength run.
    task_strength(task, [("warm-up", reference)], sandbox)
    started = time.perf_counter()
    wrong = wrong_patches(task, reference, mutants)
    made = time.perf_counter() - started
    graded = task_strength(task, [("reference", reference), *((w.submission_id, w.patch) for w in wrong)], sandbox)
    total = time.perf_counter() - started
    unit = graded[0].seconds
    grades = sum(g.seconds for g in graded)
    per_wrong = statistics.fmean(g.seconds for g in graded[1:])
    killed = sum(not g.result.passed for g in graded[1:] if g.result.status == "graded")
    print(f"task {task.task_id}: {len(wrong)} wrong patches ({killed} killed), 1 grade of the reference = {unit:.2f} s")
    print(f"  strength run / reference grade:     {total / unit:6.1f}x  ({total:.1f} s)")
    print(f"  grades alone / reference grade:     {grades / unit:6.1f}x  ({len(graded)} grades)")
    print(f"  mean wrong-patch grade / reference: {per_wrong / unit:6.2f}x")
    print(f"  making the patches / reference:     {made / unit:6.2f}x  ({made:.2f} s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", nargs="?", type=Path, default=EXAMPLE / "task.yaml")
    parser.add_argument("reference", nargs="?", type=Path)
    parser.add_argument("--mutants", type=int, default=20)
    parser.add_argument("--sandbox", choices=["local", "isolated", "docker"])
    args = parser.parse_args()
    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}), prefect_test_harness(server_startup_timeout=60):
        main(args.task, args.reference or args.task.parent / "reference.diff", args.mutants, args.sandbox)
