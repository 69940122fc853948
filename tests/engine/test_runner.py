"""The warm runner, through the real ``gradeflow`` entry point: the same results, exit codes and messages as
in-process; the caller's descriptors, folder, environment (Prefect's settings too) and umask; calls at once;
signals passed on; a caller that dies takes its child with it; a stale, idle or homeless runner goes.

The suite runs everything in-process (``GRADEFLOW_RUNNER=off`` in ``tests/conftest.py``); these tests turn
the runner on for their own calls and stop every runner they started. Grades share the session's home (its
local Prefect server and calc's cached baseline); the tests of a runner's life use homes of their own.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gradeflow.engine.local_server import stop_server
from gradeflow.engine.runner import serve
from gradeflow.engine.runner_client import idle_seconds, live_runners, runner_enabled, stop_runners, through_runner
from gradeflow.errors import SpecError

pytestmark = pytest.mark.slow
CALC = Path(__file__).resolve().parents[2] / "examples" / "calc"
GRADEFLOW = [sys.executable, "-m", "gradeflow.cli"]
WAIT = 120.0


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    return {**env, "GRADEFLOW_HOME": str(home), "GRADEFLOW_RUNNER": "on", **extra}


def _gradeflow(
    home: Path,
    *args: str,
    extra: dict[str, str] | None = None,
    cwd: Path | None = None,
    input: str | None = None,
    umask: int = -1,
) -> subprocess.CompletedProcess[str]:
    """``gradeflow ARGS`` as a user runs it (the executable's entry point), the runner on unless ``extra`` says."""
    env = _env(home, **(extra or {}))
    return subprocess.run(
        [*GRADEFLOW, *args], capture_output=True, text=True, timeout=600, env=env, cwd=cwd, input=input, umask=umask
    )


def _calls(home: Path) -> dict[int, int | None]:
    """The calls the home's runners took, from their log: child pid -> exit code (``None`` while it runs)."""
    log = home / "runner" / "runner.log"
    found: dict[int, int | None] = {}
    for pid, exited in re.findall(
        r"call (\d+): \S+(?: exited (-?\d+))?$", log.read_text() if log.exists() else "", re.M
    ):
        found[int(pid)] = int(exited) if exited else found.get(int(pid))
    return found


def _since(home: Path, before: dict[int, int | None]) -> list[int | None]:
    """The exit codes of the calls the home's runners took after ``before``, in order."""
    return [code for pid, code in _calls(home).items() if pid not in before]


def _eventually(check: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {WAIT:g} s: {what}")


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie not yet reaped by its parent counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[-1].startswith("Z")
    except OSError:
        return True


def _stop_all(home: Path) -> None:
    folder = home / "runner"
    if not folder.is_dir():
        return
    runners = live_runners(folder)
    stop_runners(runners)
    pids = [runner.pid for runner in runners]
    _eventually(lambda: all(_gone(pid) for pid in pids), f"runners {pids} exit")


@pytest.fixture
def session_home(gradeflow_home: Path) -> Iterator[Path]:
    """The session's home (its local Prefect server, calc's baseline); the runners started here stop after."""
    try:
        yield gradeflow_home
    finally:
        _stop_all(gradeflow_home)


@pytest.fixture
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home of the test's own; its runners, and the local Prefect server a first grade starts, stop after."""
    home = tmp_path / "home"
    try:
        yield home
    finally:
        _stop_all(home)
        monkeypatch.setenv("GRADEFLOW_HOME", str(home))
        stop_server()


def _without_timings(payload: str) -> dict[str, object]:
    """The result without what the machine's load decides: the timings, and whether the CPU quota held a run
    back (CI's busy cores throttled one of two identical grades)."""
    result = json.loads(payload)
    result.pop("timings")
    for component in result["components"]:
        if component["details"].pop("cpu_throttled", None):
            component["messages"] = [m for m in component["messages"] if "environment.cpus" not in m]
    return dict(result)


def test_a_grade_through_the_runner_is_the_grade_in_process(session_home: Path, tmp_path: Path) -> None:
    """Patch on stdin, JSON on stdout, ``--out`` relative to the caller's folder under the caller's umask."""
    diff = (CALC / "reference.diff").read_text()
    args = ("grade", str(CALC / "task.yaml"), "--patch", "/dev/stdin", "--json", "--out", "out/result.json")
    (tmp_path / "warm").mkdir()
    # In-process first: both grades then read the same cached baseline, whoever built it. The umask is the
    # same for both (the sandbox reads what the grade writes), and not the test process's (022).
    off = {"GRADEFLOW_RUNNER": "off"}
    cold = _gradeflow(session_home, *args, input=diff, cwd=tmp_path, extra=off, umask=0o002)
    before = _calls(session_home)
    warm = _gradeflow(session_home, *args, input=diff, cwd=tmp_path / "warm", umask=0o002)
    assert (warm.returncode, cold.returncode) == (0, 0), warm.stderr + cold.stderr
    assert _without_timings(warm.stdout) == _without_timings(cold.stdout)
    assert _without_timings((tmp_path / "warm" / "out" / "result.json").read_text()) == _without_timings(cold.stdout)
    assert (tmp_path / "warm" / "out" / "result.json").stat().st_mode & 0o777 == 0o664
    assert _since(session_home, before) == [0]  # the warm call went through the runner, the other did not


def test_bad_input_keeps_its_exit_code_and_one_line(session_home: Path, tmp_path: Path) -> None:
    args = ("grade", "missing/task.yaml", "--patch", "fix.diff")
    before = _calls(session_home)
    warm = _gradeflow(session_home, *args, cwd=tmp_path)
    cold = _gradeflow(session_home, *args, cwd=tmp_path, extra={"GRADEFLOW_RUNNER": "off"})
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert warm.returncode == 2 and warm.stderr == "gradeflow: error: missing/task.yaml: task spec not found\n"
    assert _since(session_home, before) == [2]


def test_the_child_sees_the_callers_environment_call_by_call(session_home: Path) -> None:
    args = ("grade", str(CALC / "task.yaml"), "--patch", str(CALC / "reference.diff"))
    before = _calls(session_home)
    first = _gradeflow(session_home, *args, extra={"GRADEFLOW_VARIED_RUN": "sometimes"})
    second = _gradeflow(session_home, *args, extra={"GRADEFLOW_VARIED_RUN": "never"})
    assert first.returncode == second.returncode == 2
    assert "GRADEFLOW_VARIED_RUN: 'sometimes' is not one of" in first.stderr
    assert "GRADEFLOW_VARIED_RUN: 'never' is not one of" in second.stderr
    assert _since(session_home, before) == [2, 2]


def test_prefects_settings_come_from_the_callers_environment(session_home: Path, tmp_path: Path) -> None:
    """The runner imported Prefect without these; the call's server, retries and home are the ones it names
    (Prefect makes its home when it reads its settings)."""
    home = tmp_path / "prefect-home"
    dead = {"PREFECT_API_URL": "http://127.0.0.1:9/api", "PREFECT_CLIENT_MAX_RETRIES": "0", "PREFECT_HOME": str(home)}
    before = _calls(session_home)
    done = _gradeflow(
        session_home, "grade", str(CALC / "task.yaml"), "--patch", str(CALC / "reference.diff"), extra=dead
    )
    assert done.returncode == 1 and "Failed to reach API at http://127.0.0.1:9/api/" in done.stderr, done.stderr
    assert home.is_dir()
    assert _since(session_home, before) == [1]


def _waiting_grade(home: Path) -> tuple[subprocess.Popen[str], int]:
    """A grade reading its patch from a pipe left open (so its child waits), and that child's pid."""
    before = set(_calls(home))
    command = [*GRADEFLOW, "grade", str(CALC / "task.yaml"), "--patch", "/dev/stdin"]
    client = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home)
    )
    _eventually(lambda: set(_calls(home)) - before, "the runner forks the call's child")
    [child] = set(_calls(home)) - before
    return client, child


