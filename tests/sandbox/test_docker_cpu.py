"""The docker sandbox says how much CPU each command used and whether ``environment.cpus`` held it back.

The meters first against cgroup trees and engines made up here, then against the real engine, read both ways
(this host's cgroup files, and the engine's stats where the files are out of reach). CI is a busy 2-core
machine: a held-back command is three busy processes for two seconds under 0.2 CPUs (over 20 periods in which
any one throttling counts), and nothing is asserted about wall-clock time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from gradeflow.models import EnvironmentSpec
from gradeflow.sandbox import DockerSandbox, DockerSandboxFactory, _docker_cpu
from gradeflow.sandbox._docker_cpu import CpuSample, EngineStats, HostFiles, command_cpu, cpu_meter

ID = "c0ffee" * 10 + "beef"
BUSY = "python3 -c 'import time\nt = time.time()\nwhile time.time() - t < 2: pass'"
"""One process busy for two seconds of wall time."""


class _Engine:
    """An engine API answering ``info`` and ``stats`` with what it is given (an exception is raised)."""

    def __init__(self, driver: str = "cgroupfs", version: str = "2", stats: Any = None) -> None:
        self.base_url = f"http+docker://{driver}-{version}-{id(self)}"
        self.driver, self.version, self.stats_answer = driver, version, stats
        self.stats_calls = 0

    def info(self) -> dict[str, str]:
        return {"CgroupDriver": self.driver, "CgroupVersion": self.version}

    def stats(self, container: str, *, stream: bool, one_shot: bool) -> Any:
        assert (container, stream, one_shot) == (ID, False, True)
        self.stats_calls += 1
        if isinstance(self.stats_answer, Exception):
            raise self.stats_answer
        return self.stats_answer


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def cgroups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cgroup"
    root.mkdir()
    monkeypatch.setattr(_docker_cpu, "CGROUP_ROOT", root)
    return root


@pytest.mark.parametrize(
    ("driver", "leaf"), [("systemd", f"system.slice/docker-{ID}.scope"), ("cgroupfs", f"docker/{ID}")]
)
def test_the_container_cgroup_v2_files_are_read_on_this_host(cgroups: Path, driver: str, leaf: str) -> None:
    _write(cgroups / leaf / "cpu.stat", "usage_usec 1500000\nuser_usec 1000000\nnr_periods 40\nnr_throttled 3\n")
    engine = _Engine(driver, "2", stats=RuntimeError("the stats API is not asked"))
    meter = cpu_meter(engine, ID)
    assert isinstance(meter, HostFiles) and meter.read() == CpuSample(throttled=3, usage_ns=1_500_000_000)


def test_cgroup_v1_reads_cpu_and_cpuacct_also_mounted_together(cgroups: Path) -> None:
    _write(cgroups / "cpu,cpuacct" / "docker" / ID / "cpu.stat", "nr_periods 9\nnr_throttled 2\nthrottled_time 7\n")
    _write(cgroups / "cpu,cpuacct" / "docker" / ID / "cpuacct.usage", "250000000\n")
    (cgroups / "cpu").symlink_to("cpu,cpuacct")
    (cgroups / "cpuacct").symlink_to("cpu,cpuacct")
    meter = cpu_meter(_Engine("cgroupfs", "1"), ID)
    assert isinstance(meter, HostFiles) and meter.read() == CpuSample(throttled=2, usage_ns=250_000_000)


def test_without_the_files_the_engine_stats_are_read_and_a_failing_engine_is_asked_once(cgroups: Path) -> None:
    stats = {"cpu_stats": {"cpu_usage": {"total_usage": 42}, "throttling_data": {"throttled_periods": 5}}}
    engine = _Engine("systemd", "2", stats=stats)
    meter = cpu_meter(engine, ID)  # no such cgroup here: a remote, rootless or re-parented engine
    assert isinstance(meter, EngineStats) and meter.read() == CpuSample(throttled=5, usage_ns=42)
    engine.stats_answer = requests.exceptions.ConnectionError("gone")
    assert meter.read() is None and meter.read() is None
    assert engine.stats_calls == 2
    assert isinstance(cpu_meter(_Engine("none", "1", stats=stats), ID), EngineStats)


def test_the_difference_of_two_readings_is_the_command_s() -> None:
    before = CpuSample(throttled=4, usage_ns=1_000_000_000)
    assert command_cpu(before, CpuSample(throttled=4, usage_ns=1_250_000_000)) == (False, 0.25)
    assert command_cpu(before, CpuSample(throttled=5, usage_ns=None)) == (True, None)
    assert command_cpu(None, before) == (False, None) and command_cpu(before, None) == (False, None)


def _open(workspace: Path, cpus: float) -> DockerSandbox:
    workspace.mkdir(exist_ok=True)
    (workspace / "given.txt").write_text("from the grader\n")
    return DockerSandboxFactory(EnvironmentSpec(sandbox="docker", memory="256m", pids=64, cpus=cpus)).open(workspace)


@pytest.fixture(params=["host files", "engine stats"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Read the counters from this host's cgroup files (this machine's engine is local), or from the engine's
    stats as where they are out of reach."""
    if request.param == "engine stats":
        monkeypatch.setattr(_docker_cpu, "CGROUP_ROOT", tmp_path / "elsewhere")
    return str(request.param)


