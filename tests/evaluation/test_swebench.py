"""SWE-bench interop: predictions in, a schema-2 summary out, with every bucket."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluate_helpers import WRONG, record, write_task
from fakes import BUG, FIX, diff, fake_pytest
from gradeflow.cli import main
from gradeflow.errors import SpecError
from gradeflow.evaluation.ledger import Ledger
from gradeflow.evaluation.suite import load_predictions, load_suite
from gradeflow.evaluation.swebench import swebench_summary, write_swebench_summary
from gradeflow.flows.evaluate import evaluate
from gradeflow.sandbox import FakeSandboxFactory

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KEYS = [
    "total_instances",
    "submitted_instances",
    "completed_instances",
    "resolved_instances",
    "unresolved_instances",
    "empty_patch_instances",
    "error_instances",
    "completed_ids",
    "incomplete_ids",
    "empty_patch_ids",
    "submitted_ids",
    "resolved_ids",
    "unresolved_ids",
    "error_ids",
    "schema_version",
]


def _write_predictions(path: Path, patches: dict[str, str | None]) -> Path:
    lines = [{"instance_id": i, "model_patch": p, "model_name_or_path": "org/agent"} for i, p in patches.items()]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_summary_buckets_from_records(tmp_path: Path) -> None:
    for task_id in ("a", "b", "c", "d", "e", "f"):
        write_task(tmp_path, task_id)
    preds = _write_predictions(tmp_path / "preds.jsonl", {"a": "x", "b": "x", "c": "x", "d": "", "e": "x"})
    suite = load_predictions(preds, str(tmp_path / "*" / "task.yaml"))
    run = "preds/org/agent"
    records = [
        record(task_id="a", run_id=run, passed=True),
        record(task_id="b", run_id=run, passed=False, score=0.0),
        record(task_id="c", run_id=run, status="inconclusive", score=None, passed=False),
        record(task_id="d", run_id=run, passed=False, score=0.0),
    ]  # e has no record: it could not be graded
    summary = write_swebench_summary(tmp_path / "out" / "summary.json", suite, records)
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == summary
    assert list(summary) == KEYS
    assert (summary["resolved_ids"], summary["unresolved_ids"], summary["error_ids"]) == (["a"], ["b"], ["c", "e"])
    assert (summary["empty_patch_ids"], summary["incomplete_ids"], summary["completed_ids"]) == (
        ["d"],
        ["f"],
        ["a", "b"],
    )
    assert summary["submitted_ids"] == ["a", "b", "c", "d", "e"]
    assert (summary["total_instances"], summary["submitted_instances"], summary["completed_instances"]) == (6, 5, 2)
    assert (summary["resolved_instances"], summary["error_instances"], summary["schema_version"]) == (1, 2, 2)


def test_a_summary_needs_one_submission_per_task(tmp_path: Path) -> None:
    write_task(tmp_path, "t1")
    (tmp_path / "x.diff").write_text("")
    (tmp_path / "suite.yaml").write_text(
        "tasks: [t1/task.yaml]\nsubmissions:\n"
        "  - {task_id: t1, patch: x.diff, run_id: r1}\n  - {task_id: t1, patch: x.diff, run_id: r2}\n"
    )
    with pytest.raises(SpecError, match="one submission per task"):
        swebench_summary(load_suite(tmp_path / "suite.yaml"), [])


@pytest.mark.usefixtures("prefect")
def test_predictions_round_trip_through_the_ledger(tmp_path: Path) -> None:
    for task_id in ("fixed", "wrong", "empty", "broken", "unsubmitted"):
        write_task(tmp_path, task_id)
    broken = diff(BUG, "def divide(a, b):  # BROKEN\n    return a / b\n")
    preds = _write_predictions(
        tmp_path / "preds.jsonl", {"fixed": diff(BUG, FIX), "wrong": diff(BUG, WRONG), "empty": None, "broken": broken}
    )
    suite = load_predictions(preds, str(tmp_path / "*" / "task.yaml"))
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    outcome = evaluate(suite, ledger, concurrency=2, sandbox=FakeSandboxFactory(fake_pytest), show_progress=False)
    ledger.close()
    summary = swebench_summary(suite, outcome.records)
    assert summary["resolved_ids"] == ["fixed"] and summary["unresolved_ids"] == ["wrong"]
    assert summary["error_ids"] == ["broken"] and summary["empty_patch_ids"] == ["empty"]
    assert summary["incomplete_ids"] == ["unsubmitted"] and summary["total_instances"] == 5
    assert {r.model_id for r in outcome.records} == {"org/agent"} and len(outcome.records) == 4


@pytest.mark.usefixtures("prefect")
def test_cli_round_trip_on_the_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preds = _write_predictions(
        tmp_path / "preds.jsonl",
        {"calc-divzero": (EXAMPLES / "calc" / "reference.diff").read_text(), "tidy-refactor": ""},
    )
    out = tmp_path / "summary.json"
    code = main(
        [
            "evaluate",
            "--predictions",
            str(preds),
            "--tasks",
            str(EXAMPLES / "*" / "task.yaml"),
            "--ledger",
            str(tmp_path / "ledger.db"),
            "--swebench-report",
            str(out),
            "--no-progress",
            "--json",
        ]
    )
    assert code == 0
    counts = json.loads(capsys.readouterr().out)
    assert (counts["submissions"], counts["graded"], counts["failed"]) == (2, 2, 0)
    summary = json.loads(out.read_text())
    assert summary["resolved_ids"] == ["calc-divzero"] and summary["empty_patch_ids"] == ["tidy-refactor"]
    assert "perf-primes" in summary["incomplete_ids"] and "calc-divzero" not in summary["incomplete_ids"]
    assert summary["total_instances"] == len(list(EXAMPLES.glob("*/task.yaml"))) and summary["schema_version"] == 2
