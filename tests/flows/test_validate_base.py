"""What ``validate`` reports about a task's lists against the base run's outcomes."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import make_task
from gradeflow.flows.validate import base_problems, perf_warnings
from gradeflow.models import TaskSpec
from gradeflow.spec import load_task

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

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


@pytest.mark.parametrize(
    ("perf", "warned"),
    [
        ({"command": "python bench.py"}, True),
        ({"command": "python bench.py {seed}"}, False),
        ({"command": "python bench.py", "check": "python check.py {seed}"}, False),
        (None, False),
    ],
)
def test_a_benchmark_with_a_fixed_input_is_warned_about(perf: dict[str, str] | None, warned: bool) -> None:
    task = TaskSpec.model_validate(make_task(type="perf" if perf else "bugfix", perf=perf))
    assert bool(perf_warnings(task)) is warned
    assert all("{seed}" in w for w in perf_warnings(task))


def test_the_bundled_perf_tasks_draw_their_input_from_a_seed() -> None:
    tasks = [load_task(p) for p in sorted(EXAMPLES.glob("*/task.yaml"))]
    assert [t.task_id for t in tasks if t.perf is not None and perf_warnings(t)] == []
    assert any(t.perf is not None for t in tasks)
