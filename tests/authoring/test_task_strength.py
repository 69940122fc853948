"""``gradeflow task strength`` and ``validate --strength``: mutants of the reference graded by the real grade flow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from evaluate_helpers import record
from gradeflow.cli import main
from gradeflow.evaluation.ledger import Ledger
from gradeflow.spec import load_task

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BASE = '''def clamp(x, lo, hi):
    """Clamp x into [lo, hi]."""
    return max(x, lo)
'''
FIX = '''diff --git a/src/clamp.py b/src/clamp.py
--- a/src/clamp.py
+++ b/src/clamp.py
@@ -1,3 +1,7 @@
 def clamp(x, lo, hi):
     """Clamp x into [lo, hi]."""
-    return max(x, lo)
+    if x < lo:
+        return lo
+    if x > hi:
+        return hi
+    return x
'''
# The weak task's tests check the high branch and a value inside: nothing looks at the low branch.
TESTS = """from clamp import clamp


def test_clamps_high():
    assert clamp(15, 0, 10) == 10


def test_inside():
    assert clamp(5, 0, 10) == 5
"""


def _weak_task(tmp_path: Path) -> Path:
    repo = tmp_path / "weak" / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src" / "clamp.py").write_text(BASE)
    (repo / "tests" / "test_clamp.py").write_text(TESTS)
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = src\n")
    (tmp_path / "weak" / "reference.diff").write_text(FIX)
    spec = {
        "task_id": "clamp-weak",
        "type": "bugfix",
        "repo": "./repo",
        "tests": {
            "command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}",
            "fail_to_pass": ["tests/test_clamp.py::test_clamps_high"],
            "pass_to_pass": ["tests/test_clamp.py::test_inside"],
        },
        "constraints": {"protected": ["tests/**"]},
        "environment": {"sandbox": "local"},
    }
    task = tmp_path / "weak" / "task.yaml"
    task.write_text(yaml.safe_dump(spec))
    return task


@pytest.mark.slow
@pytest.mark.usefixtures("prefect")
def test_the_bundled_calc_task_kills_every_wrong_patch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = str(tmp_path / "ledger.db")
    task = str(EXAMPLES / "calc" / "task.yaml")
    assert main(["task", "strength", task, "--sandbox", "local", "--ledger", ledger, "--json", "--min", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reference_passed"] and report["kill_rate"] == 1.0 and report["survived"] == 0
    kinds = {o["kind"] for o in report["outcomes"]}
    assert {"do-nothing", "revert-block", "drop-statement", "early-return", "negate-condition"} <= kinds
    patches = [o["patch"] for o in report["outcomes"] if o["kind"] != "do-nothing"]
    assert patches and all(p.startswith("diff --git a/src/calc.py") for p in patches)
    store = Ledger(ledger)
    (kept,) = store.strengths().values()
    store.close()
    assert (kept.task_id, kept.task_spec_hash, kept.kill_rate) == ("calc-divzero", load_task(task).spec_hash(), 1.0)


@pytest.mark.slow
@pytest.mark.usefixtures("prefect")
def test_a_weak_task_lists_its_survivors_fails_validate_and_is_flagged_in_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = _weak_task(tmp_path)
    ledger = str(tmp_path / "ledger.db")
    assert main(["task", "strength", str(task), "--mutants", "3", "--ledger", ledger, "--min", "0.9"]) == 1
    out = capsys.readouterr().out
    assert "strength of clamp-weak: kill rate 75% (3 of 4 wrong patches rejected, 1 survived" in out
    assert "SURVIVED     mutant-2-drop-statement (drop-statement src/clamp.py:3)" in out
    survivor = out.split("survivor mutant-2-drop-statement (drop-statement), against the reference fix:\n", 1)[1]
    # The low branch gone, unnoticed:
    assert "-    if x < lo:\n-        return lo\n+    pass\n     if x > hi:" in survivor

    digest = load_task(task).spec_hash()
    store = Ledger(ledger)
    store.add(record(task_id="clamp-weak", task_spec_hash=digest, content_key="k-weak"))
    store.add(record(task_id="calc", task_spec_hash="strong", content_key="k-strong"))
    store.close()
    assert main(["report", "--ledger", ledger, "--by", "model_id"]) == 0
    assert "weak tasks: clamp-weak" in capsys.readouterr().out

    reference = str(task.parent / "reference.diff")
    assert main(["validate", str(task), "--reference", reference, "--strength", "0.9"]) == 1
    out = capsys.readouterr().out
    assert "INVALID" in out and "task strength" in out and "is below --strength 0.9" in out
    assert main(["validate", str(task), "--strength", "0.5"]) == 2  # mutants need the reference
