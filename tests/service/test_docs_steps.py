"""docs/operations.md's step-by-step block runs as written, in one bash session as a user would type it.

Parameterised: the ports (4200, 8787), the folder (a scratch folder holding a copy of ``examples/``), and the
databases: step 1's roles and databases get names of their own (``prefect_<hex>``, ``gradeflow_<hex>``) on the
test PostgreSQL (``$GRADEFLOW_TEST_POSTGRES_URL``'s host and port), dropped afterwards, and ``PASSWORD`` one
password. Step 1's two role lines run as PostgreSQL's superuser, as the step says (``runuser -u postgres``,
so the test needs root), answering ``--pwprompt`` on standard input. The long-running commands (server,
``serve``, worker, receiver) start in the background, as in terminals of their own. Then the delivery
fence is sent, as the doc shows: once to ``gradeflow serve`` (5a), which is then stopped with SIGTERM (it
exits 0, as the pieces table says), and once more, as another submission, to the work pool and its worker
(5b); each answer is compared with the line the doc shows, each run completes on the PostgreSQL-backed
server, and the PostgreSQL ledger holds one record of each.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from service_procs import BIN, EXAMPLES, Api, free_port, stop, wait_until
from sqlalchemy import create_engine, inspect, make_url

from docs_fences import fence, matches, shown
from evaluate_helpers import postgres_url
from gradeflow.evaluation.ledger import Ledger

pytestmark = pytest.mark.slow

DOC = "docs/operations.md"
SERVICES = re.compile(r"^(\w+=\S+ )?(prefect server start|gradeflow serve|prefect worker start|gradeflow webhook)\b")
"""The lines that run until stopped: each starts in the background, as in a terminal of its own."""


def steps(block: str) -> dict[str, str]:
    """The block's steps by number (``1``, ``5a``…): the lines under each ``# N.`` heading."""
    found: dict[str, list[str]] = {}
    current = "0"
    for line in block.splitlines():
        heading = re.match(r"# (\d+[ab]?)\. ", line)
        if heading:
            current = heading.group(1)
        found.setdefault(current, []).append(line)
    return {number: "\n".join(lines) + "\n" for number, lines in found.items()}


@dataclass
class Databases:
    """Step 1's names, made unique, on the test server."""

    host: str
    port: int
    password: str = field(default_factory=lambda: uuid.uuid4().hex)
    suffix: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    def name(self, doc_name: str) -> str:
        return f"{doc_name}_{self.suffix}"

    def parameterise(self, script: str) -> str:
        """The doc's role, database, host, port and password replaced by this test's."""

        def url(found: re.Match[str]) -> str:
            user = self.name(found.group(2)) + (f":{self.password}" if found.group(3) else "")
            return f"{found.group(1)}{user}@{self.host}:{self.port}/{self.name(found.group(4))}"

        return re.sub(
            r"(postgresql\+\w+://)(prefect|gradeflow)(:PASSWORD)?@127\.0\.0\.1:5432/(prefect|gradeflow)", url, script
        )

    def as_superuser(self, line: str) -> None:
        """One of step 1's lines as PostgreSQL's superuser, each ``--pwprompt`` answered (twice) on stdin."""
        line = re.sub(r"\b(prefect|gradeflow)\b", lambda m: self.name(m.group()), line)
        done = subprocess.run(
            ["runuser", "-u", "postgres", "--", "bash", "-c", line],
            input=f"{self.password}\n{self.password}\n",
            env={**os.environ, "PGPORT": str(self.port)},
            capture_output=True,
            text=True,
            timeout=60,
            start_new_session=True,  # no terminal: --pwprompt reads the answers from standard input
            cwd="/",
        )
        assert done.returncode == 0, (line, done.stderr)

    def drop(self) -> None:
        for kind in ("prefect", "gradeflow"):
            for command in (["dropdb", "--if-exists", "--force"], ["dropuser", "--if-exists"]):
                subprocess.run(
                    ["runuser", "-u", "postgres", "--", *command, self.name(kind)],
                    env={**os.environ, "PGPORT": str(self.port)},
                    capture_output=True,
                    timeout=60,
                    cwd="/",
                )


class Shell:
    """One bash a user types into: every line sent runs in the same session, exports carry on."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.marks = cwd / ".marks"
        self.marks.mkdir()
        with (cwd / "shell.log").open("wb") as log:
            self.process = subprocess.Popen(
                ["bash"], stdin=subprocess.PIPE, stdout=log, stderr=log, cwd=cwd, env=env, start_new_session=True
            )
        self.count = 0

    def run(self, script: str, timeout: float = 300) -> int:
        """Run ``script`` and wait for it; its exit status (of the last command)."""
        self.count += 1
        mark = self.marks / str(self.count)
        self._send(f"{script.rstrip()}\necho $? > {mark}.tmp && mv {mark}.tmp {mark}\n")
        wait_until(lambda: mark.is_file(), timeout, f"the shell to finish {script.splitlines()[0]!r}", 0.2)
        return int(mark.read_text())

    def start(self, line: str) -> int:
        """Start a line that runs until stopped, in the background; its pid."""
        self.count += 1
        mark = self.marks / str(self.count)
        self._send(f"{line} &\necho $! > {mark}.tmp && mv {mark}.tmp {mark}\n")
        return int(wait_until(lambda: mark.is_file() and mark.read_text().strip(), 30, f"{line!r} to start", 0.1))

    def _send(self, text_: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text_.encode())
        self.process.stdin.flush()


@pytest.fixture
def databases() -> Iterator[Databases]:
    url = make_url(postgres_url())
    if os.geteuid() != 0:
        why = "step 1 runs as PostgreSQL's superuser (runuser -u postgres): the test needs root"
        pytest.fail(f"CI=true: {why}") if os.environ.get("CI") == "true" else pytest.skip(why)
    made = Databases(url.host or "127.0.0.1", url.port or 5432)
    try:
        yield made
    finally:
        made.drop()


def _run_step(shell: Shell, script: str) -> dict[str, int]:
    """The step's lines: services started in the background (their pids by command), the rest run in order."""
    started: dict[str, int] = {}
    pending: list[str] = []
    for line in script.splitlines(keepends=True):
        service = SERVICES.match(line)
        if service:
            if pending:
                assert shell.run("".join(pending)) == 0, "".join(pending)
                pending = []
            started[service.group(2)] = shell.start(line.rstrip())
        else:
            pending.append(line)
    if "".join(pending).strip():
        assert shell.run("".join(pending)) == 0, "".join(pending)
    return started


