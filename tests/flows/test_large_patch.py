"""A diff larger than a flow run's parameters can carry is graded like any other (Prefect caps them at 512 KiB)."""

from __future__ import annotations

from pathlib import Path

from builders import EXAMPLES
from gradeflow import grade, load_task
from gradeflow.evaluation.ledger import Ledger
from gradeflow.evaluation.suite import Suite, SuiteItem
from gradeflow.flows.evaluate import evaluate
from gradeflow.models.spec import PATCH_PARAMETER_BYTES, Submission


def _with_data_file(size: int) -> str:
    """The calc example's reference fix plus a new data file of about ``size`` bytes."""
    lines = [f"+row {n:08d} " + "x" * 50 for n in range(size // 64)]
    data = "diff --git a/data/table.txt b/data/table.txt\nnew file mode 100644\n--- /dev/null\n"
    data += f"+++ b/data/table.txt\n@@ -0,0 +1,{len(lines)} @@\n" + "\n".join(lines) + "\n"
    return (EXAMPLES / "calc" / "reference.diff").read_text() + data


def test_a_600_kb_honest_patch_is_graded(prefect: None) -> None:
    del prefect
    patch = _with_data_file(600_000)
    assert len(patch) > 512 * 1024
    result = grade(EXAMPLES / "calc" / "task.yaml", patch=patch, sandbox="local")
    assert result.status == "graded"
    assert result.component("tests").score == 1.0
    assert "data/table.txt" in result.patch


def test_a_large_diff_travels_as_a_file_named_by_its_hash(tmp_path: Path) -> None:
    small, large = "+x\n", _with_data_file(PATCH_PARAMETER_BYTES + 1)
    assert Submission.of_patch("s", small).patch == small
    kept = Submission.of_patch("s", large)
    assert kept.patch is None and kept.patch_file is not None and kept.diff() == large
    assert Submission.of_patch("t", large).patch_file == kept.patch_file
    # What the flow run carries is a path, whatever the diff's size.
    assert len(kept.model_dump_json()) < 1000


def test_a_suite_larger_than_a_flow_runs_parameters_is_evaluated(tmp_path: Path, prefect: None) -> None:
    del prefect
    task = load_task(EXAMPLES / "calc" / "task.yaml")
    # Three diffs of ~200 KB each: none is kept in a file, together they pass Prefect's 512 KiB.
    patch = _with_data_file(200_000)
    assert len(patch) < PATCH_PARAMETER_BYTES < 3 * len(patch)
    items = [
        SuiteItem(task_id=task.task_id, submission=Submission.of_patch(f"s{n}", patch), run_id=f"r{n}")
        for n in range(3)
    ]
    suite = Suite(source="large", tasks={task.task_id: task}, items=items)
    assert suite.model_dump(mode="json") == {"source": "large", "tasks": 1, "items": 3}
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    try:
        outcome = evaluate(suite, ledger, sandbox="local", show_progress=False)
    finally:
        ledger.close()
    assert outcome.failed == []
    # Graded, each: the data file is outside the task's allowed files, which the constraints gate says.
    assert [r.status for r in outcome.records] == ["graded"] * 3