def test_two_calls_run_at_once(session_home: Path) -> None:
    waiting, child = _waiting_grade(session_home)
    other = _gradeflow(session_home, "grade", "missing.yaml", "--patch", "x")
    assert other.returncode == 2 and _calls(session_home)[child] is None  # answered while the first still runs
    out, err = waiting.communicate((CALC / "reference.diff").read_text(), timeout=600)
    assert waiting.returncode == 0 and out.startswith("PASS 1.000"), err


def test_ctrl_c_and_sigterm_reach_the_child(session_home: Path) -> None:
    interrupted, child = _waiting_grade(session_home)
    interrupted.send_signal(signal.SIGINT)
    _, err = interrupted.communicate(timeout=WAIT)
    assert (interrupted.returncode, err) == (130, "gradeflow: interrupted\n")
    assert _calls(session_home)[child] == 130
    terminated, child = _waiting_grade(session_home)
    terminated.send_signal(signal.SIGTERM)
    terminated.communicate(timeout=WAIT)
    assert terminated.returncode == -signal.SIGTERM  # as an in-process call killed by SIGTERM
    _eventually(lambda: _calls(session_home)[child] == -signal.SIGTERM, "the child's end is logged")


def test_a_client_killed_mid_call_leaves_no_child(session_home: Path) -> None:
    client, child = _waiting_grade(session_home)
    client.kill()
    client.wait(timeout=WAIT)
    _eventually(lambda: _gone(child), f"the killed client's child {child} ends")
    assert _calls(session_home)[child] == 130  # interrupted, then reaped by the runner


