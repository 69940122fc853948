"""TestEvidenceGrader table, the touched-function helpers that select the patch's tests, and allow_new_tests."""

from __future__ import annotations

import pytest

from builders import make_task
from gradeflow.graders import (
    ConstraintGrader,
    GradingContext,
    InMemoryWorkspace,
    PatchTestsEvidence,
    TestEvidenceGrader,
)
from gradeflow.models import ChangedFile, TaskSpec
from gradeflow.models.evidence import FunctionMetrics, HarnessSummary, TestCaseResult, TestRunEvidence, TouchedLines
from gradeflow.tasks._functions import selected_test_ids, touched_functions, touched_lines
from gradeflow.tasks._reach import function_lines

NEW = "tests/test_new.py"


def _run(outcomes: dict[str, str] | None, **fields: object) -> TestRunEvidence:
    if outcomes is None:
        return TestRunEvidence.model_validate(fields)
    cases = [TestCaseResult(classname="tests.test_new", name=n, outcome=o) for n, o in outcomes.items()]  # type: ignore[arg-type]
    return TestRunEvidence.model_validate({"junit_found": True, "cases": cases, "exit_code": 0, **fields})


def _grade(kind: str, evidence: PatchTestsEvidence):  # type: ignore[no-untyped-def]
    task = TaskSpec.model_validate(make_task(type=kind))
    context = GradingContext(task=task, workspace=InMemoryWorkspace(), patch_tests=evidence)
    return TestEvidenceGrader().grade(context)


def _evidence(base: TestRunEvidence | None, candidate: TestRunEvidence | None) -> PatchTestsEvidence:
    return PatchTestsEvidence(files=[NEW], selected=[NEW], base=base, candidate=candidate)


@pytest.mark.parametrize(
    ("base", "candidate", "score", "passed", "codes"),
    [
        ({"t": "failed"}, {"t": "passed"}, 1.0, True, []),
        ({"t": "failed", "u": "passed"}, {"t": "passed", "u": "passed"}, 1.0, True, []),  # one proving is enough
        ({"t": "passed"}, {"t": "passed"}, 0.25, False, ["test-does-not-fail-on-base"]),
        ({"t": "failed", "u": "failed"}, {"t": "passed", "u": "failed"}, 0.5, False, ["regression-test-fails"]),
        ({"t": "passed"}, {"t": "failed"}, 0.0, False, ["regression-test-fails", "test-does-not-fail-on-base"]),
        ({}, {"t": "passed"}, 1.0, True, []),  # the file does not even import on the base
        ({"t": "skipped"}, {"t": "passed", "s": "skipped"}, 1.0, True, []),  # skipped tests are left out of n
        ({"t": "error"}, {"t": "passed"}, 1.0, True, []),
        ({"t": "xfailed"}, {"t": "passed"}, 1.0, True, []),  # an expected failure on the base is a failure
        # ... and on the candidate: a test marked as still failing proves no fix
        ({"t": "failed", "u": "failed"}, {"t": "passed", "u": "xfailed"}, 0.5, False, ["regression-test-fails"]),
        ({"t": "failed"}, {"t": "xfailed"}, 0.0, False, ["regression-test-fails", "test-does-not-fail-on-base"]),
    ],
)
def test_scoring_table(
    base: dict[str, str], candidate: dict[str, str], score: float, passed: bool, codes: list[str]
) -> None:
    component = _grade("bugfix", _evidence(_run(base), _run(candidate)))
    assert (component.score, component.passed, component.reason_codes) == (score, passed, codes)
    assert (component.dimension, component.role, component.scored) == ("test_evidence", "objective", True)


TAMPERED = "the code under test did at run time what the base's run never did: sys.settrace from ./src/calc.py"


@pytest.mark.parametrize("profile", ["default", "strict", "rubric"])
@pytest.mark.parametrize("side", ["candidate", "base"])
def test_a_tampered_run_of_the_patchs_tests_is_junit_tampered_not_unavailable(side: str, profile: str) -> None:
    # The evidence run is the candidate's code (and, on the base, its test files): a profile that skips an
    # unavailable dimension (strict's test_evidence) must not turn tampering there into a skipped dimension.
    from gradeflow.profiles import load_profile

    runs = {"base": _run({"t": "failed"}), "candidate": _run({"t": "passed"})}
    runs[side] = _run({"t": "passed"}, junit_tampered=True, junit_error=TAMPERED)
    component = _grade("bugfix", _evidence(runs["base"], runs["candidate"]))
    assert (component.score, component.passed, component.scored) == (0.0, False, True)
    assert component.reason_codes == ["junit-tampered"]
    assert component.messages == [f"the patch's tests' report on the {side} cannot be trusted: {TAMPERED}"]
    assert "junit-tampered" in load_profile(profile).hard_gates


def test_a_base_run_that_times_out_counts_as_failing_there() -> None:
    component = _grade("bugfix", _evidence(_run(None, timed_out=True), _run({"t": "passed"})))
    assert (component.score, component.passed) == (1.0, True)


