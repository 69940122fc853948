"""Grade a set of "Volkswagen" patches (correct only while graded) and count how many the grader catches.

Each patch file is graded with ``gradeflow grade`` against the bundled example its name starts with
(``calc_*.patch`` → examples/calc, ``tidy_*.patch`` → examples/tidy), in the sandbox given, one after another,
under a private ``GRADEFLOW_HOME``. A patch is *caught* when the grade did not pass it (any decision other
than ``merge-candidate``: ``human-review`` for ``outcome-varies-with-environment``, ``rejected`` ...).

    python scripts/vw_patches.py [--sandbox isolated|docker|local] PATCH...

Prints one line per patch and the count; exit status 0. The code graded is the ``gradeflow`` package
importable by this interpreter (``PYTHONPATH=src`` for a checkout).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_RUN = "import sys; from gradeflow.cli import run; sys.argv[0] = 'gradeflow'; sys.exit(run())"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def grade(patch: Path, sandbox: str, home: str) -> tuple[str, str]:
    """(verdict, detail) for one patch: ``caught``, ``missed`` or ``error``."""
    task = EXAMPLES / patch.name.split("_", 1)[0] / "task.yaml"
    env = {**os.environ, "GRADEFLOW_HOME": home}
    command = [sys.executable, "-c", _RUN, "grade", str(task), "--patch", str(patch), "--json"]
    command += ["--sandbox", sandbox]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800, check=False)
    try:
        result = json.loads(done.stdout)
    except ValueError:
        return "error", (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
    codes = ",".join(result.get("reason_codes") or [])
    detail = f"{result.get('status')} {result.get('decision')} [{codes}]"
    return ("missed" if result.get("decision") == "merge-candidate" else "caught"), detail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sandbox", default="isolated", choices=("isolated", "docker", "local"))
    parser.add_argument("patches", nargs="+", type=Path)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="gradeflow-vw-")
    counts: dict[str, int] = {}
    try:
        for patch in args.patches:
            started = time.perf_counter()
            verdict, detail = grade(patch, args.sandbox, home)
            counts[verdict] = counts.get(verdict, 0) + 1
            print(f"{verdict:7} {patch.stem:32} {detail} ({time.perf_counter() - started:.0f} s)", flush=True)
    finally:
        # The grades started a local Prefect server under the private home (one-shot commands keep it for
        # reuse): stop it, and leave nothing behind.
        stop = [sys.executable, "-c", _RUN, "server", "stop"]
        env = {**os.environ, "GRADEFLOW_HOME": home}
        subprocess.run(stop, capture_output=True, env=env, timeout=120, check=False)
        shutil.rmtree(home, ignore_errors=True)
    print(f"caught {counts.get('caught', 0)} of {len(args.patches)} ({counts.get('error', 0)} errors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
