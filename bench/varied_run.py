"""What the varied re-run adds to the tests step of a passing grade, in one run, side by side.

For each example (examples/calc: a bugfix whose two fail_to_pass tests are run again; examples/tidy: a
refactor whose five pass_to_pass tests are) with its reference patch, alternates N times, in the same
process and the local sandbox:

- **main run only**: the tests step (``run_tests.fn``) with the varied re-run left out;
- **varied run after**: the tests step with the varied run started once the main run passed
  (``GRADEFLOW_VARIED_RUN=after``: the passed tests again, each call in a forked child with pytest's marks off
  the process, on a fresh sealed copy);
- **varied run beside**: the same varied run started beside the main run (``GRADEFLOW_VARIED_RUN=beside``).

Each line after the means is what the varied run adds over the main run only, in seconds and as a ratio (a
candidate whose required tests fail gets no varied run after the main run; beside it, one left unread).

    python bench/varied_run.py [N]          (GRADEFLOW_BENCH_SANDBOX=isolated: in the isolated sandbox)
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_HOME", tempfile.mkdtemp(prefix="gradeflow-bench-"))

from _steps import alternated, prepared

from gradeflow.logs import quiet_prefect
from gradeflow.tasks import tests

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _no_varied_run(*_args: object) -> None:
    return None


def bench(example: str, n: int) -> None:
    real = tests.varied_run
    with prepared(EXAMPLES / example) as ready:
        task, snap, base, factory = ready.task, ready.snap, ready.base, ready.factory

        def main_only() -> bool:
            tests.varied_run = _no_varied_run  # type: ignore[assignment]
            try:
                outcome = tests.run_tests.fn(task, snap, base, factory)
            finally:
                tests.varied_run = real
            return outcome.component.passed and outcome.evidence.varied is None

        def with_varied(when: str) -> Callable[[], bool]:
            def step() -> bool:
                os.environ["GRADEFLOW_VARIED_RUN"] = when
                outcome = tests.run_tests.fn(task, snap, base, factory)
                varied = outcome.evidence.varied
                passed = varied is not None and set(varied.outcomes.values()) == {"passed"}
                return outcome.component.passed and passed

            return step

        print(f"{example}:")
        steps: dict[str, Callable[[], bool]] = {
            "main run only": main_only,
            "varied run after": with_varied("after"),
            "varied run beside": with_varied("beside"),
        }
        mean = alternated(steps, n, example, indent="  ", width=17)
    for label in ("varied run after", "varied run beside"):
        added = mean[label] - mean["main run only"]
        ratio = mean[label] / mean["main run only"]
        print(f"  {label}: adds {added:+.3f} s to a passing grade's tests step ({ratio:.2f}x)")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    quiet_prefect()
    for example in ("calc", "tidy"):
        bench(example, n)


if __name__ == "__main__":
    main()
