"""A real ``gradeflow webhook`` process holds at most MAX_UNVERIFIED_BYTES for bodies whose signature is not
checked yet: senders that declare 1 MiB and stall fill the budget, the next is refused at once (503 ``busy``,
the connection closed), a body declared over 1 MiB is refused at once (413), and once the stalled senders go
a signed delivery is answered again."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from service_procs import BIN, EXAMPLES, SECRET, base_env, free_port, start, stop, wait_until

from gradeflow.service.webhook import MAX_BODY_BYTES, MAX_UNVERIFIED_BYTES, sign

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    root = tmp_path_factory.mktemp("inflight")
    config = root / "gradeflow.yaml"
    config.write_text("webhook: {body_timeout: 30}\n")
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
        wait_until(lambda: httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200, 60, "webhook")
        yield "127.0.0.1", port
    finally:
        stop(process)


def _head(length: int) -> bytes:
    lines = ["POST /hooks/grade HTTP/1.1", "Host: x", "Content-Type: application/json", f"Content-Length: {length}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _answer(sock: socket.socket, wait: float = 5.0) -> bytes:
    """What the server sent until it closed the connection (or ``wait`` s passed)."""
    sock.settimeout(wait)
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return answer


def test_stalled_unsigned_bodies_hold_at_most_the_cap(receiver: tuple[str, int]) -> None:
    stalled = []
    try:
        for _ in range(MAX_UNVERIFIED_BYTES // MAX_BODY_BYTES):
            sock = socket.create_connection(receiver, timeout=5)
            sock.sendall(_head(MAX_BODY_BYTES) + b"{" * (MAX_BODY_BYTES // 2))
            stalled.append(sock)
        time.sleep(0.5)
        with socket.create_connection(receiver, timeout=5) as late:
            started = time.monotonic()
            late.sendall(_head(1000) + b"{")
            answer = _answer(late)
            assert time.monotonic() - started < 3
        assert answer.startswith(b"HTTP/1.1 503") and b'"busy"' in answer and b"connection: close" in answer.lower()
        with socket.create_connection(receiver, timeout=5) as big:
            big.sendall(_head(MAX_BODY_BYTES + 1))
            assert _answer(big).startswith(b"HTTP/1.1 413")
    finally:
        for sock in stalled:
            sock.close()
    body = json.dumps({"task_id": "nope", "submission_id": "s", "patch": ""}).encode()
    url = f"http://{receiver[0]}:{receiver[1]}/hooks/grade"

    def answered() -> bool:
        response = httpx.post(url, content=body, headers={"X-Hub-Signature-256": sign(SECRET.encode(), body)})
        return response.status_code == 422

    wait_until(answered, 10, "the receiver to take a signed delivery again")
