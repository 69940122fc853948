"""What gradeflow's local Prefect server costs per grade, its task run recorder batched and as Prefect ships it.

A grade's ten task runs reach the server as about thirty state events, which Prefect's task run recorder writes one
transaction each by default; gradeflow's local server batches them (``SERVER_SETTINGS`` in
``gradeflow/engine/local_server.py``). This script grades examples/calc's reference and bad patches in the isolated
sandbox, N at a time, against a local server started with gradeflow's settings and one started with Prefect's
defaults, in alternating blocks (A B A B ...), each block a process of its own (Prefect reads its settings once)
with its own server under a temporary ``GRADEFLOW_HOME``, and prints,
side by side, per grade: the wall time, the server's CPU (its process and children, read from ``/proc`` after it has
flushed), the grading process's CPU and its children's (the test runs).

    python bench/server_cpu.py [N] [BLOCKS]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_LOG_LEVEL", "ERROR")
os.environ.setdefault("GRADEFLOW_VARIED_RUN", "after")
os.environ.pop("PREFECT_API_URL", None)

from gradeflow import grade, load_task
from gradeflow.engine.local_server import SERVER_SETTINGS, stop_server, use_local_server
from gradeflow.logs import quiet_prefect

CALC = Path(__file__).resolve().parents[1] / "examples" / "calc"
PREFECT_DEFAULTS = {
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "1",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "5",
}
BATCHED, DEFAULTS = "batched (gradeflow)", "Prefect's defaults"
SIDES = {BATCHED: SERVER_SETTINGS, DEFAULTS: PREFECT_DEFAULTS}
SETTLE = 6.0
"""Seconds the server is left after a block before its CPU is read: both recorders have flushed by then."""


def _cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and every process under it (user + system, from ``/proc``)."""
    ticks = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = text[text.rindex(")") + 2 :].split()
            stats[int(entry)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        if current in stats:
            total += (int(stats[current][11]) + int(stats[current][12])) / ticks
        todo.extend(children.get(current, []))
    return total


def _block(settings: dict[str, str], n: int) -> dict[str, float]:
    """N grades against a fresh local server started with ``settings``: per-grade figures."""
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    os.environ["GRADEFLOW_HOME"] = tempfile.mkdtemp(prefix="gradeflow-bench-server-")
    os.environ.pop("PREFECT_API_URL", None)
    try:
        server = use_local_server()
        assert server is not None
        task = load_task(CALC / "task.yaml")
        grade(task, patch=CALC / "reference.diff")  # the baseline, outside the figures
        time.sleep(SETTLE)
        server_before, me_before = _cpu(server.pid), os.times()
        started = time.perf_counter()
        for i in range(n):
            grade(task, patch=CALC / ("reference.diff" if i % 2 == 0 else "bad.diff"))
        wall = time.perf_counter() - started
        time.sleep(SETTLE)
        server_cpu, me = _cpu(server.pid) - server_before, os.times()
        return {
            "wall": wall / n,
            "server": server_cpu / n,
            "grader": (me.user + me.system - me_before.user - me_before.system) / n,
            "tests": (me.children_user + me.children_system - me_before.children_user - me_before.children_system) / n,
        }
    finally:
        stop_server()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def main() -> None:
    if sys.argv[1:2] == ["--block"]:
        side, n = sys.argv[2], int(sys.argv[3])
        quiet_prefect()
        print(json.dumps(_block(SIDES[side], n)))
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in SIDES}
    for _ in range(blocks):
        for name in SIDES:
            out = subprocess.run(
                [sys.executable, __file__, "--block", name, str(n)], capture_output=True, text=True, check=True
            ).stdout
            figures[name].append(json.loads(out.strip().splitlines()[-1]))
    print(f"{n} grades of examples/calc per block, {blocks} blocks a side, medians per grade (seconds):")
    print(f"{'server':22} {'wall':>7} {'server CPU':>11} {'grader CPU':>11} {'tests CPU':>10}")
    medians = {}
    for name, rows in figures.items():
        medians[name] = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
        m = medians[name]
        print(f"{name:22} {m['wall']:7.3f} {m['server']:11.3f} {m['grader']:11.3f} {m['tests']:10.3f}")
    batched, default = medians[BATCHED], medians[DEFAULTS]
    whole = [sum(side[k] for k in ("server", "grader", "tests")) for side in (batched, default)]
    print(
        f"batched / defaults: wall {batched['wall'] / default['wall']:.2f}, "
        f"server CPU {batched['server'] / default['server']:.2f}, whole CPU {whole[0] / whole[1]:.2f}"
    )


if __name__ == "__main__":
    main()
