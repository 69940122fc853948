"""Retry policy shared by the Prefect tasks: only infrastructure errors are retried."""

from __future__ import annotations

from typing import Any

from gradeflow.errors import SandboxUnavailable

__all__ = ["INFRA_RETRIES", "retry_on_infra"]

INFRA_RETRIES = 2


def retry_on_infra(task: Any, task_run: Any, state: Any) -> bool:
    """Retry when the sandbox failed to run, never when the candidate or the base is at fault."""
    del task, task_run
    try:
        state.result()
    except SandboxUnavailable:
        return True
    except Exception:
        return False
    return False
