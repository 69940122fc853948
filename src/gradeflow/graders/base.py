"""The grader contract: evidence in, one :class:`GradeComponent` out.

Graders never run commands or touch the file system themselves. What they need arrives in a
:class:`GradingContext`: the task spec, a read-only :class:`WorkspaceView` of the graded files, and
the evidence earlier steps gathered. Subclass :class:`Grader` to add a component of your own.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel

from gradeflow.models import ChangedFile, GradeComponent, Role, TaskSpec
from gradeflow.models.evidence import (
    FunctionChange,
    FunctionMetrics,
    PatchTestsEvidence,
    PerfEvidence,
    TestRunEvidence,
)

__all__ = ["FindingsGate", "Grader", "GradingContext", "InMemoryWorkspace", "WorkspaceView"]


class WorkspaceView(abc.ABC):
    """Read-only access to the graded workspace and the patch that produced it."""

    patch: str
    changes: list[ChangedFile]

    def changed_files(self) -> list[str]:
        """Paths (relative to the repository root) the patch adds or modifies, binaries included."""
        return [c.path for c in self.changes if c.status != "removed"]

    @abc.abstractmethod
    def read(self, path: str) -> str:
        """The text of a workspace file; ``FileNotFoundError`` when absent."""

    @abc.abstractmethod
    def added_lines(self, path: str) -> list[str]:
        """The lines the patch adds to ``path``."""


@dataclass
class InMemoryWorkspace(WorkspaceView):
    """A workspace held in memory, for tests and for graders run outside a flow."""

    files: dict[str, str] = field(default_factory=dict)
    changes: list[ChangedFile] = field(default_factory=list)
    patch: str = ""
    added: dict[str, list[str]] = field(default_factory=dict)

    def read(self, path: str) -> str:
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]

    def added_lines(self, path: str) -> list[str]:
        return self.added.get(path, [])


@dataclass(frozen=True)
class GradingContext:
    """Everything a grader may look at."""

    task: TaskSpec
    workspace: WorkspaceView
    tests: TestRunEvidence | None = None
    baseline_tests: TestRunEvidence | None = None
    """The same test command on the pristine base (for skipped pass_to_pass tests)."""
    functions: list[FunctionMetrics] | None = None
    unreadable: list[str] = field(default_factory=list)
    """Source files the quality step could not parse (the candidate's): each one fails the quality rules."""
    perf: PerfEvidence | None = None
    patch_tests: PatchTestsEvidence | None = None
    """The patch's own tests, run on the pristine base and on the candidate."""
    changed_functions: list[FunctionChange] | None = None
    """Functions of the changed non-test Python files whose lines the patch touched, before and after."""

    @property
    def patch(self) -> str:
        return self.workspace.patch

    def changed_files(self) -> list[str]:
        """Shortcut for ``workspace.changed_files()``, so a grader may treat the context as the workspace."""
        return self.workspace.changed_files()

    def read(self, path: str) -> str:
        """Shortcut for ``workspace.read(path)``."""
        return self.workspace.read(path)


class Grader(abc.ABC):
    """One narrow question about a submission, answered as a :class:`GradeComponent`."""

    name: ClassVar[str]
    role: Role = "objective"
    dimension: ClassVar[str] = "behavior"
    """The rubric dimension this grader's components belong to (a profile may remap them)."""
    reason_codes: ClassVar[Mapping[str, str]] = {}
    """The codes a custom grader emits beyond the built-in ones (code → meaning), registered when it is
    loaded so that a profile may name them in ``hard_gates``."""

    @abc.abstractmethod
    def grade(self, context: GradingContext) -> GradeComponent:
        """Score the submission. A custom grader that raises is reported unscored (``grader-error``)."""

    def component(self, score: float, passed: bool, **fields: object) -> GradeComponent:
        """A component carrying this grader's name, role and dimension."""
        return GradeComponent.model_validate(
            {
                "name": self.name,
                "role": self.role,
                "dimension": self.dimension,
                "score": score,
                "passed": passed,
                **fields,
            }
        )

    def unscored(self, message: str, *reason_codes: str, **details: object) -> GradeComponent:
        """A component saying there was no evidence to score: reported, never weighed."""
        return self.component(
            0.0, False, scored=False, messages=[message], reason_codes=list(reason_codes), details=details
        )


F = TypeVar("F", bound=BaseModel)


class FindingsGate(Grader, Generic[F]):
    """A detector's gate: passes when none of its findings counts, unscored when it could not run.

    ``findings`` is ``None`` when the detector could not run (``unavailable`` says why): the component
    is unscored with ``detector-unavailable``. Every finding is shown in ``details[details_key]``; those
    :meth:`counted` returns fail the gate with :attr:`violation` and one message each.
    """

    role = "gate"
    violation: ClassVar[str]
    """The reason code a counted finding gives."""
    details_key: ClassVar[str] = "findings"

    def __init__(self, findings: list[F] | None, unavailable: str = "") -> None:
        self.findings = findings
        self.unavailable = unavailable

    def counted(self, findings: list[F]) -> list[F]:
        """The findings that fail the gate (all of them unless a subclass forgives some)."""
        return findings

    @abc.abstractmethod
    def describe(self, finding: F) -> str:
        """One message line for a counted finding."""

    def grade(self, context: GradingContext) -> GradeComponent:
        del context
        if self.findings is None:
            return self.unscored(f"{self.name}: {self.unavailable}", "detector-unavailable")
        details = {self.details_key: [f.model_dump() for f in self.findings]}
        counted = self.counted(self.findings)
        if not counted:
            return self.component(1.0, True, details=details)
        messages = [self.describe(f) for f in counted]
        return self.component(0.0, False, details=details, messages=messages, reason_codes=[self.violation])
