"""What a run pays for the task's environment: running ``setup`` itself versus copying what it built.

Before, each run of a grade (acceptance, test evidence on both sides, perf on both sides) ran the
task's ``setup`` in its own sandbox; now setup runs once per baseline and each run gets a copy. On a
small installable project with ``pip install -e .`` (offline), printed side by side in one run:

- **setup**: the setup command in a fresh local sandbox (what every run used to pay);
- **copy**: laying the captured workspace files over a fresh tree and importing ``HOME`` and the
  private environment into a fresh sandbox, paths rewritten (what every run pays now);
- **capture**: what building the environment adds once per baseline, beside the setup itself.

    python bench/task_environment.py [REPEAT]
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gradeflow.sandbox.local import LocalSandbox
from gradeflow.tasks._environment import capture_environment, import_environment, lay_workspace, tree_manifest

SETUP = "python -m pip install -q --no-index --no-deps --no-build-isolation -e ."
FILES = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
    '[project]\nname = "benchpkg"\nversion = "0.1.0"\n\n[tool.setuptools.packages.find]\nwhere = ["src"]\n',
    "src/benchpkg/__init__.py": "VALUE = 1\n",
    "tests/test_value.py": "from benchpkg import VALUE\n\n\ndef test_value():\n    assert VALUE == 1\n",
}


def _tree(root: Path) -> Path:
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def main(repeat: int) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="gradeflow-bench-env-"))
    pristine = _tree(scratch / "pristine")
    setup_times, copy_times, capture_times = [], [], []
    try:
        for round_ in range(repeat):
            work = scratch / f"base-{round_}"
            shutil.copytree(pristine, work)
            before = tree_manifest(work)
            with LocalSandbox(work) as box:
                started = time.perf_counter()
                assert box.run(SETUP, env={}, timeout=300).ok, "setup failed"
                setup_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                environment = capture_environment(box, before, scratch / f"env-{round_}")
                capture_times.append(time.perf_counter() - started)
            candidate = scratch / f"candidate-{round_}"
            shutil.copytree(pristine, candidate)
            with LocalSandbox(candidate) as box:
                started = time.perf_counter()
                lay_workspace(environment, candidate, pristine)
                import_environment(environment, box, candidate)
                copy_times.append(time.perf_counter() - started)
                check = box.run("python -m pytest -q -p no:cacheprovider", env={}, timeout=120)
                assert check.ok, check.stdout[-500:]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    setup, copy, capture = (statistics.median(t) for t in (setup_times, copy_times, capture_times))
    print(f"{'per run':<28}{'seconds (median of ' + str(repeat) + ')':>28}")
    print(f"{'setup in its own sandbox':<28}{setup:>28.3f}")
    print(f"{'copy of the environment':<28}{copy:>28.3f}")
    print(f"{'copy / setup':<28}{copy / setup:>28.2f}")
    print(f"{'once per baseline: capture':<28}{capture:>28.3f}  (setup + capture = {setup + capture:.3f})")
    print("A grade with test evidence and perf opens up to five sandboxes: before, five setups;")
    print(
        f"now one setup and five copies: {5 * setup:.2f} s -> {5 * copy:.2f} s per grade once the baseline is cached."
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
