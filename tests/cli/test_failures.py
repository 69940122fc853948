"""Failures a user can cause or meet end in one line on stderr and the documented exit code, never a traceback.

Real inputs: a SQLite ledger whose pages were overwritten (``database disk image is malformed``) read by
``report`` and ``evaluate``; Prefect's temporary server given one second to come up (it needs several);
``report`` piped into a reader that closes after one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluate_helpers import record, write_suite
from gradeflow.cli import main
from gradeflow.cli.suite import inconclusive_verdict
from gradeflow.evaluation.ledger import Ledger

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLI = [sys.executable, "-m", "gradeflow.cli"]


def _ledger(path: Path, records: int = 200) -> str:
    url = f"sqlite:///{path}"
    ledger = Ledger(url)
    try:
        for n in range(records):
            ledger.add(record(run_id=f"r{n}", content_key=f"k{n}", model_id="m" * 40))
    finally:
        ledger.close()
    return url


@pytest.fixture
def malformed(tmp_path: Path) -> str:
    path = tmp_path / "ledger.db"
    url = _ledger(path)
    data = bytearray(path.read_bytes())
    for page in range(4096, len(data), 4096):
        data[page + 100 : page + 400] = b"\xff" * 300
    path.write_bytes(bytes(data))
    return url


def _one_line(err: str, expected: str) -> None:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "warning: the local sandbox" not in line]
    assert len(lines) == 1 and expected in lines[0], err


@pytest.mark.parametrize("extra", [[], ["--reviews"]])
def test_report_on_a_malformed_ledger(malformed: str, extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--ledger", malformed, *extra]) == 3
    _one_line(capsys.readouterr().err, "cannot read the records: database disk image is malformed")


@pytest.mark.usefixtures("prefect")
def test_evaluate_on_a_malformed_ledger(malformed: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["evaluate", str(EXAMPLES / "suite.yaml"), "--ledger", malformed, "--sandbox", "local"])
    assert code == 3
    _one_line(capsys.readouterr().err, "database disk image is malformed")


@pytest.mark.slow
def test_a_prefect_server_that_does_not_come_up_is_inconclusive(tmp_path: Path) -> None:
    env = {**os.environ, "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "1", "PREFECT_HOME": str(tmp_path)}
    env.pop("PREFECT_API_URL", None)
    args = ["grade", str(EXAMPLES / "calc" / "task.yaml"), "--patch", str(EXAMPLES / "calc" / "reference.diff")]
    done = subprocess.run(
        [*CLI, *args, "--sandbox", "local", "--ephemeral"], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 3, done.stderr
    _one_line(done.stderr, "the Prefect server did not come up: Timed out while attempting to connect")


def test_a_closed_pipe_ends_quietly_with_141(tmp_path: Path) -> None:
    url = _ledger(tmp_path / "ledger.db", records=300)
    with subprocess.Popen(
        [*CLI, "report", "--ledger", url, "--by", "model_id,run_id"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    assert (code, err) == (141, "")


@pytest.mark.usefixtures("prefect")
def test_evaluate_that_graded_nothing_exits_3_with_the_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path, ["t1"], {"m": ["fix", "empty"]})
    spec = tmp_path / "t1" / "task.yaml"
    spec.write_text(spec.read_text() + "setup: exit 7\n")
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    args = ["evaluate", str(suite), "--ledger", ledger, "--sandbox", "local", "--no-progress"]
    assert main(args) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("evaluate: nothing was graded: all 2 submissions are inconclusive (setup-failed ×2)")
    # Already recorded, graded by no run: still nothing graded, still 3, whatever share the user accepts.
    assert main([*args, "--max-inconclusive", "1"]) == 3
    with pytest.raises(SystemExit) as usage:
        main([*args, "--max-inconclusive", "1.5"])
    assert usage.value.code == 2
    assert "--max-inconclusive: must be a share from 0 to 1, got '1.5'" in capsys.readouterr().err


def test_the_inconclusive_share_is_checked_against_the_users_threshold() -> None:
    graded, lost = (
        record(run_id="a"),
        record(run_id="b").model_copy(
            update={"status": "inconclusive", "reason_codes": ["sandbox-unavailable"], "score": None}
        ),
    )
    assert inconclusive_verdict([graded, lost], 2, None) is None
    assert inconclusive_verdict([graded, lost], 2, 0.5) is None
    message = inconclusive_verdict([graded, lost], 2, 0.25)
    assert message is not None and message.startswith(
        "1 of 2 submissions are inconclusive (50%, over --max-inconclusive 0.25)"
    )
    assert "sandbox-unavailable ×1" in message
    assert inconclusive_verdict([graded], 1, 0.0) is None
