"""The parameters of the service deployments, as pydantic models so the Prefect UI renders a form.

A request names its task spec by file path (what a worker loads) and by ``task_id`` (what the sender
knows); the flow refuses a spec whose ``task_id`` differs, so a misrouted request never grades the
wrong task.
"""

from __future__ import annotations

import base64

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gradeflow.engine.credentials import has_password
from gradeflow.models.spec import SANDBOX_KINDS, is_utf8, patch_bytes

__all__ = ["EvaluateRequest", "GradeRequest", "carried"]

_SANDBOX = "^(" + "|".join(SANDBOX_KINDS) + ")$"


def _no_password(value: str | None) -> str | None:
    if has_password(value):
        raise ValueError(
            "a ledger URL with a password would be stored in the flow run's parameters, readable through the "
            "Prefect API: give the URL without it and set $GRADEFLOW_DATABASE_URL (or PGPASSWORD) on the worker"
        )
    return value


_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


class GradeRequest(BaseModel):
    """One submission to grade: which task spec, which patch, and who sent it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str = Field(pattern=_ID)
    """The ``task_id`` of the task spec; must match the spec found at ``task_path``."""
    task_path: str
    """Path of the ``task.yaml`` as the worker sees it (the webhook resolves it from its ``--tasks`` folder)."""
    submission_id: str = Field(pattern=_ID)
    """The submission's identifier; the flow run is named ``grade-{task_id}-{submission_id}``."""
    patch: str = Field(json_schema_extra={"format": "text"})
    """The unified diff to grade (may be empty: an empty submission); empty when ``patch_base64`` carries it."""
    patch_base64: str | None = None
    """The diff's bytes in base64 when they are not UTF-8 (JSON cannot carry them as text): see :func:`carried`."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Short strings about the sender (``model``, ``repo``, ``pr``, …); ``model`` becomes a run tag."""
    profile: str | None = None
    """A shipped grading profile name or a profile YAML path; default: the task spec's."""
    sandbox: str | None = Field(default=None, pattern=_SANDBOX)
    """``isolated``, ``docker`` or ``local``; default: the task spec's ``environment.sandbox``."""
    ledger: str | None = None
    """When set, the result is also recorded in this ledger (URL or SQLite path), once per submission; never
    with a password (the worker's ``$GRADEFLOW_DATABASE_URL`` supplies it)."""

    _ledger_public = field_validator("ledger")(_no_password)

    def diff(self) -> str:
        """The diff's text, undecodable bytes as surrogate escapes (as a diff file is read)."""
        if self.patch_base64 is None:
            return self.patch
        return base64.b64decode(self.patch_base64).decode("utf-8", errors="surrogateescape")


def carried(patch: str) -> dict[str, str]:
    """The request fields that carry ``patch``: as text when its bytes are UTF-8, else as base64 of its bytes."""
    data = patch_bytes(patch)
    if is_utf8(data):
        return {"patch": patch}
    return {"patch": "", "patch_base64": base64.b64encode(data).decode()}


class EvaluateRequest(BaseModel):
    """One evaluation of a suite into the ledger (what the nightly schedule runs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: str
    """Path of ``suite.yaml`` as the worker sees it."""
    ledger: str | None = None
    """Ledger database URL (never with a password) or SQLite path; default ``$GRADEFLOW_DATABASE_URL`` or
    ``.gradeflow/ledger.db``."""
    concurrency: int = Field(default=2, ge=1, le=64)
    """Submissions graded at once."""
    profile: str | None = None
    sandbox: str | None = Field(default=None, pattern=_SANDBOX)
    reports: str = ".gradeflow/reports"
    """Folder the HTML report is written to (linked from the run); relative to the worker's working folder."""
    dask_address: str | None = None
    """A Dask scheduler (``tcp://host:8786``): submissions are graded on its workers instead of threads."""

    _ledger_public = field_validator("ledger")(_no_password)
