"""Where an evaluation's submissions run: threads in the flow run, or the workers of a Dask cluster.

With ``dask_address`` the ``grade-and-record`` tasks are shipped (pickled) to the cluster's workers,
so everything they take must pickle: a :class:`~gradeflow.evaluation.ledger.Ledger` travels as its URL and reconnects.
Each Dask worker needs ``PREFECT_API_URL`` and the same ``GRADEFLOW_HOME`` and result storage as the
flow run (docs/operations.md).
"""

from __future__ import annotations

from typing import Any

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from gradeflow.service.params import EvaluateRequest

__all__ = ["task_runner"]


def task_runner(request: EvaluateRequest) -> TaskRunner[Any]:
    """A ``DaskTaskRunner`` on ``request.dask_address``, else ``request.concurrency`` threads."""
    if request.dask_address:
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(address=request.dask_address)
    return ThreadPoolTaskRunner(max_workers=request.concurrency)
