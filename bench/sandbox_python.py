"""What a test run costs in a sandbox whose Python shows gradeflow's whole environment, and with the view it shows now.

A sandbox's ``python`` sees gradeflow's site-packages through a view without gradeflow and what only it needs
(:mod:`gradeflow.sandbox._host_packages`): pytest no longer finds the engine's pytest plugins (anyio's, Prefect's)
and loads them at every start. This script runs examples/calc's test command in one isolated sandbox (and one
local) with the view and with the whole site folder (the private environment's ``_host.pth`` rewritten to name
it, as it was before), alternating run by run, and prints per run: the wall time and the CPU of the command's
processes (user + system, from the children's resource usage), side by side, and their difference.

    python bench/sandbox_python.py [RUNS]
"""

from __future__ import annotations

import resource
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from gradeflow.sandbox._host_packages import site_folders, view_folder
from gradeflow.sandbox.isolated import IsolatedSandboxFactory
from gradeflow.sandbox.local import HOST_HOOK, LocalSandboxFactory

CALC = Path(__file__).resolve().parents[1] / "examples" / "calc"
COMMAND = "python -m pytest -q -p no:cacheprovider tests"


def _host_pth(sandbox: object) -> Path:
    python: Path = sandbox._python  # type: ignore[attr-defined]
    purelib = sysconfig.get_path("purelib", vars={"base": str(python), "platbase": str(python)})
    return Path(purelib) / "_host.pth"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _measure(factory: object, runs: int) -> dict[str, list[tuple[float, float]]]:
    figures: dict[str, list[tuple[float, float]]] = {"view": [], "whole": []}
    workspace = Path(tempfile.mkdtemp()) / "repo"
    shutil.copytree(CALC / "repo", workspace)
    with factory.open(workspace) as sandbox:  # type: ignore[attr-defined]
        pth = _host_pth(sandbox)
        views = {"view": HOST_HOOK, "whole": "".join(f"{f}\n" for f in site_folders())}
        for _ in range(runs):
            for side, text in views.items():
                pth.write_text(text)
                cpu, started = _children_cpu(), time.perf_counter()
                done = sandbox.run(COMMAND, env={}, timeout=120)
                wall = time.perf_counter() - started
                if done.exit_code not in (0, 1):
                    sys.exit(f"{side}: exit {done.exit_code}: {done.stderr[-400:]}")
                figures[side].append((wall, _children_cpu() - cpu))
    shutil.rmtree(workspace.parent, ignore_errors=True)
    return figures


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    view_folder()  # made once, before the first run
    print(f"examples/calc's tests, {runs} runs a side, alternating; medians per run")
    print(f"{'sandbox':10} {'side':6} {'wall s':>8} {'cpu s':>8}")
    for name, factory in (("isolated", IsolatedSandboxFactory()), ("local", LocalSandboxFactory())):
        figures = _measure(factory, runs)
        medians = {}
        for side, values in figures.items():
            medians[side] = (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
            print(f"{name:10} {side:6} {medians[side][0]:8.3f} {medians[side][1]:8.3f}")
        wall = medians["whole"][0] - medians["view"][0]
        cpu = medians["whole"][1] - medians["view"][1]
        ratio = medians["view"][0] / medians["whole"][0]
        print(f"{name:10} saved  {wall:8.3f} {cpu:8.3f}  (view / whole: wall {ratio:.2f}x)")


if __name__ == "__main__":
    main()
