"""Real processes for the service tests: a Prefect server, ``gradeflow`` commands, workers, and a
small client of the Prefect REST API. Every process runs in its own session and is stopped by group.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

T = TypeVar("T")
BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SECRET = "test-webhook-secret"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(probe: Callable[[], T | None], timeout: float, what: str, every: float = 0.5) -> T:
    """The first truthy value of ``probe`` within ``timeout`` seconds; ``TimeoutError`` naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = probe()
        except (httpx.HTTPError, OSError):
            value = None
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the parent dies, so a killed run leaves no server behind (Linux)."""
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start(cmd: list[str], env: dict[str, str], log: Path, cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own process group, output to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            cmd,
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


def stop(process: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """Stop the process group: SIGTERM, then SIGKILL after ``timeout`` to whatever of the group is left.

    The group outlives its leader when a member takes longer over SIGTERM (a ``prefect worker`` started in the
    background of a shell retried a stopped server for minutes, into the serial timing tests)."""
    stop_all([process], timeout)


def stop_all(processes: Sequence[subprocess.Popen[bytes]], timeout: float = 15) -> None:
    """:func:`stop` for several process groups at once: SIGTERM to all, then SIGKILL to what is left of any
    after one ``timeout`` shared by all (stopped one by one, two workers took 60 s of a teardown)."""
    for process in processes:
        if process.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(p.poll() is None or _group_alive(p.pid) for p in processes):
        time.sleep(0.2)
    for process in processes:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def base_env(home: Path, api_url: str | None = None) -> dict[str, str]:
    """The environment of a service process: its own PREFECT_HOME, no telemetry, this venv first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_LOGGING_LEVEL="INFO",
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    )
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


@contextmanager
def prefect_server(home: Path, timeout: float = 90) -> Iterator[str]:
    """``prefect server start`` on a free loopback port; yields the API URL once /api/health answers."""
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = base_env(home)
    env["PREFECT_SERVER_UI_API_URL"] = api
    process = start(
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)], env, home / "server.log"
    )
    try:
        wait_until(
            lambda: process.poll() is None and httpx.get(f"{api}/health", timeout=5).status_code == 200,
            timeout,
            f"prefect server on port {port} (log {home / 'server.log'})",
        )
        yield api
    finally:
        stop(process)


def signed_post(url: str, payload: Any, secret: str, delivery: str | None, **headers: str) -> httpx.Response:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    sig = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    sent = {"X-Hub-Signature-256": sig, "Content-Type": "application/json", **headers}
    if delivery:
        sent["X-GitHub-Delivery"] = delivery
    return httpx.post(url, content=body, headers=sent, timeout=30)


class _Retrying(httpx.Client):
    """Every request with the Prefect client's own policy: a 503 (a SQLite-backed server busy writing, the
    request's transaction rolled back) or a 429 is sent again after a backoff."""

    def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        for attempt in range(8):
            response = super().send(request, **kwargs)
            if response.status_code not in (429, 503):
                break
            response.close()
            time.sleep(0.2 * 2**attempt)
        return response


class Api:
    """The few Prefect REST calls the tests make."""

    def __init__(self, url: str) -> None:
        self.client = _Retrying(base_url=url.rstrip("/") + "/", timeout=30)

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        response = self.client.post(path, json=body)
        response.raise_for_status()
        return response.json()

    def deployment(self, full_name: str) -> dict[str, Any] | None:
        response = self.client.get(f"deployments/name/{full_name}")
        return response.json() if response.status_code == 200 else None

    def flow_run(self, run_id: str) -> dict[str, Any]:
        response = self.client.get(f"flow_runs/{run_id}")
        response.raise_for_status()
        return dict(response.json())

    def flow_runs(self, **flow_runs: Any) -> list[dict[str, Any]]:
        return list(self._post("flow_runs/filter", {"flow_runs": flow_runs, "limit": 200}))

    def runs_named(self, name: str) -> list[dict[str, Any]]:
        return self.flow_runs(name={"any_": [name]})

    def task_runs(self, run_ids: list[str]) -> list[dict[str, Any]]:
        return list(self._post("task_runs/filter", {"flow_runs": {"id": {"any_": run_ids}}, "limit": 200}))

    def artifacts(self, run_id: str) -> list[dict[str, Any]]:
        return list(self._post("artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [run_id]}}}))

    def worker_executed(self, run_id: str) -> bool:
        """Whether a worker emitted ``prefect.worker.executed-flow-run`` for this flow run."""
        body = {
            "filter": {
                "event": {"name": ["prefect.worker.executed-flow-run"]},
                "related": {"resources_in_roles": [[f"prefect.flow-run.{run_id}", "flow-run"]]},
            },
            "limit": 5,
        }
        return bool(self._post("events/filter", body)["events"])

    def create_run(self, deployment_id: str, parameters: dict[str, Any]) -> str:
        return str(self._post(f"deployments/{deployment_id}/create_flow_run", {"parameters": parameters})["id"])

    def wait_final(self, run_id: str, timeout: float) -> dict[str, Any]:
        """The flow run once its state is final (COMPLETED, FAILED, CRASHED, CANCELLED)."""

        def final() -> dict[str, Any] | None:
            run = self.flow_run(run_id)
            return run if run["state_type"] in {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"} else None

        return wait_until(final, timeout, f"flow run {run_id} to finish")


@dataclass
class Service:
    """A running server, a serving process and a webhook receiver."""

    api_url: str
    api: Api
    webhook: str
    """Base URL of the receiver."""
    ledger: Path
    home: Path
    env: dict[str, str]


def grade_payload(submission_id: str, patch: str = "reference.diff", model: str = "agent-x") -> dict[str, object]:
    return {
        "task_id": "calc-divzero",
        "submission_id": submission_id,
        "patch": (EXAMPLES / "calc" / patch).read_text(),
        "metadata": {"model": model, "source": "test"},
    }


@dataclass
class Delivery:
    """One signed delivery that was accepted, and the flow run it led to (finished)."""

    payload: dict[str, object]
    delivery_id: str
    run: dict[str, object]
