"""InfrastructureGrader: the gate on the test harness the patch may not change.

Test configuration (pytest's in every file it reads, the test sections of ``pyproject.toml``,
``setup.cfg``, ``tox.ini`` and ``package.json``) and code loaders (``*.dist-info``, ``*.egg-info``,
``*.pth``, ``sitecustomize.py``…) are sealed to the base for every run whatever the patch does; an
edit to them is also a failed gate, reason ``test-infrastructure-modified``, one message per edit.

| edits found                     | score | passed |
|---------------------------------|-------|--------|
| none                            | 1     | yes    |
| one or more                     | 0     | no     |

Files a task lists in ``tests.infrastructure_editable`` are never edits. Under ``tests.hidden_edits: reset``
(SWE-bench's procedure, which applies the whole patch and resets only the test patch's files) an edit is
reset before every run as always, reported in ``details["reset_by_hidden_tests"]`` and
``details["strict_reason_codes"]``, and not failed: a model's patch carries SWE-bench's own ``-rA`` in
sphinx's ``tox.ini`` (its image edits the file, the diff is taken against the base), and the official verdict
does not count it. The edit has no effect on any run either way.
"""

from __future__ import annotations

from gradeflow.graders.base import Grader, GradingContext
from gradeflow.models import GradeComponent
from gradeflow.models.evidence import InfrastructureEdit

__all__ = ["InfrastructureGrader"]


class InfrastructureGrader(Grader):
    """Gate: the patch leaves the test configuration and code loaders as the base has them."""

    name = "test_infrastructure"
    role = "gate"

    def __init__(self, edits: list[InfrastructureEdit]) -> None:
        self.edits = edits

    def grade(self, context: GradingContext) -> GradeComponent:
        reset = context.task.tests.hidden_edits == "reset"
        edits = [] if reset else list(self.edits)
        set_aside = list(self.edits) if reset else []
        messages = [
            f"{e.path}: {'the file' if e.what == 'file' else e.what} is test infrastructure "
            "(reset to the base for every run)"
            for e in edits
        ]
        details: dict[str, object] = {"edits": [e.model_dump() for e in edits]}
        if set_aside:
            details["reset_by_hidden_tests"] = sorted({e.path for e in set_aside})
            details["strict_reason_codes"] = ["test-infrastructure-modified"]
            details["strict_messages"] = [
                f"{e.path}: {'the file' if e.what == 'file' else e.what} is test infrastructure" for e in set_aside
            ]
            messages += [
                f"{e.path}: test infrastructure; reset to the base for every run, not a failure under "
                "tests.hidden_edits: reset"
                for e in set_aside
            ]
        return self.component(
            0.0 if edits else 1.0,
            not edits,
            details=details,
            messages=messages,
            reason_codes=["test-infrastructure-modified"] if edits else [],
        )
