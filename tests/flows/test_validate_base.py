"""What ``validate`` reports about a task's lists against the base run's outcomes."""

from __future__ import annotations

import pytest

from builders import make_task
from gradeflow.flows.validate import base_problems
from gradeflow.models import TaskSpec

TASK = TaskSpec.model_validate(
    make_task(tests={"command": "pytest --junitxml={junit}", "fail_to_pass": ["t::f"], "pass_to_pass": ["t::p"]})
)


@pytest.mark.parametrize(
    ("f2p", "p2p", "problems"),
    [
        ("failed", "passed", []),
        ("error", "skipped", []),
        # An expected failure on the base is kept by the grader when it stays one (SWE-bench's lists hold them).
        ("failed", "xfailed", []),
        ("xfailed", "passed", []),
        ("passed", "passed", ["fail_to_pass t::f does not fail on the base (it is passed)"]),
        ("failed", "failed", ["pass_to_pass t::p does not pass on the base (it is failed)"]),
        ("failed", "missing", ["pass_to_pass t::p does not pass on the base (it is missing)"]),
    ],
)
def test_base_problems(f2p: str, p2p: str, problems: list[str]) -> None:
    outcomes = {k: v for k, v in {"t::f": f2p, "t::p": p2p}.items() if v != "missing"}
    assert base_problems(TASK, outcomes) == problems
