"""Retry policy shared by the Prefect tasks: the contract of ``errors.py`` (retryable ``InfraError`` only)."""

from __future__ import annotations

from typing import Any

from gradeflow.errors import InfraError

__all__ = ["INFRA_RETRIES", "retry_on_infra"]

INFRA_RETRIES = 2


def retry_on_infra(task: Any, task_run: Any, state: Any) -> bool:
    """Retry a transient environment failure (``InfraError.retryable``); never the candidate's or the base's."""
    del task, task_run
    try:
        state.result()
    except InfraError as exc:
        return exc.retryable
    except Exception:
        return False
    return False