def _deliver(shell: Shell, delivery: str, out: Path) -> str:
    """Send a delivery fence in the shell; the receiver's answer, compared with the line the fence shows."""
    assert shell.run(f"{{\n{delivery}}} > {out}") == 0
    [curl] = [line for line in delivery.splitlines() if line.startswith("curl ")]
    [expected] = shown(delivery, curl)
    answer = out.read_text().strip()
    assert matches(expected, answer), answer
    return str(json.loads(answer)["flow_run_id"])


def _tables(databases: Databases) -> set[str]:
    """The tables of step 1's Prefect database."""
    name = databases.name("prefect")
    engine = create_engine(f"postgresql+psycopg://{name}:{databases.password}@{databases.host}:{databases.port}/{name}")
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _records(databases: Databases) -> dict[str, str]:
    """The PostgreSQL ledger's records, submission id -> decision."""
    name = databases.name("gradeflow")
    ledger = Ledger(f"postgresql+psycopg://{name}:{databases.password}@{databases.host}:{databases.port}/{name}")
    try:
        return {record.submission_id: record.decision for record in ledger.records()}
    finally:
        ledger.close()


def test_the_steps_run_as_written(tmp_path: Path, databases: Databases) -> None:
    block = fence(DOC, "# 1. PostgreSQL behind Prefect").text
    api_port, hook_port = free_port(), free_port()
    ports = {"4200": str(api_port), "8787": str(hook_port)}
    script = databases.parameterise(re.sub("4200|8787", lambda m: ports[m.group()], block))
    parts = steps(script)
    assert sorted(parts) == ["1", "2", "3", "4", "5a", "5b", "6"], sorted(parts)
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRADEFLOW_"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env['PATH']}", PREFECT_HOME=str(tmp_path / "prefect-home"))
    env["GRADEFLOW_HOME"] = str(tmp_path / "gradeflow-home")  # shared by serve, workers and receiver
    shell = Shell(tmp_path, env)
    try:
        for line in parts["1"].splitlines():
            if line.startswith(("createuser", "createdb")):
                databases.as_superuser(line)
        assert shell.run("\n".join(x for x in parts["1"].splitlines() if x.startswith("export "))) == 0
        _run_step(shell, parts["2"])
        api = Api(f"http://127.0.0.1:{api_port}/api")
        api.client.auth = httpx.BasicAuth("admin", "a-long-random-string")
        wait_until(lambda: api.client.get("health").status_code == 200, 120, "the server (shell.log)")
        unauthenticated = httpx.post(f"http://127.0.0.1:{api_port}/api/flow_runs/filter", json={}, timeout=10)
        assert unauthenticated.status_code == 401
        assert "flow_run" in _tables(databases)  # the server keeps its state in step 1's PostgreSQL database
        _run_step(shell, parts["3"] + parts["4"])
        serving = _run_step(shell, parts["5a"])["gradeflow serve"]
        wait_until(lambda: api.deployment("grade-request/grade-submission"), 180, "serve's deployments")
        _run_step(shell, parts["6"])
        wait_until(lambda: httpx.get(f"http://127.0.0.1:{hook_port}/healthz", timeout=5).status_code == 200, 60, "hook")
        delivery = fence(DOC, "body=$(python -c").text.replace("8787", str(hook_port))
        served = api.wait_final(_deliver(shell, delivery, tmp_path / "served.json"), 300)
        assert served["state_type"] == "COMPLETED", served["state"]
        os.kill(serving, signal.SIGTERM)
        assert shell.run(f"wait {serving}") == 0  # serve pauses its schedule and exits 0 on SIGTERM
        assert api.deployment("evaluate-request/evaluate-suite")["paused"]
        _run_step(shell, parts["5b"])
        [hint] = [x for x in (tmp_path / "shell.log").read_text().splitlines() if x.startswith("start workers with: ")]
        assert hint.removeprefix("start workers with: ") in parts["5b"]  # what deploy prints is the doc's next line
        second = delivery.replace("run-42", "run-43")
        pooled = _deliver(shell, second, tmp_path / "pooled.json")
        assert api.wait_final(pooled, 300)["state_type"] == "COMPLETED"
        wait_until(lambda: api.worker_executed(pooled), 60, "the worker's executed-flow-run event")
        assert _records(databases) == {"run-42": "merge-candidate", "run-43": "merge-candidate"}
    finally:
        stop(shell.process, timeout=30)
