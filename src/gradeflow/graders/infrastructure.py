"""InfrastructureGrader: the gate on the test harness the patch may not change.

Test configuration (pytest's in every file it reads, the test sections of ``pyproject.toml``,
``setup.cfg``, ``tox.ini`` and ``package.json``) and code loaders (``*.dist-info``, ``*.egg-info``,
``*.pth``, ``sitecustomize.py``…) are sealed to the base for every run whatever the patch does; an
edit to them is also a failed gate, reason ``test-infrastructure-modified``, one message per edit.

| edits found                     | score | passed |
|---------------------------------|-------|--------|
| none                            | 1     | yes    |
| one or more                     | 0     | no     |

Files a task lists in ``tests.infrastructure_editable`` are never edits.
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
        del context
        messages = [
            f"{e.path}: {'the file' if e.what == 'file' else e.what} is test infrastructure "
            "(reset to the base for every run)"
            for e in self.edits
        ]
        return self.component(
            0.0 if self.edits else 1.0,
            not self.edits,
            details={"edits": [e.model_dump() for e in self.edits]},
            messages=messages,
            reason_codes=["test-infrastructure-modified"] if self.edits else [],
        )
