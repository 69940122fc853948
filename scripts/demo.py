"""Grade the bundled examples: validate each task, then grade its reference, bad and empty patches.

Runs every command in one process so one Prefect server serves them all; the output is what
``gradeflow validate`` and ``gradeflow grade`` print.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from gradeflow.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(*args: str) -> int:
    print(f"\n$ gradeflow {' '.join(args)}", flush=True)
    code = main(list(args))
    print(f"(exit {code})", flush=True)
    return code


def demo() -> int:
    failures = []
    empty = Path(tempfile.mkdtemp()) / "empty.diff"
    empty.write_text("")
    for name in ("calc", "tidy", "perf"):
        folder = EXAMPLES / name
        task = str(folder / "task.yaml")
        expected = [
            (0, ("validate", task, "--reference", str(folder / "reference.diff"))),
            (0, ("grade", task, "--patch", str(folder / "reference.diff"), "--submission-id", "reference")),
            (1, ("grade", task, "--patch", str(folder / "bad.diff"), "--submission-id", "bad")),
            (1, ("grade", task, "--patch", str(empty), "--submission-id", "empty")),
        ]
        failures += [" ".join(args) for code, args in expected if _run(*args) != code]
    print("\ndemo: all examples graded as expected" if not failures else f"\ndemo: unexpected exit codes: {failures}")
    print(f"demo: gradeflow is in {Path(sys.executable).parent}, not on PATH: run `. .venv/bin/activate` to use it")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(demo())
