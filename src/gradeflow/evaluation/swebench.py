"""A SWE-bench-compatible run summary (``schema_version`` 2), so existing dashboards read gradeflow runs.

Buckets, per instance (task id) of the suite: ``empty_patch_ids`` when the prediction's patch is empty
(not counted as completed, as in SWE-bench), else ``resolved_ids`` when the grade passed,
``unresolved_ids`` when it was graded and did not pass, and ``error_ids`` when it is inconclusive or
has no record. Task specs without a prediction are ``incomplete_ids``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gradeflow.errors import SpecError
from gradeflow.evaluation.ledger import GradeRecord
from gradeflow.evaluation.suite import Suite

__all__ = ["swebench_summary", "write_swebench_summary"]


def swebench_summary(suite: Suite, records: Sequence[GradeRecord]) -> dict[str, Any]:
    """The summary of ``suite`` given its ledger ``records``; ``SpecError`` if a task has two submissions."""
    repeated = [task for task, count in Counter(i.task_id for i in suite.items).items() if count > 1]
    if repeated:
        raise SpecError(f"--swebench-report: one submission per task is needed; {repeated[0]!r} has several")
    by_run = {(r.task_id, r.run_id): r for r in records}
    resolved, unresolved, errors, empty = set(), set(), set(), set()
    for item in suite.items:
        record = by_run.get((item.task_id, item.run_id))
        if item.empty_patch:
            empty.add(item.task_id)
        elif record is None or record.status != "graded":
            errors.add(item.task_id)
        elif record.passed:
            resolved.add(item.task_id)
        else:
            unresolved.add(item.task_id)
    submitted = {i.task_id for i in suite.items}
    completed = resolved | unresolved
    return {
        "total_instances": len(suite.tasks),
        "submitted_instances": len(submitted),
        "completed_instances": len(completed),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(unresolved),
        "empty_patch_instances": len(empty),
        "error_instances": len(errors),
        "completed_ids": sorted(completed),
        "incomplete_ids": sorted(set(suite.tasks) - submitted),
        "empty_patch_ids": sorted(empty),
        "submitted_ids": sorted(submitted),
        "resolved_ids": sorted(resolved),
        "unresolved_ids": sorted(unresolved),
        "error_ids": sorted(errors),
        "schema_version": 2,
    }


def write_swebench_summary(path: str | Path, suite: Suite, records: Sequence[GradeRecord]) -> dict[str, Any]:
    """Write the summary as JSON to ``path`` and return it; ``SpecError`` when the file cannot be written."""
    summary = swebench_summary(suite, records)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"--swebench-report: cannot write {target}: {exc.strerror or exc}") from None
    return summary
