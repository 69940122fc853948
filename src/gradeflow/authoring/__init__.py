"""Authoring task specs: derived from a reference fix (``task new``) or imported from SWE-bench instances.

Sits above the flows (it runs them to find which tests fail, pass or flip) and below the CLI.
"""

from gradeflow.authoring.derive import DerivedTests, derive_tests, node_id_of
from gradeflow.authoring.new_task import NewTask, NewTaskRequest, PreparedTask, new_task, prepare_new_task

__all__ = [
    "DerivedTests",
    "NewTask",
    "NewTaskRequest",
    "PreparedTask",
    "derive_tests",
    "new_task",
    "node_id_of",
    "prepare_new_task",
]
