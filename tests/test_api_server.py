"""The Python API runs like the CLI: on gradeflow's local Prefect server (started once, reused by the next
process) rather than Prefect's temporary server per process, and with Prefect's INFO chatter kept off the
console (it printed about 40 lines per grade)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPT = (
    "from gradeflow import grade\n"
    f"result = grade({str(EXAMPLES / 'calc' / 'task.yaml')!r}, patch={str(EXAMPLES / 'calc' / 'reference.diff')!r},"
    " sandbox='local')\n"
    "print(result.summary())\n"
)


@pytest.mark.slow
def test_grade_uses_the_local_server_and_stays_quiet(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(GRADEFLOW_HOME=str(tmp_path / "home"), PREFECT_HOME=str(tmp_path / "prefect"))
    env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    try:
        for _ in range(2):
            done = subprocess.run(
                [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path
            )
            assert done.returncode == 0, done.stderr
            assert done.stdout.startswith("PASS 1.000"), done.stdout
            assert "Starting temporary server" not in done.stderr
            chatter = [line for line in done.stderr.splitlines() if "| INFO" in line]
            assert chatter == [], chatter
        status = subprocess.run(
            [sys.executable, "-m", "gradeflow.cli", "server", "status"], env=env, capture_output=True, text=True
        )
        assert status.returncode == 0 and status.stdout.startswith("running:"), status.stdout
    finally:
        subprocess.run([sys.executable, "-m", "gradeflow.cli", "server", "stop"], env=env, capture_output=True)
