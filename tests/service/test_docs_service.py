"""The service examples of docs/how-to/service.md and docs/operations.md run as written, ports and folders
parameterised: the service page's start-up lines start a server, ``serve`` and the receiver, its delivery gets
the answer it shows; operations.md's delivery, sent to the session's receiver, gets the answer it shows too."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from service_procs import BIN, EXAMPLES, SECRET, Api, Service, free_port, stop, wait_until

from docs_fences import OPERATIONS, SERVICE_PAGE, fence, matches, shown

pytestmark = pytest.mark.slow


def _user_env(home: Path) -> dict[str, str]:
    """A user's shell: the venv's commands first, no Prefect settings of the session, homes in ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRADEFLOW_"))}
    return {
        **env,
        "PATH": f"{BIN}{os.pathsep}{env['PATH']}",
        "PREFECT_HOME": str(home / "prefect"),
        "GRADEFLOW_HOME": str(home / "gradeflow"),
    }


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _delivered(text: str, cwd: Path, env: dict[str, str]) -> None:
    """Runs a delivery fence and compares the receiver's answer with the line the fence shows under curl."""
    [curl] = [line for line in text.splitlines() if line.startswith("curl ")]
    done = _bash(text, cwd, env)
    assert done.returncode == 0, done.stderr
    [expected] = shown(text, curl)
    assert matches(expected, done.stdout.strip()), done.stdout


def test_the_service_page_runs_as_written(tmp_path: Path) -> None:
    api_port, hook_port = free_port(), free_port()
    ports = {"4200": str(api_port), "8787": str(hook_port)}
    start_up = re.sub("4200|8787", lambda m: ports[m.group()], fence(SERVICE_PAGE, "export PREFECT_SERVER").text)
    start_up += "wait\n"  # bash stays, so stopping its group stops what the lines started
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    env = _user_env(tmp_path)
    with (tmp_path / "service.log").open("wb") as log:
        started = subprocess.Popen(
            ["bash", "-c", start_up], cwd=tmp_path, env=env, stdout=log, stderr=log, start_new_session=True
        )
    try:
        api = Api(f"http://127.0.0.1:{api_port}/api")
        wait_until(lambda: api.deployment("grade-request/grade-submission"), 180, "serve's deployments")
        url = f"http://127.0.0.1:{hook_port}/healthz"
        wait_until(lambda: httpx.get(url, timeout=5).status_code == 200, 60, "the receiver")
        delivery = re.sub("4200|8787", lambda m: ports[m.group()], fence(SERVICE_PAGE, "body=$(python -c").text)
        _delivered(delivery, tmp_path, env)
    finally:
        stop(started)


def test_the_operations_delivery_runs_as_written(service: Service, tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "calc", tmp_path / "tasks" / "calc")  # step 4 of the doc
    port = service.webhook.rsplit(":", 1)[1]
    delivery = fence(OPERATIONS, "body=$(python -c").text.replace("8787", port)
    _delivered(delivery, tmp_path, {**_user_env(tmp_path), "GRADEFLOW_WEBHOOK_SECRET": SECRET})