@pytest.mark.parametrize("kind", ["bugfix", "feature"])
def test_no_test_on_a_bugfix_or_feature_is_a_real_zero(kind: str) -> None:
    component = _grade(kind, PatchTestsEvidence())
    assert (component.score, component.scored, component.reason_codes) == (0.0, True, ["missing-regression-test"])


@pytest.mark.parametrize("kind", ["refactor", "perf"])
def test_no_test_on_a_refactor_or_perf_task_is_missing_evidence(kind: str) -> None:
    component = _grade(kind, PatchTestsEvidence())
    assert (component.scored, component.reason_codes) == (False, [])
    assert "none is expected" in component.messages[0]


@pytest.mark.parametrize(("kind", "scored"), [("bugfix", True), ("refactor", False)])
def test_a_patch_whose_tests_are_all_skipped_brings_no_test(kind: str, scored: bool) -> None:
    component = _grade(kind, _evidence(_run({"t": "failed"}), _run({"t": "skipped", "u": "skipped"})))
    assert (component.score, component.scored) == (0.0, scored)
    assert "its tests are all skipped" in component.messages[0]
    assert component.reason_codes == (["missing-regression-test"] if scored else [])


def test_changing_only_a_helper_of_a_test_file_brings_no_test() -> None:
    component = _grade("bugfix", PatchTestsEvidence(files=["tests/conftest.py"]))
    assert component.reason_codes == ["missing-regression-test"] and "tests/conftest.py" in component.messages[0]


@pytest.mark.parametrize(
    ("base", "candidate", "why"),
    [
        (_run({"t": "failed"}), _run(None, timed_out=True), "killed on the candidate"),
        (_run({"t": "failed"}), _run(None, exit_code=4), "no usable report on the candidate"),
        (_run({"t": "failed"}), _run({}), "none of the patch's tests was collected"),
        (_run(None, junit_found=True, junit_error="bad xml"), _run({"t": "passed"}), "on the base: bad xml"),
        (None, _run({"t": "passed"}), "not run on the base"),
    ],
)
def test_unusable_runs_are_missing_evidence_never_a_zero(
    base: TestRunEvidence | None, candidate: TestRunEvidence, why: str
) -> None:
    component = _grade("bugfix", _evidence(base, candidate))
    assert (component.scored, component.reason_codes) == (False, ["test-evidence-unavailable"])
    assert why in component.messages[0]


def test_details_show_each_test_on_both_sides() -> None:
    component = _grade("bugfix", _evidence(_run({"t": "failed"}), _run({"t": "passed"})))
    assert component.details["tests"] == {"tests.test_new::t": {"base": "failed", "candidate": "passed"}}
    assert component.details["proving"] == ["tests.test_new::t"]


PATCH = "\n".join(
    [
        "diff --git a/tests/test_calc.py b/tests/test_calc.py",
        "--- a/tests/test_calc.py",
        "+++ b/tests/test_calc.py",
        "@@ -1,6 +1,9 @@",
        " def test_add():",
        "-    assert add(1, 2) == 3",
        "+    assert add(1, 2) == 3.0",
        " ",
        " ",
        " def test_sub():",
        "     assert sub(2, 1) == 1",
        "+",
        "+def test_new():",
        "+    assert divide(1, 0) is None",
        "",
    ]
)


def _f(name: str, lineno: int, length: int, complexity: int = 1, path: str = "tests/test_calc.py") -> FunctionMetrics:
    return FunctionMetrics(path=path, name=name, lineno=lineno, length=length, complexity=complexity)


def test_touched_lines_reads_target_and_source_line_numbers() -> None:
    lines = touched_lines(PATCH)["tests/test_calc.py"]
    assert (lines.old_path, lines.added, lines.removed) == ("tests/test_calc.py", {2, 7, 8, 9}, {2})
    assert touched_lines("not a diff") == {}


def test_touched_functions_and_selected_node_ids() -> None:
    before = [_f("test_add", 1, 2), _f("test_sub", 5, 2)]
    after = [_f("test_add", 1, 2), _f("test_sub", 5, 2), _f("test_new", 8, 2)]
    changes = touched_functions("tests/test_calc.py", before, after, touched_lines(PATCH)["tests/test_calc.py"])
    assert [c.name for c in changes] == ["test_add", "test_new"]
    assert selected_test_ids("tests/test_calc.py", changes, after) == [
        "tests/test_calc.py::test_add",
        "tests/test_calc.py::test_new",
    ]


