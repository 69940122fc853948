"""``tests.last_run_of``: a name several tests print (a Django docstring's first line) has the outcome of the one of
them that ran last, in a log's order and in the recorder's, as SWE-bench's log parser keeps the status printed last."""

from __future__ import annotations

import pytest
import yaml
from pydantic import ValidationError

from builders import make_task
from docs_fences import SWEBENCH, fence
from gradeflow.models import TaskSpec, TestsSpec
from gradeflow.models.evidence import CaseOutcome, TestCaseResult
from gradeflow.tasks._junit import outcomes_for
from gradeflow.tasks._logformats import parse_log
from gradeflow.tasks._testrun import task_outcomes
from gradeflow.tasks.flaky import RepeatedRuns, flaky_tests

SHARED = "Falsey values (such as an empty string) are rejected."
FIRST, SECOND = "sessions.tests.DatabaseSessionTests::test_empty_key", "sessions.tests.FileSessionTests::test_empty_key"
LAST_RUN = {SHARED: [FIRST, SECOND]}


def _log(first: str, second: str, *, first_class: str = "DatabaseSessionTests") -> bytes:
    """Django's ``runtests.py --verbosity 2``: two tests printing the same docstring line, ``first_class``'s first."""
    other = "FileSessionTests" if first_class == "DatabaseSessionTests" else "DatabaseSessionTests"
    lines = [
        f"test_empty_key (sessions.tests.{first_class})\n{SHARED} ... {first}\n",
        "test_other (sessions.tests.DatabaseSessionTests) ... ok\n",
        f"test_empty_key (sessions.tests.{other})\n{SHARED} ... {second}\n",
    ]
    for at, status in ((0, first), (2, second)):
        if status == "FAIL":
            name = first_class if at == 0 else other
            lines.append(
                f"\n{'=' * 70}\nFAIL: test_empty_key (sessions.tests.{name})\n{SHARED}\n{'-' * 70}\n"
                'Traceback (most recent call last):\n  File "tests.py", line 9\nAssertionError: not rejected\n'
            )
    return "".join(lines).encode()


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("ok", "FAIL", "failed"),  # the last to run fails: the name fails, though the other passed
        ("FAIL", "ok", "passed"),  # the last to run passes: the name passes (SWE-bench keeps the last status)
        ("ok", "ok", "passed"),
        ("ERROR", "skipped 'no database'", "skipped"),
    ],
)
def test_a_shared_docstring_line_has_the_outcome_of_the_test_that_printed_it_last(
    first: str, second: str, expected: str
) -> None:
    cases = parse_log("django-log", _log(first, second))
    outcomes = outcomes_for([SHARED, "sessions.tests.DatabaseSessionTests::test_other"], cases, LAST_RUN)
    assert outcomes == {SHARED: expected, "sessions.tests.DatabaseSessionTests::test_other": "passed"}
    # The run's order decides, not the order the task lists the ids in.
    assert outcomes_for([SHARED], cases, {SHARED: [SECOND, FIRST]}) == {SHARED: expected}


def test_the_order_is_the_runs_whichever_test_that_is() -> None:
    # FileSessionTests ran first here: DatabaseSessionTests, last, decides.
    cases = parse_log("django-log", _log("FAIL", "ok", first_class="FileSessionTests"))
    assert [(c.classname.rpartition(".")[2], c.outcome) for c in cases if c.name == "test_empty_key"] == [
        ("FileSessionTests", "failed"),
        ("DatabaseSessionTests", "passed"),
    ]
    assert outcomes_for([SHARED], cases, LAST_RUN) == {SHARED: "passed"}


def test_a_name_none_of_whose_tests_ran_is_missing_and_a_name_is_never_matched_as_an_id() -> None:
    ran = [TestCaseResult(classname="sessions.tests.CacheSessionTests", name="test_empty_key", outcome="passed")]
    assert outcomes_for([SHARED], ran, LAST_RUN) == {SHARED: "missing"}
    literal = [TestCaseResult(classname="", name=SHARED, outcome="passed")]
    assert outcomes_for([SHARED], literal, LAST_RUN) == {SHARED: "missing"}


