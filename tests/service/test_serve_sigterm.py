"""``gradeflow serve`` on SIGTERM: with its Prefect server killed it stops at once with one line and exit 3
(Prefect's own shutdown would retry the dead API for about a minute and end in a traceback); with the
server there it pauses its schedules and exits 0. A server that never answers: one line, exit 3."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from service_procs import BIN, Api, base_env, free_port, start, stop, wait_until

NIGHTLY = "evaluate-request/evaluate-suite"


def _server(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A ``prefect server start`` of this test's own (the test kills it), and its API URL once it answers."""
    home.mkdir()
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = base_env(home)
    server = start(
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)], env, home / "log"
    )
    wait_until(lambda: httpx.get(f"{api_url}/health", timeout=5).status_code == 200, 90, "the Prefect server")
    return server, api_url


def _serve(root: Path, api_url: str) -> tuple[subprocess.Popen[bytes], Path]:
    (root / "client").mkdir()
    (root / "gradeflow.yaml").write_text("suite: nightly.yaml\n")
    env = base_env(root / "client", api_url)
    env.update(GRADEFLOW_HOME=str(root / "gradeflow-home"), GRADEFLOW_CONFIG=str(root / "gradeflow.yaml"))
    err = root / "serve.err"
    with err.open("wb") as stderr:
        process = subprocess.Popen(
            [str(BIN / "gradeflow"), "serve"], env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=stderr
        )
    api = Api(api_url)
    # READY once the runner has polled for its runs: serving has started, not only registered the deployments
    wait_until(lambda: (api.deployment(NIGHTLY) or {}).get("status") == "READY", 90, "serve to poll for its runs")
    return process, err


def _terminated(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=20)  # Prefect's retries against a dead server take about a minute
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail("serve ignored SIGTERM for 20 s")


@pytest.mark.slow
def test_sigterm_with_the_server_gone_stops_at_once_with_one_line(tmp_path: Path) -> None:
    server, api_url = _server(tmp_path / "server")
    try:
        process, err = _serve(tmp_path, api_url)
    finally:
        stop(server)  # SIGTERM then SIGKILL to the server's whole group: the API is gone
    wait_until(lambda: not _answers(api_url), 30, "the server to be gone")
    before = len(err.read_bytes())
    code = _terminated(process)
    after = err.read_bytes()[before:].decode().splitlines()
    assert code == 3
    assert after == [
        "gradeflow: error: serve stopped on SIGTERM without pausing its schedules or cancelling its runs: "
        f"the Prefect server at {api_url} does not answer"
    ]


@pytest.mark.slow
def test_sigterm_with_the_server_there_pauses_the_schedules_and_exits_0(tmp_path: Path) -> None:
    server, api_url = _server(tmp_path / "server")
    try:
        process, _ = _serve(tmp_path, api_url)
        assert _terminated(process) == 0
        nightly = Api(api_url).deployment(NIGHTLY)
        assert nightly is not None and nightly["paused"] is True
    finally:
        stop(server)


def _answers(api_url: str) -> bool:
    try:
        httpx.get(f"{api_url}/health", timeout=2)
    except httpx.HTTPError:
        return False
    return True


def test_a_server_that_never_answers_is_one_line_and_exit_3(tmp_path: Path) -> None:
    api_url = f"http://127.0.0.1:{free_port()}/api"  # nobody listens there
    env = base_env(tmp_path, api_url)
    env.update(GRADEFLOW_HOME=str(tmp_path / "gradeflow-home"))
    done = subprocess.run(
        [str(BIN / "gradeflow"), "serve", "--server-wait", "2"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 3
    assert done.stderr.splitlines() == [f"gradeflow: error: the Prefect server at {api_url} did not answer within 2 s"]


@pytest.mark.parametrize("wait", ["-1", "soon", "nan", "inf"])
def test_a_server_wait_that_is_no_number_of_seconds_is_a_usage_error(tmp_path: Path, wait: str) -> None:
    done = subprocess.run(
        [str(BIN / "gradeflow"), "deploy", "--pool", "p", "--server-wait", wait],
        env=base_env(tmp_path, "http://127.0.0.1:9/api"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"argument --server-wait: {wait!r} is not a number of seconds (0 or more)" in done.stderr