def _meter_kind(box: DockerSandbox) -> str:
    return {HostFiles: "host files", EngineStats: "engine stats"}[type(box._meter)]


@pytest.mark.docker
@pytest.mark.slow
def test_busy_processes_over_a_small_quota_are_held_back(
    way: str, tmp_path: Path, docker_client: Any, no_leftovers: None
) -> None:
    del docker_client, no_leftovers
    box = _open(tmp_path / "ws", cpus=0.2)
    with box:
        result = box.run(f"{BUSY} & {BUSY} & {BUSY} & wait", env={}, timeout=60)
        assert _meter_kind(box) == way
    assert result.exit_code == 0, result.stderr
    assert result.cpu_throttled
    assert result.cpu_seconds is not None and result.cpu_seconds > 0


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("command", ["sleep 0.2", "true"])
def test_an_idle_command_under_a_generous_quota_is_not_held_back(
    way: str, command: str, tmp_path: Path, docker_client: Any, no_leftovers: None
) -> None:
    del docker_client, no_leftovers
    box = _open(tmp_path / "ws", cpus=1.0)
    with box:
        result = box.run(command, env={}, timeout=30)
        assert _meter_kind(box) == way
    assert result.exit_code == 0, result.stderr
    assert not result.cpu_throttled
    assert result.cpu_seconds is not None and result.cpu_seconds < 1  # the exec's start-up, no busy process


@pytest.mark.docker
@pytest.mark.slow
def test_neither_way_leaves_the_figures_unknown_and_the_command_runs(
    tmp_path: Path, docker_client: Any, no_leftovers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    del docker_client, no_leftovers
    monkeypatch.setattr(_docker_cpu, "CGROUP_ROOT", tmp_path / "elsewhere")
    monkeypatch.setattr(EngineStats, "read", lambda self: None)
    with _open(tmp_path / "ws", cpus=0.2) as box:
        result = box.run(f"{BUSY} & wait; cat given.txt", env={}, timeout=60)
    assert (result.exit_code, result.stdout) == (0, "from the grader\n"), result.stderr
    assert (result.cpu_throttled, result.cpu_seconds) == (False, None)


@pytest.mark.docker
@pytest.mark.slow
def test_a_grade_says_when_its_test_command_was_held_to_its_cpus(
    tmp_path: Path, docker_client: Any, prefect: None, no_leftovers: None
) -> None:
    from gradeflow import grade
    from gradeflow.models import TaskSpec

    del docker_client, prefect, no_leftovers
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    loop = "import time\\nt = time.time()\\nwhile time.time() - t < 2: pass"
    test = (
        "import subprocess, sys\n\n\ndef test_add():\n    from calc import add\n\n"
        f"    busy = [subprocess.Popen([sys.executable, '-c', '{loop}']) for _ in range(3)]\n"
        "    assert [p.wait() for p in busy] == [0, 0, 0]\n    assert add(1, 2) == 3\n"
    )
    (repo / "tests" / "test_calc.py").write_text(test)
    spec = {
        "task_id": "busy",
        "type": "bugfix",
        "repo": str(repo),
        "environment": {"sandbox": "docker", "memory": "256m", "pids": 64, "cpus": 0.2},
        "tests": {
            "command": "PYTHONPATH=. python -m pytest -q -p no:cacheprovider --junitxml={junit}",
            "pass_to_pass": ["tests/test_calc.py::test_add"],
            "varied_run": False,
        },
    }
    result = grade(TaskSpec.model_validate(spec), patch="", sandbox="docker")
    tests = result.component("tests")
    assert tests.passed and tests.details.get("cpu_throttled") is True, tests.messages
    assert any("environment.cpus (0.2)" in m for m in tests.messages)
