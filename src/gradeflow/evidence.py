"""Typed evidence the tasks gather and the graders score: nothing here runs or reads anything."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = [
    "FunctionMetrics",
    "Outcome",
    "PerfEvidence",
    "TestCaseResult",
    "TestRunEvidence",
]

Outcome = Literal["passed", "failed", "error", "skipped", "missing"]
"""A test's outcome; ``missing`` means it was absent from the report."""


class TestCaseResult(BaseModel):
    """One ``<testcase>`` of a JUnit report."""

    __test__ = False

    classname: str = ""
    name: str
    file: str | None = None
    outcome: Literal["passed", "failed", "error", "skipped"]
    message: str = ""
    """The first line of the failure, error or skip message, cut short."""


class TestRunEvidence(BaseModel):
    """What one run of the test command showed."""

    __test__ = False

    exit_code: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    duration: float = 0.0
    setup_failed: bool = False
    """The task's setup command failed in the candidate's workspace (no test ran)."""
    junit_found: bool = False
    junit_error: str | None = None
    """Why the report could not be read (malformed, too large, written before the run)."""
    junit_tampered: bool = False
    """The report contradicts the run (passes from a failing command, written before the run started)."""
    cases: list[TestCaseResult] = Field(default_factory=list)
    outcomes: dict[str, Outcome] = Field(default_factory=dict)
    """Outcome of every test id the task names (fail_to_pass, pass_to_pass, quarantine)."""
    output_tail: str = ""
    """The end of the command's output, for messages."""


class FunctionMetrics(BaseModel):
    """Size and complexity of one function or method."""

    path: str
    name: str
    """Qualified name within the module, e.g. ``Report.render`` or ``outer.inner``."""
    lineno: int
    length: int
    """Lines from the ``def`` line (decorators excluded) to the last line of the body."""
    complexity: int
    """Cyclomatic complexity: 1 plus one per decision point."""


class PerfEvidence(BaseModel):
    """Interleaved benchmark timings, in seconds."""

    baseline: list[float] = Field(default_factory=list)
    candidate: list[float] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    """Runs that failed or produced no timing, with why."""
    unchanged: bool = False
    """The submission changes nothing, so nothing was timed: identical code is not faster."""
