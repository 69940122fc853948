"""The varied re-run's choices that need no sandbox: which tests it repeats, the run's hash seed, where it starts
and when a run started beside the main run is taken."""

from __future__ import annotations

import os

import pytest

from builders import make_task
from gradeflow import config
from gradeflow.config import varied_beside_main
from gradeflow.errors import InfraError, SpecError
from gradeflow.integrity.harness import Varied
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import Outcome, TestRunEvidence, VariedRunEvidence
from gradeflow.tasks.varied import VariedAhead, rerun_ids

F1, F2, P1, P2 = "t.py::f1", "t.py::f2", "t.py::p1", "t.py::p2"
COMMAND = "pytest --junitxml={junit}"


def _task(**tests: object) -> TaskSpec:
    return TaskSpec.model_validate(make_task(tests={"command": COMMAND, **tests}))


def _run(outcomes: dict[str, Outcome]) -> TestRunEvidence:
    return TestRunEvidence(exit_code=0, junit_found=True, outcomes=outcomes)


def test_the_varied_run_repeats_the_fail_to_pass_tests_only_when_all_of_them_passed() -> None:
    task = _task(fail_to_pass=[F1, F2], pass_to_pass=[P1])
    assert rerun_ids(task, _run({F1: "passed", F2: "passed", P1: "passed"})) == [F1, F2]
    assert rerun_ids(task, _run({F1: "passed", F2: "failed", P1: "passed"})) == []  # a failing grade pays nothing
    assert rerun_ids(task, _run({F1: "passed", F2: "passed", P1: "error"})) == []


def test_a_task_that_turns_it_off_repeats_nothing() -> None:
    passing = _run({F1: "passed", P1: "passed"})
    assert rerun_ids(_task(fail_to_pass=[F1], pass_to_pass=[P1]), passing) == [F1]
    assert rerun_ids(_task(fail_to_pass=[F1], pass_to_pass=[P1], varied_run=False), passing) == []


def test_without_fail_to_pass_it_repeats_the_pass_to_pass_tests_that_passed_when_none_broke() -> None:
    task = _task(pass_to_pass=[P1, P2])
    assert rerun_ids(task, _run({P1: "passed", P2: "skipped"})) == [P1]
    assert rerun_ids(task, _run({P1: "passed", P2: "failed"})) == []  # broken: the grade fails anyway
    assert rerun_ids(task, _run({P1: "skipped", P2: "skipped"})) == []


def test_the_hash_seed_is_nonzero_the_same_for_a_task_and_another_for_another_task() -> None:
    one, again = _task(pass_to_pass=[P1]), _task(pass_to_pass=[P1])
    other = TaskSpec.model_validate({**make_task(tests={"command": COMMAND}), "task_id": "other"})
    assert one.hash_seed() == again.hash_seed() != other.hash_seed()
    assert int(one.hash_seed()) > 0 and one.run_env()["PYTHONHASHSEED"] == one.hash_seed()
    pinned = TaskSpec.model_validate({**make_task(tests={"command": COMMAND}), "env": {"PYTHONHASHSEED": "7"}})
    assert pinned.run_env()["PYTHONHASHSEED"] == "7"  # the task's own env wins
    # A varied run pins none of its own; the task's still holds.
    assert "PYTHONHASHSEED" not in one.run_env(pinned_seed=False)
    assert pinned.run_env(pinned_seed=False)["PYTHONHASHSEED"] == "7"


def test_a_varied_run_draws_a_script_name_and_more_recursion_room() -> None:
    drawn = [Varied.drawn() for _ in range(50)]
    assert all(v.main.startswith("{workspace}/") and v.main.endswith(".py") and v.recursion >= 200 for v in drawn)


@pytest.mark.parametrize(
    ("setting", "cores", "load", "runnable", "beside"),
    [
        ("auto", 2, 0.5, 1, True),  # a core to spare
        ("auto", 2, 1.2, 1, True),  # one-at-a-time grades hold the average near one; the second core is idle now
        ("auto", 2, 1.2, 2, False),  # another thread runnable now: no idle core
        ("auto", 2, 1.6, 1, False),  # busy for the last minute, idle at this instant
        ("auto", 1, 0.0, 1, False),  # one core: the varied run would take the main run's
        ("AUTO", 8, 6.9, 7, True),
        ("auto", 8, 6.9, 8, False),
        ("auto", 2, 0.0, None, True),  # no /proc/loadavg: the average decides
        ("", 4, 0.0, 1, True),  # unset or empty: auto
        ("beside", 2, 9.0, 9, True),
        ("after", 8, 0.0, 1, False),
    ],
)
def test_where_the_varied_run_starts_follows_the_setting_and_the_idle_cores(
    setting: str, cores: int, load: float, runnable: int | None, beside: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRADEFLOW_VARIED_RUN", setting)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cores)))
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(config, "_runnable_threads", lambda: runnable)
    assert varied_beside_main() is beside


def test_the_runnable_count_is_read_from_the_kernel() -> None:
    """This thread is runnable while it reads, so the count is at least one (Linux's ``/proc/loadavg``)."""
    found = config._runnable_threads()
    assert found is not None and found >= 1


def test_a_malformed_varied_run_setting_names_the_variable_and_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADEFLOW_VARIED_RUN", "later")
    with pytest.raises(SpecError, match=r"^GRADEFLOW_VARIED_RUN: 'later' is not one of auto, beside, after$"):
        varied_beside_main()


def test_a_run_started_beside_is_taken_only_for_the_same_tests_under_the_same_names() -> None:
    done = VariedRunEvidence(tests=[F1, F2], outcomes={F1: "passed", F2: "passed"})
    ahead = VariedAhead(lambda: done, [F1, F2], [F1, F2, "t.py::f1"])
    assert ahead.taken_for([F1, F2], ["t.py::f1", F1, F2]) is done  # the same names in another order
    assert ahead.taken_for([F1], [F1, "t.py::f1"]) is None  # fewer tests
    assert ahead.taken_for([F1, F2], [F1, F2]) is None  # another spelling selected
    assert ahead.taken_for([F2, F1], [F1, F2, "t.py::f1"]) is None


def test_what_a_run_started_beside_raised_is_raised_where_it_is_taken_and_nowhere_else() -> None:
    def broken() -> VariedRunEvidence:
        raise InfraError("the varied run's sandbox cannot start")

    ahead = VariedAhead(broken, [F1], [F1])
    assert ahead.taken_for([F2], [F2]) is None  # not wanted: what it raised is nobody's
    with pytest.raises(InfraError, match="cannot start"):
        ahead.taken_for([F1], [F1])
