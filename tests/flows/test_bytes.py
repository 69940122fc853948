"""Bytes are bytes: a patch that is not UTF-8 is graded like the same change handed in as a checkout.

The real input: the calc example's reference fix plus a new ``src/notes.txt`` in Latin-1 (``café crème``),
through the CLI (patch and the equivalent workspace, real pytest), the Python API, and a suite (every
submission recorded, the Latin-1 one and a SWE-bench prediction whose JSON holds a ``\\ud800`` escape).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from evaluate_helpers import write_suite
from fakes import BUG, FIX, diff, fake_pytest
from gradeflow import grade
from gradeflow.cli import main
from gradeflow.evaluation.ledger import Ledger
from gradeflow.evaluation.suite import load_predictions, load_suite
from gradeflow.flows.evaluate import evaluate
from gradeflow.models.spec import patch_bytes
from gradeflow.sandbox import FakeSandboxFactory

pytestmark = pytest.mark.usefixtures("prefect")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "calc"
LATIN1 = b"+caf\xe9 cr\xe8me\n"
NOTES = b"diff --git a/src/notes.txt b/src/notes.txt\nnew file mode 100644\n--- /dev/null\n+++ b/src/notes.txt\n"


def _latin1_patch(folder: Path, fix: bytes) -> Path:
    patch = folder / "latin1.diff"
    patch.write_bytes(fix + NOTES + b"@@ -0,0 +1 @@\n" + LATIN1)
    return patch


def _grade_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(["grade", str(EXAMPLE / "task.yaml"), *args, "--sandbox", "local", "--json"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, json.loads(captured.out)


@pytest.mark.slow
def test_a_latin1_patch_is_graded_like_the_same_workspace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    patch = _latin1_patch(tmp_path, (EXAMPLE / "reference.diff").read_bytes())
    code, by_patch = _grade_json(capsys, "--patch", str(patch))
    workspace = tmp_path / "workspace"
    shutil.copytree(EXAMPLE / "repo", workspace)
    subprocess.run(["git", "apply", str(patch)], cwd=workspace, check=True)
    assert (workspace / "src" / "notes.txt").read_bytes() == LATIN1[1:]
    workspace_code, by_workspace = _grade_json(capsys, "--workspace", str(workspace))
    fields = ("status", "passed", "score", "decision", "reason_codes", "files_changed")
    assert (code, *[by_patch[f] for f in fields]) == (workspace_code, *[by_workspace[f] for f in fields])
    assert (code, by_patch["status"], by_patch["passed"]) == (0, "graded", True), by_patch["messages"]
    api = grade(EXAMPLE / "task.yaml", patch=patch, sandbox="local")
    assert (api.status, api.passed, api.score) == ("graded", True, by_patch["score"])


def test_a_suite_records_every_submission_whatever_its_bytes(tmp_path: Path) -> None:
    suite_file = write_suite(tmp_path, ["t1"], {"m-a": ["fix"]})
    _latin1_patch(tmp_path / "patches", diff(BUG, FIX).encode())
    data = yaml.safe_load(suite_file.read_text())
    data["submissions"].append({**data["submissions"][0], "patch": "patches/latin1.diff", "run_id": "m-a-latin1"})
    suite_file.write_text(yaml.safe_dump(data))
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    try:
        result = evaluate(load_suite(suite_file), ledger, sandbox=FakeSandboxFactory(fake_pytest), show_progress=False)
        records = {r.run_id: r for r in ledger.records()}
    finally:
        ledger.close()
    assert (result.graded, result.failed) == (2, [])
    assert set(records) == {"m-a-r1", "m-a-latin1"}
    assert (records["m-a-latin1"].status, records["m-a-latin1"].passed) == ("graded", True)


def test_a_prediction_with_a_lone_surrogate_escape_is_graded_and_recorded(tmp_path: Path) -> None:
    task = write_suite(tmp_path, ["t1"], {"m-a": ["fix"]}).parent / "t1" / "task.yaml"
    patch = diff(BUG, FIX) + "diff --git a/src/n.txt b/src/n.txt\nnew file mode 100644\n--- /dev/null\n"
    patch += "+++ b/src/n.txt\n@@ -0,0 +1 @@\n+x\ud800y\n"
    line = json.dumps({"instance_id": "t1", "model_name_or_path": "m-x", "model_patch": patch})
    assert "\\ud800" in line
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(line + "\n")
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    try:
        suite = load_predictions(predictions, str(task))
        result = evaluate(suite, ledger, sandbox=FakeSandboxFactory(fake_pytest), show_progress=False)
        records = ledger.records()
    finally:
        ledger.close()
    assert (result.graded, result.failed, len(records)) == (1, [], 1)
    assert (records[0].status, records[0].passed) == ("graded", True)


def test_patch_bytes_keeps_escaped_bytes_and_gives_lone_surrogates_bytes() -> None:
    assert patch_bytes("caf\udce9") == b"caf\xe9"
    assert patch_bytes("x\ud800y") == b"x\xed\xa0\x80y"
    assert patch_bytes("plain é") == "plain é".encode()


@pytest.mark.parametrize(
    "patch_bytes_",
    [
        pytest.param(b"hello \xba world\n", id="garbage"),
        pytest.param(NOTES + b"@@ -0,0 +1,2 @@\n" + LATIN1, id="corrupt-hunk"),
        pytest.param(
            b"diff --git a/src/caf\xe9.py b/src/caf\xe9.py\n--- a/src/caf\xe9.py\n+++ b/src/caf\xe9.py\n", id="name"
        ),
    ],
)
def test_a_refused_patch_that_is_not_utf8_is_still_a_result(
    patch_bytes_: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A patch that does not apply is refused and graded 0 (exit 1) with its JSON and summary printed, whatever
    its bytes: its text (and anything quoting it) is kept with U+FFFD for each byte that was not UTF-8."""
    patch = tmp_path / "refused.diff"
    patch.write_bytes(patch_bytes_)
    code, result = _grade_json(capsys, "--patch", str(patch))
    assert (code, result["status"], result["passed"], result["decision"]) == (1, "graded", False, "rejected")
    assert result["reason_codes"] == ["patch-does-not-apply"]
    assert "\ufffd" in str(result["patch"]) and "\\udc" not in json.dumps(result)
    main(["grade", str(EXAMPLE / "task.yaml"), "--patch", str(patch), "--sandbox", "local"])
    captured = capsys.readouterr()
    assert captured.out.startswith("FAIL 0.000") and "Traceback" not in captured.err
