"""Commands that run no flow start fast: they never import Prefect (importing it costs seconds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradeflow.config import gradeflow_version
from gradeflow.evaluation.ledger import Ledger

PROBE = """
import sys
from gradeflow.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print("PREFECT" if any(m == "prefect" or m.startswith("prefect.") for m in sys.modules) else "NO-PREFECT")
sys.exit(code or 0)
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["schema"], ["profiles"], ["grade", "--help"]])
def test_commands_that_run_no_flow_do_not_import_prefect(args: list[str]) -> None:
    done = _run(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "NO-PREFECT"


def test_report_on_a_ledger_does_not_import_prefect(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    Ledger(url).close()
    done = _run("report", "--ledger", url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "NO-PREFECT"


def test_version_prints_the_installed_version() -> None:
    done = _run("--version")
    assert done.stdout.splitlines()[0] == f"gradeflow {gradeflow_version()}"


def test_the_package_exports_still_resolve_lazily() -> None:
    code = (
        "import sys, gradeflow; assert 'prefect' not in sys.modules; gradeflow.grade; print('prefect' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "True", done.stderr


@pytest.mark.slow
def test_a_one_shot_grade_prints_no_prefect_chatter() -> None:
    calc = Path(__file__).resolve().parents[2] / "examples" / "calc"
    # The session's GRADEFLOW_HOME: its local Prefect server is stopped when the session ends.
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_LOGGING_LEVEL", "PREFECT_API_URL")}
    command = [sys.executable, "-m", "gradeflow.cli", "grade", str(calc / "task.yaml"), "--patch"]
    done = subprocess.run(
        [*command, str(calc / "reference.diff")], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0 and done.stdout.startswith("PASS 1.000"), done.stderr
    assert " INFO " not in done.stderr and "Finished in state" not in done.stderr, done.stderr
