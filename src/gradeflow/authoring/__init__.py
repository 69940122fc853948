"""Authoring task specs: derived from a reference fix (``task new``) or imported from SWE-bench instances.

Sits above the flows (it runs them to find which tests fail, pass or flip) and below the CLI.
"""

from gradeflow.authoring.derive import DerivedTests, derive_tests, node_id_of
from gradeflow.authoring.new_task import NewTask, NewTaskRequest, PreparedTask, new_task, prepare_new_task
from gradeflow.authoring.swebench import ImportReport, SkippedRow, import_instances, map_test_name

__all__ = [
    "DerivedTests",
    "ImportReport",
    "NewTask",
    "NewTaskRequest",
    "PreparedTask",
    "SkippedRow",
    "derive_tests",
    "import_instances",
    "map_test_name",
    "new_task",
    "node_id_of",
    "prepare_new_task",
]
