"""What a trial costs, side by side in one run: ``nop`` trials per minute at concurrency 1 and 2, and a
trial of a ``sed`` agent over a grade of the same diff.

On examples/calc in the isolated sandbox, against gradeflow's local Prefect server (the one ``gradeflow run``
starts and reuses) under a temporary ``GRADEFLOW_HOME``, after one grade that builds the baseline (every
figure after it finds the baseline cached):

- ``nop`` x N through ``run_trials`` (one ``run-trials`` flow run, a subflow per trial) into a fresh
  ledger, at concurrency 1 then 2: trials per minute of wall time;
- ``sed`` agent trial against ``grade(patch=the same diff)``, REPEAT times in turns: the medians and
  their ratio (what launching the agent adds: the checkout, the agent's sandbox, the artifact, the
  records).

    python bench/trials.py [N] [REPEAT]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gradeflow.agents import TrialConfig, plan_trials, run_trials
from gradeflow.api import grade
from gradeflow.engine.local_server import stop_server, use_local_server
from gradeflow.evaluation.ledger import Ledger
from gradeflow.spec import load_task

CALC = Path(__file__).resolve().parent.parent / "examples" / "calc" / "task.yaml"
FIX = 's/        return None/        raise ZeroDivisionError("division by zero is undefined")/'
DIFF = """\
--- a/src/calc.py
+++ b/src/calc.py
@@ -16,5 +16,5 @@ def multiply(a, b):
 def divide(a, b):
     \"\"\"Return a / b.\"\"\"
     if b == 0:
-        return None
+        raise ZeroDivisionError("division by zero is undefined")
     return a / b
"""


def _trials(folder: Path, agent: str, count: int, concurrency: int, name: str) -> float:
    """Seconds for ``count`` trials of ``agent`` at ``concurrency``, into a fresh ledger."""
    ledger = Ledger(str(folder / f"{name}.db"))
    plan = plan_trials([load_task(CALC)], TrialConfig(agent=agent, model_id=name), count)
    started = time.perf_counter()
    done = run_trials(plan, ledger, concurrency=concurrency, show_progress=False)
    seconds = time.perf_counter() - started
    ledger.close()
    assert done.ran == count and not done.failed, done.failed
    return seconds


def _grade_seconds() -> float:
    started = time.perf_counter()
    result = grade(CALC, patch=DIFF)
    assert result.passed, result.summary()
    return time.perf_counter() - started


def main(count: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        os.environ["GRADEFLOW_HOME"] = str(folder / "home")
        os.environ.pop("PREFECT_API_URL", None)
        use_local_server()
        try:
            _measure(folder, count, repeat)
        finally:
            stop_server()


def _measure(folder: Path, count: int, repeat: int) -> None:
    warm = _grade_seconds()
    print(f"first grade (builds the baseline): {warm:.2f} s")
    for concurrency in (1, 2):
        seconds = _trials(folder, "nop", count, concurrency, f"nop-c{concurrency}")
        print(f"nop x{count} at concurrency {concurrency}: {seconds:.2f} s, {60 * count / seconds:.1f} trials/min")
    trial, graded = [], []
    for turn in range(repeat):
        trial.append(_trials(folder, f"sed -i '{FIX}' src/calc.py", 1, 1, f"sed-{turn}"))
        graded.append(_grade_seconds())
    t, g = statistics.median(trial), statistics.median(graded)
    print(f"sed trial {t:.2f} s vs grade of the same diff {g:.2f} s (medians of {repeat}): x{t / g:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
