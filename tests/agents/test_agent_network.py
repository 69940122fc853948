"""An agent given the network gets a namespace of its own with slirp4netns as its way out: it reaches an
address outside the sandbox, never the host's loopback (the session's Prefect API) or its abstract sockets.

There is no internet here: the outside server listens on the host's own non-loopback address, which slirp
reaches like any other address. That proves the uplink carries the agent's connections out of its
namespace; the refusals prove the host's loopback (directly and through slirp's gateway) and the host's
abstract unix sockets stay out of reach.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import pytest

from agents.conftest import CALC
from gradeflow.agents import AgentRun, TrialConfig, TrialRun, plan_trials
from gradeflow.agents.trial import make_checkout, run_agent
from gradeflow.sandbox import _uplink
from gradeflow.spec import load_task

MARKER = "answered-from-outside-the-sandbox"


class _Marker(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = MARKER.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


def _host_address() -> str:
    """The first global IPv4 address of an interface that is up (the machine's own, not loopback)."""
    shown = subprocess.run(["ip", "-j", "-4", "addr", "show", "scope", "global", "up"], capture_output=True, check=True)
    found = [a["local"] for i in json.loads(shown.stdout) for a in i.get("addr_info", [])]
    assert found, "this test needs a non-loopback IPv4 address on the host"
    return str(found[0])


@pytest.fixture
def outside() -> Iterator[str]:
    """An HTTP server on the host's non-loopback address: ``address:port``."""
    server = ThreadingHTTPServer((_host_address(), 0), _Marker)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    yield f"{host!s}:{port}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def abstract_socket() -> Iterator[str]:
    """The name of an abstract unix socket the host listens on."""
    name = f"gradeflow-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind("\0" + name)
        sock.listen(8)
        yield name


def _agent(tmp_path: Path, outside: str, abstract: str) -> tuple[str, str]:
    """The network agent's command and its installation folder (shown read-only)."""
    from prefect.settings import PREFECT_API_URL

    port = urlparse(PREFECT_API_URL.value() or "http://127.0.0.1:4200").port or 80
    folder = tmp_path / "agent"
    folder.mkdir()
    shutil.copy(Path(__file__).parent / "network_agent.py", folder / "network_agent.py")
    folder.chmod(0o755)
    return f"python {folder}/network_agent.py {outside} {MARKER} {port} {abstract}", str(folder)


@pytest.mark.usefixtures("prefect")
def test_an_agent_with_the_network_reaches_outside_and_nothing_local(
    trials: Callable[..., TrialRun], tmp_path: Path, outside: str, abstract_socket: str
) -> None:
    command, folder = _agent(tmp_path, outside, abstract_socket)
    done = trials(command, network=True, agent_dir=folder, timeout=120)
    (trial,) = done.trials
    assert trial.exit_code == 0, "the agent reached the host, or not the outside server (its output: the artifact)"


def _run(tmp_path: Path, agent: str, **config: object) -> AgentRun:
    (planned,) = plan_trials([load_task(CALC)], TrialConfig(agent=agent, **config), 1)  # type: ignore[arg-type]
    return run_agent(planned, make_checkout(planned, tmp_path))


@pytest.mark.usefixtures("prefect")
def test_without_the_network_the_outside_is_not_reached(tmp_path: Path, outside: str, abstract_socket: str) -> None:
    command, folder = _agent(tmp_path, outside, abstract_socket)
    run = _run(tmp_path, command, agent_dir=folder)
    assert run.exit_code == 2 and "not reached" in run.stdout


def test_a_trial_asking_for_the_network_without_slirp4netns_is_inconclusive(
    trials: Callable[..., TrialRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_uplink, "slirp_path", lambda: None)
    done = trials("touch ran-anyway", network=True)
    (record,) = done.records
    assert record.status == "inconclusive" and record.reason_codes == ["sandbox-unavailable"]
    (hint,) = done.unavailable
    assert "slirp4netns is not installed" in hint and "apt-get install slirp4netns" in hint and "\n" not in hint


def test_an_uplink_that_fails_never_runs_the_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_uplink, "slirp_path", lambda: "/bin/false")
    run = _run(tmp_path, "touch ran-anyway", network=True)
    assert run.unavailable is not None and "slirp4netns could not bring the network up" in run.unavailable
    assert not (tmp_path / "repo" / "ran-anyway").exists()
