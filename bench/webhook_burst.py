"""A burst of signed deliveries at the webhook receiver, on loopback, against a real Prefect server.

Starts ``prefect server start`` (its own PREFECT_HOME), registers the deployments on a work pool with
no worker (``gradeflow deploy``, so runs are created and stay scheduled), starts ``gradeflow webhook``,
then sends N signed ``/hooks/grade`` deliveries (16 at a time) plus R redeliveries of already-sent ids,
and counts through the Prefect API what was created:

    python bench/webhook_burst.py [N=200] [R=20]
    GRADEFLOW_BENCH_PREFECT_DB=postgresql+asyncpg://user:pw@127.0.0.1:5432/db python bench/webhook_burst.py

With ``GRADEFLOW_BENCH_PREFECT_DB`` the Prefect server keeps its state in that (empty) PostgreSQL database
instead of SQLite.

Deliveries answered 503 (or not within 30 s) are delivered again, as a sender would, up to 3 times.
Prints accepted, answered as duplicates (200 ``duplicate: true``), runs created, lost (accepted
without a run), duplicated (a submission with more than one run), and p50/p99 answer times. Exits 1
if any run is lost or duplicated.
Everything is bounded: 120 s for the processes to come up, 30 s per request.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SECRET = "bench-secret"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(url: str, process: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{process.args!r} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"timed out waiting for {url}")


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the parent dies, so a killed run leaves no server behind (Linux)."""
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent
        )


def _delivery(n: int) -> tuple[bytes, dict[str, str]]:
    patch = (ROOT / "examples" / "calc" / "reference.diff").read_text()
    body = json.dumps({"task_id": "calc-divzero", "submission_id": f"burst-{n:04d}", "patch": patch}).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return body, {"X-Hub-Signature-256": signature, "X-GitHub-Delivery": f"burst-delivery-{n:04d}"}


async def _fire(url: str, numbers: list[int]) -> list[tuple[int, float]]:
    """(status, seconds) of each delivery, 16 in flight at once."""
    gate = asyncio.Semaphore(16)

    async def one(client: httpx.AsyncClient, n: int) -> tuple[int, float]:
        body, headers = _delivery(n)
        async with gate:
            started = time.perf_counter()
            try:
                status = (await client.post(url, content=body, headers=headers)).status_code
            except httpx.TimeoutException:
                status = 0  # no answer within 30 s: counted apart, never as accepted
            return status, time.perf_counter() - started

    async with httpx.AsyncClient(timeout=30) as client:
        return list(await asyncio.gather(*(one(client, n) for n in numbers)))


def _redeliver(url: str, first: list[tuple[int, float]], rounds: int = 3) -> dict[int, int]:
    """What a sender does with a 503 or no answer: deliver again (same id), up to ``rounds`` times."""
    final = {i: status for i, (status, _) in enumerate(first) if status in (0, 503)}
    for _ in range(rounds):
        pending = [i for i, status in final.items() if status in (0, 503)]
        if not pending:
            break
        time.sleep(2)
        for i, (status, _) in zip(pending, asyncio.run(_fire(url, pending)), strict=True):
            final[i] = status
    return final


def _runs(api: str) -> Counter[str]:
    names: Counter[str] = Counter()
    offset = 0
    while True:
        body = {"flow_runs": {"name": {"like_": "grade-calc-divzero-burst-"}}, "limit": 200, "offset": offset}
        page = httpx.post(f"{api}/flow_runs/filter", json=body, timeout=30).json()
        names.update(run["name"] for run in page)
        if len(page) < 200:
            return names
        offset += 200


def _accepted(numbers: list[int], answers: list[tuple[int, float]], retried: dict[int, int]) -> set[int]:
    """The submissions accepted by any of their deliveries: 202, or 200 (already accepted) on a redelivery.

    Counted per submission, not per answer: a redelivery in the burst may win the race (202) while its
    first delivery got a 503 that the sender then redelivers to a 200; that is one submission, not two.
    """
    accepted = {n for n, (status, _) in zip(numbers, answers, strict=True) if status == 202}
    return accepted | {i for i, status in retried.items() if status in (202, 200)}


def _report(
    numbers: list[int], answers: list[tuple[int, float]], n: int, runs: Counter[str], retried: dict[int, int]
) -> int:
    statuses = Counter(status for status, _ in answers)
    times = sorted(seconds for _, seconds in answers)
    accepted_ids = _accepted(numbers, answers, retried)
    accepted = len(accepted_ids)
    duplicated = sum(count - 1 for count in runs.values() if count > 1)
    lost = sum(runs[f"grade-calc-divzero-burst-{i:04d}"] == 0 for i in accepted_ids)
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    print(f"deliveries sent: {len(answers)} ({n} distinct, {len(answers) - n} redeliveries); statuses {dict(statuses)}")
    print(
        f"first answers: 503 {statuses[503]}, none within 30 s {statuses[0]}; redelivered: {len(retried)}, then "
        f"{dict(Counter(retried.values()))}"
    )
    print(
        f"accepted (at first or on redelivery): {accepted}/{n}  "
        f"answered as duplicates: {statuses[200]}  runs: {len(runs)}"
    )
    print(f"lost: {lost}  duplicated: {duplicated}")
    print(f"answer time p50: {statistics.median(times) * 1000:.0f} ms  p99: {p99 * 1000:.0f} ms")
    return 1 if lost or duplicated or accepted != n else 0


def _environment(root: Path) -> dict[str, str]:
    """Private homes, no telemetry, and PostgreSQL behind the server when GRADEFLOW_BENCH_PREFECT_DB is set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(root / "prefect"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        GRADEFLOW_HOME=str(root / "gradeflow"),
        GRADEFLOW_WEBHOOK_SECRET=SECRET,
    )
    if os.environ.get("GRADEFLOW_BENCH_PREFECT_DB"):
        env["PREFECT_API_DATABASE_CONNECTION_URL"] = os.environ["GRADEFLOW_BENCH_PREFECT_DB"]
    return env


def main(n: int = 200, redeliveries: int = 20) -> int:
    root = Path(tempfile.mkdtemp(prefix="gradeflow-burst-"))
    port, hook_port = _port(), _port()
    api = f"http://127.0.0.1:{port}/api"
    env = _environment(root)
    server = _start(
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)], env, root / "server.log"
    )
    processes = [server]
    try:
        _wait(f"{api}/health", server)
        env["PREFECT_API_URL"] = api
        subprocess.run(
            [str(BIN / "gradeflow"), "deploy", "--pool", "burst"],
            env=env,
            cwd=root,
            check=True,
            capture_output=True,
            timeout=120,
        )
        hook = _start(
            [str(BIN / "gradeflow"), "webhook", "--tasks", str(ROOT / "examples"), "--port", str(hook_port)],
            env,
            root / "webhook.log",
        )
        processes.append(hook)
        _wait(f"http://127.0.0.1:{hook_port}/healthz", hook)
        numbers = list(range(n)) + list(range(0, n, max(1, n // redeliveries)))[:redeliveries]
        url = f"http://127.0.0.1:{hook_port}/hooks/grade"
        answers = asyncio.run(_fire(url, numbers))
        retried = _redeliver(url, answers[:n])
        print(f"Prefect database: {'PostgreSQL' if 'PREFECT_API_DATABASE_CONNECTION_URL' in env else 'SQLite'}")
        return _report(numbers, answers, n, _runs(api), retried)
    finally:
        for process in reversed(processes):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main(*(int(arg) for arg in sys.argv[1:3])))