def test_a_runner_killed_mid_call_fails_the_call_and_takes_its_child(own_home: Path) -> None:
    client, child = _waiting_grade(own_home)
    [runner] = live_runners(own_home / "runner")
    os.kill(runner.pid, signal.SIGKILL)
    _, err = client.communicate(timeout=WAIT)
    assert client.returncode == 3
    assert (
        err == f"gradeflow: error: the warm runner ended while it ran the command; see {own_home}/runner/runner.log\n"
    )
    _eventually(lambda: _gone(child), f"the killed runner's child {child} ends")


def test_a_stale_runner_is_replaced(own_home: Path) -> None:
    assert _gradeflow(own_home, "grade", "missing.yaml", "--patch", "x").returncode == 2
    [old] = live_runners(own_home / "runner")
    # PYTHON* variables are part of the code key (an interpreter reads them as it starts): another runner.
    seed = {"PYTHONHASHSEED": "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"}
    assert _gradeflow(own_home, "grade", "missing.yaml", "--patch", "x", extra=seed).returncode == 2
    _eventually(lambda: _gone(old.pid), "the stale runner exits")
    [new] = live_runners(own_home / "runner")
    assert new.key != old.key and not (own_home / "runner" / f"{old.key}.sock").exists()
    status = _gradeflow(own_home, "runner", "status")
    assert status.returncode == 0 and f"runner {new.pid} (code {new.key})" in status.stdout


def test_runner_stop_and_status(own_home: Path) -> None:
    assert _gradeflow(own_home, "runner", "status").returncode == 1
    assert _gradeflow(own_home, "grade", "missing.yaml", "--patch", "x").returncode == 2
    [runner] = live_runners(own_home / "runner")
    stopped = _gradeflow(own_home, "runner", "stop")
    assert stopped.returncode == 0 and stopped.stdout.startswith(f"stopped: runner {runner.pid}")
    _eventually(lambda: _gone(runner.pid), "the stopped runner exits")
    assert _gradeflow(own_home, "runner", "status").stdout == "not running\n"


def test_an_idle_runner_exits(own_home: Path) -> None:
    assert (
        _gradeflow(own_home, "grade", "missing.yaml", "--patch", "x", extra={"GRADEFLOW_RUNNER_IDLE": "1"}).returncode
        == 2
    )
    [runner] = live_runners(own_home / "runner")
    _eventually(lambda: _gone(runner.pid), "the idle runner exits")
    assert "exiting: no call for 1 s" in (own_home / "runner" / "runner.log").read_text()


def test_a_runner_whose_home_is_removed_exits(own_home: Path) -> None:
    import shutil

    assert _gradeflow(own_home, "grade", "missing.yaml", "--patch", "x").returncode == 2
    [runner] = live_runners(own_home / "runner")
    shutil.rmtree(own_home)
    _eventually(lambda: _gone(runner.pid), "the homeless runner exits")