@pytest.mark.parametrize(
    ("touched", "functions", "expected"),
    [
        (["TestX.test_a"], ["TestX.test_a", "TestX.test_b"], ["p.py::TestX::test_a"]),
        (["TestX.setUp", "TestX.test_a"], ["TestX.setUp", "TestX.test_a"], ["p.py::TestX"]),  # the whole class
        (["helper"], ["helper", "test_a"], []),  # module-level helpers select nothing
        (["test_a.inner", "test_a"], ["test_a", "test_a.inner"], ["p.py::test_a"]),
        (["test_outer.TestY"], ["test_outer", "test_outer.TestY"], []),
        (["Helper.test_a"], ["Helper.test_a"], []),  # not a Test* class
    ],
)
def test_selection_rules(touched: list[str], functions: list[str], expected: list[str]) -> None:
    metrics = [_f(name, i * 10 + 1, 5, path="p.py") for i, name in enumerate(functions)]
    by_name = {m.name: m for m in metrics}
    changes = touched_functions("p.py", [], metrics, TouchedLines(added={by_name[n].lineno for n in touched}))
    assert selected_test_ids("p.py", changes, metrics) == expected


def test_a_deleted_test_is_not_selected() -> None:
    changes = touched_functions("p.py", [_f("test_gone", 1, 3, path="p.py")], [], TouchedLines(removed={2}))
    assert [(c.name, c.after) for c in changes] == [("test_gone", None)]
    assert selected_test_ids("p.py", changes, []) == []


@pytest.mark.parametrize(
    ("allow", "status", "path", "passed"),
    [
        (True, "added", "tests/test_regression.py", True),
        (False, "added", "tests/test_regression.py", False),
        (True, "modified", "tests/test_calc.py", False),  # existing tests stay protected
        (True, "added", "tests/helpers.py", False),  # not a test file
        (True, "added", "tests/conftest.py", True),
    ],
)
def test_allow_new_tests_exempts_added_test_files_from_scope_rules(
    allow: bool, status: str, path: str, passed: bool
) -> None:
    task = TaskSpec.model_validate(
        make_task(constraints={"protected": ["tests/**"], "allowed_files": ["src/**"], "allow_new_tests": allow})
    )
    changes = [ChangedFile(path="src/calc.py"), ChangedFile(path=path, status=status)]  # type: ignore[arg-type]
    component = ConstraintGrader().grade(GradingContext(task=task, workspace=InMemoryWorkspace(changes=changes)))
    assert component.passed is passed


def _traced(base: dict[str, str], candidate: dict[str, str], reached: dict[str, list[str]], **harness: object):  # type: ignore[no-untyped-def]
    summary = HarnessSummary.model_validate({"reached": reached, **harness})
    evidence = _evidence(_run(base), _run(candidate, harness=summary))
    evidence.reach = {"src/calc.py": [21]}
    return evidence


@pytest.mark.parametrize(
    ("reached", "unmeasured", "score", "passed", "codes"),
    [
        ({f"{NEW}::t": ["src/calc.py:21"]}, [], 1.0, True, []),
        # fails on the base (AttributeError: a constant the patch adds) but runs none of the change
        ({f"{NEW}::t": []}, [], 0.25, False, ["test-does-not-reach-change"]),
        ({}, [], 0.25, False, ["test-does-not-reach-change"]),
        ({f"{NEW}::u": ["src/calc.py:21"]}, [], 0.25, False, ["test-does-not-reach-change"]),  # another test's
        ({}, [f"{NEW}::t"], 1.0, True, []),  # another trace function was set: not measured
    ],
)
def test_a_test_proves_only_when_it_runs_a_changed_line(
    reached: dict[str, list[str]], unmeasured: list[str], score: float, passed: bool, codes: list[str]
) -> None:
    evidence = _traced({"t": "failed"}, {"t": "passed"}, reached, reach_unmeasured=unmeasured)
    component = _grade("bugfix", evidence)
    assert (component.score, component.passed, component.reason_codes) == (score, passed, codes)


def test_a_patch_changing_no_function_line_brings_no_proving_test() -> None:
    evidence = _traced({"t": "failed"}, {"t": "passed"}, {f"{NEW}::t": []})
    evidence.reach = {}
    component = _grade("feature", evidence)
    assert (component.score, component.reason_codes) == (0.25, ["test-does-not-reach-change"])
    assert "no line inside a function" in component.messages[0]


def test_reach_is_not_required_where_it_was_not_measured() -> None:
    component = _grade("bugfix", _evidence(_run({"t": "failed"}), _run({"t": "passed"})))  # reach None: no harness
    assert (component.score, component.passed) == (1.0, True)


_SOURCE = '''X = 1

@dec
def f(a,
      b=2):
    """doc"""
    y = call(a,
             b)
    return lambda: y

class C:
    Z = 3
    def m(self): return 1
'''


@pytest.mark.parametrize(
    ("added", "expected"),
    [
        ({1}, []),  # a module-level constant runs at import, in no test
        ({3}, [7]),  # a decorator: the function's first statement after its docstring
        ({5}, [7]),  # a default argument
        ({8}, [7, 8]),  # a continuation line runs as its statement
        ({9}, [9]),
        ({12}, []),  # a class attribute
        ({13}, [13]),  # a one-line method
    ],
)
def test_function_lines(added: set[int], expected: list[int]) -> None:
    assert function_lines(_SOURCE, added) == expected


def test_function_lines_of_a_file_that_does_not_parse_are_none() -> None:
    assert function_lines("def f(:\n", {1}) == []
