"""How much the docker sandbox adds to one warm grade, compared with the local sandbox.

Grades examples/calc's reference patch N times under each sandbox through the ``grade-submission``
flow, after one warm-up grade per sandbox (which starts the Prefect server and caches that sandbox's
baseline, and probes the image once), then prints the mean and minimum seconds per grade, the mean
seconds of the tests step (the only step that opens a container on this example) and the difference.

Then the cost of reading each command's CPU counters (``cpu_throttled``, ``cpu_seconds``): ``true`` run M times
in one container, each time with the counters read from this host's cgroup files, from the engine's stats
(where the files are out of reach) and not at all, interleaved, with the medians side by side; and one reading
of each way.

    python bench/docker_overhead.py [N] [M]      (default N=5, M=20; target: docker adds <= 1.5 s per grade)
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_HOME", tempfile.mkdtemp(prefix="gradeflow-bench-"))

from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

from gradeflow.api import make_submission
from gradeflow.flows.grade import grade_submission
from gradeflow.logs import quiet_prefect
from gradeflow.models import EnvironmentSpec, GradeResult, Submission, TaskSpec
from gradeflow.sandbox import DockerSandbox, DockerSandboxFactory
from gradeflow.sandbox._docker_cpu import CpuMeter, CpuSample, EngineStats, HostFiles
from gradeflow.spec import load_task

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "calc"
TARGET = 1.5


def _grade(task: TaskSpec, submission: Submission, sandbox: str) -> GradeResult:
    result = grade_submission(task, submission, sandbox=sandbox)
    assert isinstance(result, GradeResult) and result.passed, getattr(result, "summary", lambda: result)()
    return result


def _measure(task: TaskSpec, submission: Submission, sandbox: str, n: int) -> tuple[list[float], list[float]]:
    """Seconds per grade and seconds of the tests step, over ``n`` warm grades."""
    _grade(task, submission, sandbox)
    totals, steps = [], []
    for _ in range(n):
        started = time.perf_counter()
        result = _grade(task, submission, sandbox)
        totals.append(time.perf_counter() - started)
        steps.append(result.timings.get("tests", 0.0))
    print(
        f"{sandbox:>7}: mean {statistics.mean(totals):.3f} s  min {min(totals):.3f} s  "
        f"tests step {statistics.mean(steps):.3f} s  (n={n})"
    )
    return totals, steps


class _Unread:
    """No reading: the sandbox as it was before it reported CPU."""

    def read(self) -> CpuSample | None:
        return None


def _per_command(box: DockerSandbox, meters: dict[str, CpuMeter], m: int) -> dict[str, float]:
    """Median seconds of ``true`` under each meter (the sandbox's private ``_meter`` swapped), interleaved."""
    seconds: dict[str, list[float]] = {name: [] for name in meters}
    for _ in range(m):
        for name, meter in meters.items():
            box._meter = meter
            started = time.perf_counter()
            assert box.run("true", env={}, timeout=30).ok
            seconds[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in seconds.items()}


def _one_reading(meter: CpuMeter, times: int, pause: float = 0.0) -> float:
    """Median seconds of one reading, ``pause`` seconds after the previous one."""
    seconds = []
    for _ in range(times):
        time.sleep(pause)
        started = time.perf_counter()
        meter.read()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def cpu_reading(m: int) -> None:
    """Print what reading a command's CPU counters adds per command, each way beside not reading them."""
    workspace = Path(tempfile.mkdtemp(prefix="gradeflow-bench-ws-"))
    try:
        box = DockerSandboxFactory(EnvironmentSpec(sandbox="docker")).open(workspace)
        with box:
            files = box._meter
            if not isinstance(files, HostFiles):
                print(f"cpu counters: this host does not reach the container's cgroup files ({type(files).__name__})")
                return
            stats = EngineStats(box._client.api, box._container.id)
            per = _per_command(box, {"not read": _Unread(), "host files": files, "engine stats": stats}, m)
            reading = (_one_reading(files, 1000), _one_reading(stats, 5, 1.5), _one_reading(stats, 5))
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    base = per["not read"]
    print(
        f"cpu counters, per `true` (median of {m}, interleaved): not read {base:.3f} s, "
        f"host files {per['host files']:.3f} s ({per['host files'] - base:+.4f} s), "
        f"engine stats {per['engine stats']:.3f} s ({per['engine stats'] - base:+.3f} s)"
    )
    print(
        f"one reading: host files {reading[0] * 1e6:.0f} us; engine stats {reading[1] * 1e3:.1f} ms after an idle "
        f"second, {reading[2] * 1e3:.0f} ms back to back ({reading[1] / reading[0]:.0f}x and "
        f"{reading[2] / reading[0]:.0f}x the files)"
    )


def main(n: int, m: int) -> int:
    quiet_prefect()
    task = load_task(EXAMPLE / "task.yaml")
    submission = make_submission(patch=EXAMPLE / "reference.diff", submission_id="bench")
    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        local, local_steps = _measure(task, submission, "local", n)
        docker, docker_steps = _measure(task, submission, "docker", n)
    added = statistics.mean(docker) - statistics.mean(local)
    step = statistics.mean(docker_steps) - statistics.mean(local_steps)
    print(
        f"docker adds {added:+.3f} s per grade (tests step {step:+.3f} s); "
        f"target <= {TARGET} s: {'met' if added <= TARGET else 'MISSED'}"
    )
    cpu_reading(m)
    return 0 if added <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, int(sys.argv[2]) if len(sys.argv) > 2 else 20))