def test_off_runs_in_process_and_light_commands_never_start_one(own_home: Path) -> None:
    off = _gradeflow(own_home, "grade", "missing.yaml", "--patch", "x", extra={"GRADEFLOW_RUNNER": "off"})
    assert off.returncode == 2 and "task spec not found" in off.stderr
    assert _gradeflow(own_home, "--help").returncode == 0
    assert _gradeflow(own_home, "grade", "task.yaml").returncode == 2  # a usage error
    assert _gradeflow(own_home, "schema").returncode == 0  # runs no engine: in-process
    assert not (own_home / "runner").exists()


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("GRADEFLOW_RUNNER", "maybe", "GRADEFLOW_RUNNER: 'maybe' is not one of on, off"),
        ("GRADEFLOW_RUNNER_IDLE", "soon", "GRADEFLOW_RUNNER_IDLE: 'soon' is not a positive number of seconds"),
    ],
)
def test_a_malformed_setting_is_one_line_and_exit_2(own_home: Path, variable: str, value: str, said: str) -> None:
    done = _gradeflow(own_home, "grade", "missing.yaml", "--patch", "x", extra={variable: value})
    assert (done.returncode, done.stderr) == (2, f"gradeflow: error: {said}\n")
    assert _gradeflow(own_home, "--help", extra={variable: value}).returncode == 0
    assert not (own_home / "runner").exists()


@pytest.mark.parametrize(
    ("setting", "enabled"), [("", True), ("on", True), (" OFF ", False), ("off", False), ("yes", None)]
)
def test_the_runner_setting(monkeypatch: pytest.MonkeyPatch, setting: str, enabled: bool | None) -> None:
    monkeypatch.setenv("GRADEFLOW_RUNNER", setting)
    if enabled is None:
        with pytest.raises(SpecError, match="GRADEFLOW_RUNNER: 'yes'"):
            runner_enabled()
    else:
        assert runner_enabled() is enabled


@pytest.mark.parametrize(
    ("setting", "seconds"),
    [("", 600.0), ("30", 30.0), ("0.5", 0.5), ("0", None), ("-1", None), ("inf", None), ("nan", None), ("10m", None)],
)
def test_the_idle_setting(monkeypatch: pytest.MonkeyPatch, setting: str, seconds: float | None) -> None:
    monkeypatch.setenv("GRADEFLOW_RUNNER_IDLE", setting)
    if seconds is None:
        with pytest.raises(SpecError, match="GRADEFLOW_RUNNER_IDLE"):
            idle_seconds()
    else:
        assert idle_seconds() == seconds


def test_without_peer_credentials_calls_run_in_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Where sockets cannot tell their peer's user (not Linux), no runner is started or asked."""
    monkeypatch.setenv("GRADEFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GRADEFLOW_RUNNER", "on")
    monkeypatch.delattr(socket, "SO_PEERCRED")
    never = [sys.executable, "-c", "raise SystemExit(1)"]
    assert through_runner(["grade", "missing.yaml", "--patch", "x"], never) is None
    assert not (tmp_path / "home" / "runner").exists()


def test_a_runner_whose_imports_started_a_thread_does_not_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forking copies one thread: a runner with another would hand its children a half-run copy of it."""
    monkeypatch.chdir(tmp_path)
    release = threading.Event()
    started = threading.Thread(target=release.wait, name="started-by-an-import")
    ready, told = os.pipe()
    try:
        assert serve("k" * 16, lambda argv: 0, told, started.start) == 1
    finally:
        release.set()
        started.join()
        os.close(ready)
        os.close(told)
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_a_library_turned_into_its_own_error_is_still_an_interrupt(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A SIGINT landing in pydantic's serializer comes out as its serialization error, not KeyboardInterrupt:
    # the child still ends as an interrupted command does (130, one line), not with a traceback and 1.
    from gradeflow.engine import runner_child

    def wrapped(argv: list[str]) -> int:
        try:
            runner_child._interrupt(signal.SIGINT, None)
        except KeyboardInterrupt:
            raise RuntimeError("Error calling function `_ser_model`: KeyboardInterrupt") from None
        return 0

    def failing(argv: list[str]) -> int:
        raise RuntimeError("boom")

    runner_child._INTERRUPTS.clear()
    assert runner_child._entry(failing, []) == 1
    assert "RuntimeError: boom" in capsys.readouterr().err
    try:
        assert runner_child._entry(wrapped, []) == 130
    finally:
        runner_child._INTERRUPTS.clear()
    assert capsys.readouterr().err == "gradeflow: interrupted\n"
