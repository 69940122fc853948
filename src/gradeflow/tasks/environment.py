"""Task: describe the sandbox and pin the base (what the baseline cache key is made of)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.config import gradeflow_version
from gradeflow.models import EnvironmentFingerprint, TaskSpec
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.tasks._retry import INFRA_RETRIES, retry_on_infra
from gradeflow.tasks.repo import BaseRef, resolve_base

__all__ = ["describe_environment", "pin_base"]


@task(
    name="environment",
    cache_policy=NO_CACHE,
    retries=INFRA_RETRIES,
    retry_delay_seconds=1,
    retry_condition_fn=retry_on_infra,
)
def describe_environment(task_spec: TaskSpec, sandboxes: SandboxFactory) -> EnvironmentFingerprint:
    """The fingerprint every result carries; ``SandboxUnavailable`` when the sandbox cannot run."""
    facts = sandboxes.describe()
    seed = task_spec.run_env()["PYTHONHASHSEED"]
    return EnvironmentFingerprint(
        **{**facts.model_dump(), "pythonhashseed": seed},
        gradeflow_version=gradeflow_version(),
        task_spec_hash=task_spec.spec_hash(),
    )


@task(name="pin-base", cache_policy=NO_CACHE)
def pin_base(task_spec: TaskSpec) -> BaseRef:
    """The exact base revision (a commit id or a content hash)."""
    return resolve_base(task_spec)
