"""The local Prefect server one-shot commands reuse: found, reused, replaced when dead, one after a race."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from gradeflow.engine.local_server import SERVER_SETTINGS, ensure_server, server_status, stop_server

pytestmark = pytest.mark.slow
CALC = Path(__file__).resolve().parents[2] / "examples" / "calc"
GRADE = [
    sys.executable,
    "-m",
    "gradeflow.cli",
    "grade",
    str(CALC / "task.yaml"),
    "--patch",
    str(CALC / "reference.diff"),
]


@pytest.fixture
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A GRADEFLOW_HOME of this test's own, whose server is stopped however the test ends."""
    monkeypatch.setenv("GRADEFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    try:
        yield tmp_path / "home"
    finally:
        stop_server()


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def test_a_started_server_is_reused_and_a_dead_one_replaced(own_home: Path) -> None:
    first = ensure_server()
    assert first.started and first.url.startswith("http://127.0.0.1:")
    again = ensure_server()
    assert (again.started, again.pid, again.url) == (False, first.pid, first.url)
    os.killpg(first.pid, signal.SIGKILL)
    os.waitpid(first.pid, 0)
    assert server_status() is None
    replaced = ensure_server()
    assert replaced.started and replaced.pid != first.pid
    assert (own_home / "server" / "server.json").is_file()


def test_two_first_calls_racing_end_with_one_server_that_refuses_no_write(own_home: Path) -> None:
    del own_home
    with ThreadPoolExecutor(max_workers=2) as pool:
        servers = list(pool.map(lambda _: ensure_server(), range(2)))
    assert len({s.pid for s in servers}) == 1
    assert sorted(s.started for s in servers) == [False, True]
    # Flow runs created and moved on from four threads at once, as concurrent grades do, without the client's
    # retries: Prefect's server as shipped answered 99 of 120 such creations 503 here (SQLite refusing a deferred
    # transaction's upgrade), each of which a grade's client waits about 2 s to retry; the local server none.
    url = servers[0].url
    status, flow = _request(url + "/flows/", {"name": "concurrent-writes"})
    assert status in (200, 201), flow

    def create(_: int) -> Counter[str]:
        seen = Counter[str]()
        for _ in range(15):
            created = _request(url + "/flow_runs/", {"flow_id": flow["id"], "state": {"type": "PENDING"}})
            seen[f"create {created[0]}"] += 1
            if created[0] == 201:
                for state in ("RUNNING", "COMPLETED"):
                    moved = _request(f"{url}/flow_runs/{created[1]['id']}/set_state", {"state": {"type": state}})
                    seen[f"set_state {moved[0]}"] += 1
        return seen

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = sum(pool.map(create, range(4)), Counter[str]())
    assert answers == {"create 201": 60, "set_state 201": 120}, answers


def _post(url: str, body: dict[str, object]) -> list[dict[str, Any]]:
    status, answer = _request(url, body)
    assert 200 <= status < 300, (url, status)
    return list(answer)


def _request(url: str, body: dict[str, object]) -> tuple[int, Any]:
    """One POST, no retry: its status and its answer's JSON (``None`` for an error's)."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, None


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The gradeflow command in its own process, as a user runs it (this test's home, no PREFECT_API_URL)."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    return subprocess.run([sys.executable, "-m", "gradeflow.cli", *args], env=env, capture_output=True, text=True)


def test_the_cli_grades_on_the_local_server_and_reuses_it(own_home: Path) -> None:
    del own_home
    args = ["grade", str(CALC / "task.yaml"), "--patch", str(CALC / "reference.diff")]
    first = _cli(*args)
    assert first.returncode == 0 and first.stdout.startswith("PASS"), first.stderr
    server = server_status()
    assert server is not None and f"watch your grades at {server.ui_url}" in first.stderr
    again = _cli(*args, "--json")
    assert again.returncode == 0 and "started a local Prefect server" not in again.stderr
    assert server_status() == server
    # Its task run recorder is batched (SERVER_SETTINGS, where the caller's environment did not set its own), and
    # every task run of the grade still reaches the server, finished, a moment later.
    environ = dict(
        line.split("=", 1) for line in Path(f"/proc/{server.pid}/environ").read_text().split("\0") if "=" in line
    )
    assert {name: environ.get(name) for name in SERVER_SETTINGS} == SERVER_SETTINGS
    steps = ["snapshot", "constraints", "tests", "quality", "perf", "combine"]
    deadline, done = time.monotonic() + 30, Counter[str]()
    while time.monotonic() < deadline:
        listed = _post(server.url + "/task_runs/filter", {"limit": 200})
        # A task run whose first state the batched recorder has not written yet is listed without one.
        done = Counter(
            run["name"].rsplit("-", 1)[0] for run in listed if (run["state"] or {}).get("type") == "COMPLETED"
        )
        if all(done[step] == 2 for step in steps):  # both grades' steps
            break
        time.sleep(0.5)
    assert {step: done[step] for step in steps} == dict.fromkeys(steps, 2), done
    status = _cli("server", "status")
    assert status.returncode == 0 and server.url in status.stdout
    assert _cli("server", "stop").returncode == 0 and server_status() is None
    assert _cli("server", "status").returncode == 1


def test_an_explicit_api_url_wins(own_home: Path) -> None:
    ephemeral = subprocess.run(
        [*GRADE, "--ephemeral", "--json"],
        env={**os.environ, "PREFECT_API_URL": ""},
        capture_output=True,
        text=True,
    )
    assert ephemeral.returncode == 0, ephemeral.stderr
    assert server_status() is None  # --ephemeral started no local server
    started = ensure_server()
    explicit = subprocess.run(
        [*GRADE, "--json"],
        env={**os.environ, "PREFECT_API_URL": started.url, "GRADEFLOW_HOME": str(own_home.parent / "other")},
        capture_output=True,
        text=True,
    )
    assert explicit.returncode == 0, explicit.stderr
    # The explicit URL was used: no server was started under the call's own (other) home.
    assert not (own_home.parent / "other" / "server" / "server.json").exists()


def test_dask_needs_an_explicit_server(own_home: Path) -> None:
    suite = Path(__file__).resolve().parents[2] / "examples" / "suite.yaml"
    done = _cli("evaluate", str(suite), "--dask-address", "tcp://127.0.0.1:1", "--ledger", str(own_home / "l.db"))
    assert done.returncode == 2 and "PREFECT_API_URL" in done.stderr, done.stderr
    assert server_status() is None


def test_a_sigterm_takes_down_the_temporary_server_a_call_started(tmp_path: Path) -> None:
    env = {**os.environ, "GRADEFLOW_HOME": str(tmp_path / "home"), "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)
    suite = Path(__file__).resolve().parents[2] / "examples" / "suite.yaml"
    command = [sys.executable, "-m", "gradeflow.cli", "evaluate", str(suite), "--ephemeral", "--no-progress"]
    command += ["--ledger", str(tmp_path / "ledger.db")]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _children_of(proc.pid):
        time.sleep(0.2)
    servers = _children_of(proc.pid)
    assert servers, "the call started no temporary server"
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in servers):
        time.sleep(0.2)
    assert not [pid for pid in servers if Path(f"/proc/{pid}").exists()], "the temporary server outlived its call"


def test_the_printed_ui_address_lists_the_grade(own_home: Path, chromium: str, tmp_path: Path) -> None:
    del own_home
    from chromium_page import ChromiumPage

    first = _cli("grade", str(CALC / "task.yaml"), "--patch", str(CALC / "reference.diff"))
    assert first.returncode == 0, first.stderr
    address = re.search(r"watch your grades at (\S+)", first.stderr)
    assert address is not None, first.stderr
    page = ChromiumPage(chromium, tmp_path / "profile")
    try:
        page.goto(address.group(1).rstrip("/") + "/runs")
        # The UI talks to this server's API (not 127.0.0.1:4200): the grade's flow run is listed.
        text = page.wait_for_text(["grade-calc-divzero-submission"], 60)
        assert "Can't connect to Server API" not in text
    finally:
        page.close()
