"""What a JUnit report of N testcases costs the grader, beside the raw work of writing and reading it.

A throwaway bugfix task whose test command (a small Python script, run in the local sandbox) writes a
report of N testcases: 1,000 names repeated over N/1,000 modules, one failure in 50, the task's
fail_to_pass test failing on the base and passing with the patch. In one run, on this machine:

- **raw write**: the test command itself, run directly (what any grader pays);
- **raw read**: ``xml.etree.ElementTree`` parsing that report and visiting every testcase;
- **parse + match**: gradeflow's :func:`~gradeflow.tasks._junit.parse_junit` and
  :func:`~gradeflow.tasks._junit.outcomes_for` for the task's ids, with their peak traced memory;
- **grade**: one whole grade (``gradeflow.grade``, local sandbox, cold baseline: the base run and the
  candidate run both write and read a report), in a child process after a warm-up grade of a tiny
  report (which starts Prefect's server): wall time, the seconds of each step, and the child's peak
  resident memory before and after.

    python bench/junit_scale.py [N]        (default N=100000)
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

WRITER = """import sys
path, count, fixed = sys.argv[1], int(sys.argv[2]), "ZeroDivisionError" in open("src/calc.py").read()
with open(path, "w") as out:
    out.write('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">')
    div = "" if fixed else '<failure message="assert None">trace</failure>'
    out.write(f'<testcase classname="tests.test_calc" name="test_div" file="tests/test_calc.py">{div}</testcase>')
    for i in range(count):
        m, n = divmod(i, 1000)
        body = '<failure message="assert 1 == 2">trace\\nmore</failure>' if i % 50 == 1 else ""
        out.write(f'<testcase classname="tests.test_m{m}" name="test_{n}" file="tests/test_m{m}.py" time="0.001">'
                  f"{body}</testcase>")
    out.write("</testsuite></testsuites>")
sys.exit(0 if fixed else 1)
"""
BUG = "def divide(a, b):\n    return a / b if b else None\n"
FIX = "def divide(a, b):\n    if b == 0:\n        raise ZeroDivisionError('no')\n    return a / b\n"


def make_task(folder: Path, count: int) -> Path:
    """The repository and task.yaml of a task whose report has ``count`` testcases besides test_div."""
    repo = folder / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src" / "calc.py").write_text(BUG)
    (repo / "tests" / "test_calc.py").write_text("def test_div(): ...\n")
    (repo / "write_report.py").write_text(WRITER)
    names = sorted({0, min(500, count - 1), min(998, count - 1)})
    ids = [f"tests/test_m{m}.py::test_{n}" for m in range(0, max(count // 1000, 1), 7) for n in names]
    spec = {
        "task_id": f"junit-scale-{count}",
        "type": "bugfix",
        "repo": "./repo",
        "tests": {
            "command": f"python write_report.py {{junit}} {count}",
            "fail_to_pass": ["tests/test_calc.py::test_div"],
            "pass_to_pass": ids,
        },
    }
    (folder / "task.yaml").write_text(json.dumps(spec))
    return folder / "task.yaml"


def patch() -> str:
    old, new = BUG.splitlines(), FIX.splitlines()
    lines = [f"-{line}" for line in old] + [f"+{line}" for line in new]
    header = "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n"
    header += f"@@ -1,{len(old)} +1,{len(new)} @@\n"
    return header + "\n".join(lines) + "\n"


def raw_work(count: int) -> dict[str, float]:
    """Seconds to write the candidate's report with the task's own command, and to read it with ElementTree."""
    from gradeflow.tasks._junit import outcomes_for, parse_junit

    with tempfile.TemporaryDirectory(prefix="gradeflow-bench-") as folder:
        task_file = make_task(Path(folder), count)
        repo, report = Path(folder) / "repo", Path(folder) / "junit.xml"
        (repo / "src" / "calc.py").write_text(FIX)
        started = time.perf_counter()
        subprocess.run([sys.executable, "write_report.py", str(report), str(count)], cwd=repo, check=True)
        write = time.perf_counter() - started
        data = report.read_bytes()
        started = time.perf_counter()
        cases = sum(1 for _ in ET.fromstring(data).iter("testcase"))
        read = time.perf_counter() - started
        ids = json.loads(task_file.read_text())["tests"]["pass_to_pass"]
        started = time.perf_counter()
        outcomes = outcomes_for(ids, parse_junit(data))
        ours = time.perf_counter() - started
        tracemalloc.start()  # a second pass: tracing slows allocation down several times
        outcomes_for(ids, parse_junit(data))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert cases == count + 1 and len(outcomes) == len(ids)
    return {"bytes": len(data), "write": write, "read": read, "parse_match": ours, "parse_match_mb": peak / 1e6}


def child(count: int) -> None:
    """One warm-up grade, then the measured one; prints a JSON line."""
    from gradeflow import grade
    from gradeflow.logs import quiet_prefect

    quiet_prefect()
    os.environ["GRADEFLOW_HOME"] = tempfile.mkdtemp(prefix="gradeflow-bench-home-")
    with tempfile.TemporaryDirectory(prefix="gradeflow-bench-") as folder:
        warm = grade(make_task(Path(folder) / "warm", 10), patch=patch(), sandbox="local")
        assert warm.passed, warm.summary()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        started = time.perf_counter()
        result = grade(make_task(Path(folder) / "measured", count), patch=patch(), sandbox="local")
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert result.passed, result.summary()
    print(json.dumps({"wall": wall, "rss_before_mb": before, "rss_peak_mb": after, "timings": result.timings}))


def main(count: int) -> None:
    raw = raw_work(count)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(count)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        sys.exit(f"the grade failed:\n{proc.stderr[-3000:]}")
    graded = json.loads(proc.stdout.strip().splitlines()[-1])
    load = os.getloadavg()[0]
    rows = [
        f"report: {count + 1} testcases, {raw['bytes'] / 1e6:.1f} MB (load average {load:.1f}, {os.cpu_count()} CPUs)",
        f"  raw write (the test command alone)      {raw['write']:7.2f} s",
        f"  raw read (ElementTree, every testcase)  {raw['read']:7.2f} s",
        f"  gradeflow parse + match                 {raw['parse_match']:7.2f} s, {raw['parse_match_mb']:.0f} MB traced",
        "grade (cold baseline: base and candidate each write and read the report)",
        f"  wall                                    {graded['wall']:7.2f} s",
        "  steps (s): " + ", ".join(f"{k} {v:.1f}" for k, v in graded["timings"].items()),
        f"  peak RSS of the grading process         {graded['rss_peak_mb']:7.0f} MB"
        f" (warm, before the grade: {graded['rss_before_mb']:.0f} MB)",
        f"  grade / raw (write + read, both runs)   {graded['wall'] / (2 * (raw['write'] + raw['read'])):7.1f} x",
    ]
    print("\n".join(rows))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(int(sys.argv[2]))
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
