"""Suite files and SWE-bench predictions: loading, pairing, content keys, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import gradeflow.evaluation.suite as suite_module
from evaluate_helpers import write_task
from gradeflow.errors import SpecError
from gradeflow.evaluation.suite import content_key, load_predictions, load_suite, patch_hash
from gradeflow.models import Submission

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _suite(tmp_path: Path, submissions: list[dict[str, object]], tasks: list[str] | None = None) -> Path:
    if not (tmp_path / "t1").exists():
        write_task(tmp_path, "t1")
    (tmp_path / "a.diff").write_text("diff --git a/x b/x\n")
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"tasks": tasks or ["t1/task.yaml"], "submissions": submissions}))
    return path


def test_example_suite_is_every_example_by_three_models_by_three_runs() -> None:
    suite = load_suite(EXAMPLES / "suite.yaml")
    assert sorted(suite.tasks) == ["calc-divzero", "perf-primes", "tidy-refactor"]
    assert len(suite.items) == 27
    assert {i.model_id for i in suite.items} == {"m-a", "m-b", "m-c"}
    first = suite.items[0]
    assert (first.run_id, first.prompt_revision, first.tool_calls, first.labels) == (
        "m-a-r1",
        "p1",
        7,
        {"tools": "basic"},
    )
    assert first.submission.patch == (EXAMPLES / "calc" / "reference.diff").read_text()
    assert [i.empty_patch for i in suite.items].count(True) == 3


def test_workspace_submission_and_its_tree_hash(tmp_path: Path) -> None:
    workspace = tmp_path / "runs" / "w1"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "calc.py").write_text("x = 1\n")
    path = _suite(tmp_path, [{"task_id": "t1", "workspace": "runs/w1/", "run_id": "r-002", "model_id": "m-b"}])
    item = load_suite(path).items[0]
    assert item.submission.workspace == workspace.resolve()
    assert item.submission.submission_id == "m-b.r-002"
    before = patch_hash(item.submission)
    (workspace / "__pycache__").mkdir()
    (workspace / "__pycache__" / "calc.pyc").write_bytes(b"\0")
    assert patch_hash(item.submission) == before
    (workspace / "src" / "calc.py").write_text("x = 2\n")
    assert patch_hash(item.submission) != before


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"task_id": "nope", "patch": "a.diff", "run_id": "r1"}, "submissions.0.task_id: no task spec 'nope'"),
        ({"task_id": "t1", "patch": "missing.diff", "run_id": "r1"}, "submissions.0.patch: cannot read"),
        ({"task_id": "t1", "workspace": "nowhere", "run_id": "r1"}, "submissions.0.workspace:"),
        ({"task_id": "t1", "patch": "a.diff", "workspace": ".", "run_id": "r1"}, "exactly one of patch or workspace"),
        ({"task_id": "t1", "patch": "a.diff"}, "missing required key 'submissions.0.run_id'"),
        ({"task_id": "t1", "patch": "a.diff", "run_id": "r1", "colour": "red"}, "unknown key 'submissions.0.colour'"),
        ({"task_id": "t1", "patch": "a.diff", "run_id": "r1", "labels": {"tools": "a b"}}, "short identifiers"),
        ({"task_id": "t1", "patch": "a.diff", "run_id": "r1", "tool_calls": -1}, "submissions.0.tool_calls"),
    ],
)
def test_suite_errors_name_the_file_and_the_key(tmp_path: Path, entry: dict[str, object], message: str) -> None:
    path = _suite(tmp_path, [entry])
    with pytest.raises(SpecError) as caught:
        load_suite(path)
    assert str(path) in str(caught.value) and message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_run_id_is_used_once_per_task(tmp_path: Path) -> None:
    entry: dict[str, object] = {"task_id": "t1", "patch": "a.diff", "run_id": "r1"}
    with pytest.raises(SpecError, match=r"submissions.1.run_id: 'r1' already used for task 't1' by submissions.0"):
        load_suite(_suite(tmp_path, [entry, {**entry, "model_id": "m-b"}]))


def test_missing_suite_and_missing_task_files(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="suite file not found"):
        load_suite(tmp_path / "none.yaml")
    with pytest.raises(SpecError, match="task spec not found"):
        load_suite(_suite(tmp_path, [{"task_id": "t1", "patch": "a.diff", "run_id": "r"}], tasks=["zz/task.yaml"]))


def test_content_key_covers_spec_patch_profile_and_version(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = load_suite(_suite(tmp_path, [{"task_id": "t1", "patch": "a.diff", "run_id": "r"}])).tasks["t1"]
    one, two = patch_hash(Submission(patch="a")), patch_hash(Submission(patch="b"))
    key = content_key(spec, one, None)
    assert key == content_key(spec, one, "default")
    assert len({key, content_key(spec, two, None), content_key(spec, one, "strict")}) == 3
    monkeypatch.setattr(suite_module, "gradeflow_version", lambda: "9.9.9")
    assert content_key(spec, one, None) != key


def _predictions(tmp_path: Path, lines: list[object]) -> Path:
    path = tmp_path / "preds.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_predictions_pair_with_task_specs_by_instance_id(tmp_path: Path) -> None:
    for task_id in ("t1", "t2"):
        write_task(tmp_path, task_id)
    path = _predictions(
        tmp_path,
        [
            {"instance_id": "t1", "model_patch": "diff --git a/x b/x\n", "model_name_or_path": "org/model-x"},
            {"instance_id": "t2", "model_patch": None, "model_name_or_path": "org/model-x", "run_id": "r9"},
        ],
    )
    suite = load_predictions(path, str(tmp_path / "*" / "task.yaml"))
    assert sorted(suite.tasks) == ["t1", "t2"]
    first, second = suite.items
    assert (first.task_id, first.model_id, first.run_id, first.empty_patch) == (
        "t1",
        "org/model-x",
        "preds/org/model-x",
        False,
    )
    assert (second.run_id, second.empty_patch, second.submission.patch) == ("r9", True, "")


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{not json"], "preds.jsonl:1: not JSON"),
        ([{"instance_id": "zz", "model_patch": ""}], "preds.jsonl:1: instance_id: no task spec with task_id 'zz'"),
        ([{"instance_id": "t1", "model_patch": 3}], "preds.jsonl:1: model_patch"),
        (
            [{"instance_id": "t1", "model_patch": ""}, {"instance_id": "t1", "model_patch": ""}],
            "preds.jsonl:2: instance_id 't1' repeats line 1",
        ),
    ],
)
def test_prediction_errors_name_the_line(tmp_path: Path, lines: list[object], message: str) -> None:
    write_task(tmp_path, "t1")
    path = _predictions(tmp_path, [])
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    with pytest.raises(SpecError, match=message.replace(".", r"\.").replace("(", r"\(")):
        load_predictions(path, str(tmp_path / "*" / "task.yaml"))


def test_predictions_need_matching_task_specs(tmp_path: Path) -> None:
    path = _predictions(tmp_path, [{"instance_id": "t1", "model_patch": ""}])
    with pytest.raises(SpecError, match="--tasks: no task spec matches"):
        load_predictions(path, str(tmp_path / "none" / "*.yaml"))