def _recorded(*entries: tuple[str, CaseOutcome]) -> list[TestCaseResult]:
    """Cases as :func:`gradeflow.integrity.recorder.read_recorded` gives them: in the recorder's sequence."""
    return [
        TestCaseResult(classname=ident.rpartition(".")[0], name=ident.rpartition(".")[2], outcome=outcome)
        for ident, outcome in entries
    ]


def _task(**tests: object) -> TaskSpec:
    spec = make_task(tests={"command": "python tests/runtests.py -v 2", "report": "django-log", **tests})
    return TaskSpec.model_validate(spec)


def test_the_recorders_sequence_decides_for_a_task_that_lists_the_name() -> None:
    task = _task(
        fail_to_pass=[SHARED], pass_to_pass=["sessions.tests.DatabaseSessionTests::test_other"], last_run_of=LAST_RUN
    )
    db, file = "sessions.tests.DatabaseSessionTests", "sessions.tests.FileSessionTests"
    last_fails = _recorded(
        (f"{db}.test_empty_key", "passed"), (f"{db}.test_other", "passed"), (f"{file}.test_empty_key", "failed")
    )
    assert task_outcomes(task, last_fails) == {SHARED: "failed", f"{db}::test_other": "passed"}
    last_passes = _recorded((f"{file}.test_empty_key", "failed"), (f"{db}.test_empty_key", "passed"))
    assert task_outcomes(task, last_passes)[SHARED] == "passed"
    # A test with subtests records each failing subtest, then nothing more: the last test's worst outcome stands.
    subtests = _recorded(
        (f"{db}.test_empty_key", "passed"), (f"{file}.test_empty_key", "failed"), (f"{file}.test_empty_key", "error")
    )
    assert task_outcomes(task, subtests)[SHARED] == "error"


def test_a_task_lists_each_last_run_name_and_expands_it_to_its_ids() -> None:
    task = _task(pass_to_pass=[SHARED, "m.T::test_x"], last_run_of=LAST_RUN)
    assert task.tests.expanded([SHARED, "m.T::test_x", FIRST]) == [SHARED, FIRST, SECOND, "m.T::test_x"]
    broken: list[dict[str, list[str]]] = [{"Not listed.": [FIRST]}, {SHARED: []}, {SHARED: [SHARED, FIRST]}]
    for last_run_of in broken:
        with pytest.raises(ValidationError, match=r"tests\.last_run_of"):
            _task(pass_to_pass=[SHARED], last_run_of=last_run_of)


def test_the_swebench_pages_excerpt_loads() -> None:
    excerpt = yaml.safe_load(fence(SWEBENCH, "tests:").text)["tests"]
    tests = TestsSpec.model_validate({"command": "python tests/runtests.py", "report": "django-log", **excerpt})
    [name] = tests.pass_to_pass
    assert name.startswith("An exception report") and len(tests.last_run_of[name]) == 2
    assert tests.expanded([name]) == [name, *tests.last_run_of[name]]


def test_a_flaky_test_a_listed_name_stands_for_is_scored() -> None:
    task = _task(pass_to_pass=[SHARED], quarantine=["m.T::test_q"], last_run_of=LAST_RUN)
    repeated = RepeatedRuns(side="base")
    db, file = "sessions.tests.DatabaseSessionTests", "sessions.tests.FileSessionTests"
    for outcome in ("passed", "failed"):
        repeated.record(_recorded((f"{db}.test_empty_key", "passed"), (f"{file}.test_empty_key", outcome)))
    [flaky] = flaky_tests(task, repeated)
    assert (flaky.test, flaky.scored, flaky.quarantined) == (f"{file}::test_empty_key", True, False)
