"""The service grades untrusted work isolated only: ``local`` needs ``trust_local_code: true``.

A webhook or a deployment grades whatever reaches it. The local sandbox runs that code with the
service's own rights, so ``serve``, ``deploy`` and ``webhook`` refuse to start when a task they would
grade names it (:func:`refuse_untrusted_local`), and a served run refuses a request that asks for it
(:func:`check_request_sandbox`), unless the config says every submission is trusted. The served
processes learn the config's answer through :data:`TRUST_VARIABLE` (set by ``serve``, and put in the
deployments' job variables by ``deploy``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from gradeflow.errors import SpecError
from gradeflow.models import TaskSpec

__all__ = ["TRUST_VARIABLE", "check_request_sandbox", "refuse_untrusted_local", "trusted_environment"]

TRUST_VARIABLE = "GRADEFLOW_TRUST_LOCAL_CODE"
"""``1`` in a served process whose config says ``trust_local_code: true``."""
_WHY = (
    "the local sandbox runs untrusted submissions with the service's rights: grade them isolated (the default) "
    "or in docker, or set trust_local_code: true in the service config if every submission is trusted"
)


def refuse_untrusted_local(trusted: bool, specs: Iterable[TaskSpec], what: str) -> None:
    """``SpecError`` naming the first task of ``specs`` that uses the local sandbox, unless ``trusted``."""
    if trusted:
        return
    for spec in specs:
        if spec.environment.sandbox == "local":
            raise SpecError(f"{what}: task {spec.task_id} sets environment.sandbox: local; {_WHY}")


def check_request_sandbox(task_spec: TaskSpec, sandbox: str | None) -> None:
    """``SpecError`` when a served run would grade in the local sandbox without the config's trust."""
    if (sandbox or task_spec.environment.sandbox) == "local" and os.environ.get(TRUST_VARIABLE) != "1":
        raise SpecError(f"task {task_spec.task_id}: a served grade in the local sandbox; {_WHY}")


def trusted_environment(trusted: bool) -> dict[str, str]:
    """The variables a served process needs to know the config's trust (none when it trusts nothing)."""
    return {TRUST_VARIABLE: "1"} if trusted else {}
