"""Slow clients against a real ``gradeflow webhook`` process over real sockets: headers or a body that
trickle in past ``webhook.body_timeout`` are dropped, and the receiver keeps answering others."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from service_procs import BIN, EXAMPLES, SECRET, base_env, free_port, start, stop, wait_until

TIMEOUT = 1.0


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    root = tmp_path_factory.mktemp("deadline")
    config = root / "gradeflow.yaml"
    config.write_text(f"webhook: {{body_timeout: {TIMEOUT}}}\n")
    env = base_env(root / "home", "http://127.0.0.1:9/api")  # no run is started: Prefect is never asked
    env.update(GRADEFLOW_WEBHOOK_SECRET=SECRET, GRADEFLOW_HOME=str(root / "gradeflow-home"))
    port = free_port()
    command = [
        str(BIN / "gradeflow"),
        "webhook",
        "--tasks",
        str(EXAMPLES),
        "--port",
        str(port),
        "--config",
        str(config),
    ]
    process = start(command, env, root / "webhook.log", cwd=root)
    try:
        url = f"http://127.0.0.1:{port}/healthz"
        wait_until(lambda: httpx.get(url, timeout=5).status_code == 200, 60, "the webhook receiver")
        yield "127.0.0.1", port
    finally:
        stop(process)


def _trickle(
    address: tuple[str, int], head: bytes, drip: bytes, every: float = 0.2, limit: float = 20
) -> tuple[bytes, float]:
    """Send ``head``, then ``drip`` one byte every ``every`` s until the server answers or closes; the bytes
    it answered and the seconds it took."""
    started = time.monotonic()
    with socket.create_connection(address, timeout=every) as sock:
        sock.sendall(head)
        answer = b""
        for byte in (drip * 1000)[: int(limit / every)]:
            try:
                sock.sendall(bytes([byte]))
            except OSError:  # the server closed the connection
                break
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
        return answer, time.monotonic() - started


def test_headers_that_trickle_in_are_dropped_without_an_answer(receiver: tuple[str, int]) -> None:
    answer, seconds = _trickle(receiver, b"POST /hooks/grade HTTP/1.1\r\n", b"X-Slow: aaaaaaaa\r\n")
    assert answer == b""
    assert TIMEOUT - 0.1 <= seconds < TIMEOUT + 2


def test_a_body_that_trickles_in_gets_408_and_the_connection_closes(receiver: tuple[str, int]) -> None:
    head = b"POST /hooks/grade HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
    answer, seconds = _trickle(receiver, head, b'{"task_id": "calc-divzero"')
    assert answer.startswith(b"HTTP/1.1 408 ") and b"body-timeout" in answer
    assert seconds < TIMEOUT + 2


def test_four_slow_clients_are_all_dropped_and_others_are_still_served(receiver: tuple[str, int]) -> None:
    head = b"POST /hooks/grade HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n"
    with ThreadPoolExecutor(4) as pool:
        slow = [pool.submit(_trickle, receiver, head, b"{") for _ in range(4)]
        healthy = httpx.get(f"http://{receiver[0]}:{receiver[1]}/healthz", timeout=5)
        outcomes = [future.result() for future in slow]
    assert healthy.status_code == 200
    assert all(answer.startswith(b"HTTP/1.1 408 ") and seconds < TIMEOUT + 2 for answer, seconds in outcomes)


def test_a_deep_or_out_of_range_body_over_http_is_a_400(receiver: tuple[str, int]) -> None:
    from service_procs import signed_post

    url = f"http://{receiver[0]}:{receiver[1]}/hooks/grade"
    for body, error in [(b"[" * 200_000 + b"]" * 200_000, "too-deep"), (b'{"number": 1e400}', "out-of-range")]:
        response = signed_post(url, body, SECRET, "d-1")
        assert (response.status_code, response.json()["error"]) == (400, error)


def test_the_body_deadline_is_read_from_the_service_config(tmp_path: Path) -> None:
    from gradeflow.service.config import ServiceConfig, load_service_config

    (tmp_path / "gradeflow.yaml").write_text("webhook: {body_timeout: 2.5}\n")
    assert load_service_config(tmp_path / "gradeflow.yaml").webhook.body_timeout == 2.5
    assert ServiceConfig().webhook.body_timeout == 10
