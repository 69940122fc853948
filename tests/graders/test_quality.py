"""Function metrics from the AST and the quality grader's scoring."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest
from radon.complexity import cc_visit

from gradeflow.graders.base import GradingContext, InMemoryWorkspace
from gradeflow.graders.quality import QualityGrader, SourceError, measure_source
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import FunctionMetrics


def _complexity(source: str, name: str = "f") -> int:
    metrics = {m.name: m for m in measure_source("m.py", textwrap.dedent(source))}
    return metrics[name].complexity


COMPLEXITY_CASES = [
    ("straight", "def f(x):\n    return x\n", 1),
    ("if", "def f(x):\n    if x:\n        return 1\n", 2),
    ("if-else not counted", "def f(x):\n    if x:\n        return 1\n    else:\n        return 2\n", 2),
    (
        "elif each",
        "def f(x):\n    if x == 1:\n        pass\n    elif x == 2:\n        pass\n"
        "    elif x == 3:\n        pass\n    else:\n        pass\n",
        4,
    ),
    ("for", "def f(x):\n    for i in x:\n        pass\n", 2),
    ("for-else not counted", "def f(x):\n    for i in x:\n        pass\n    else:\n        pass\n", 2),
    ("while", "def f(x):\n    while x:\n        pass\n", 2),
    ("while-else not counted", "def f(x):\n    while x:\n        pass\n    else:\n        pass\n", 2),
    ("async for", "async def f(x):\n    async for i in x:\n        pass\n", 2),
    (
        "except each",
        "def f():\n    try:\n        pass\n    except A:\n        pass\n    except B:\n        pass\n"
        "    except Exception:\n        pass\n",
        4,
    ),
    (
        "try else/finally not counted",
        "def f():\n    try:\n        pass\n    except A:\n        pass\n    else:\n        pass\n"
        "    finally:\n        pass\n",
        2,
    ),
    ("try-finally alone", "def f():\n    try:\n        pass\n    finally:\n        pass\n", 1),
    (
        "except* each",
        "def f():\n    try:\n        pass\n    except* A:\n        pass\n    except* B:\n        pass\n",
        3,
    ),
    ("and", "def f(a, b):\n    return a and b\n", 2),
    ("or", "def f(a, b):\n    return a or b\n", 2),
    ("and chain", "def f(a, b, c):\n    return a and b and c\n", 3),
    ("mixed chain", "def f(a, b, c, d):\n    return a and b or c and d\n", 4),
    ("ternary", "def f(a, b, c):\n    return a if b else c\n", 2),
    ("nested ternary", "def f(a, b, c):\n    return a if b else (c if a else b)\n", 3),
    ("list comp", "def f(x):\n    return [a for a in x]\n", 2),
    ("list comp for-for-if-if", "def f(x):\n    return [b for a in x for b in a if a if b]\n", 5),
    ("set comp", "def f(x):\n    return {a for a in x if a}\n", 3),
    ("dict comp", "def f(x):\n    return {a: b for a, b in x for c in b if c}\n", 4),
    ("generator", "def f(x):\n    return sum(a for a in x if a)\n", 3),
    ("async comprehension", "async def f(x):\n    return [a async for a in x]\n", 2),
    ("assert", "def f(x):\n    assert x\n    assert x, 'msg'\n", 3),
    (
        "match cases, final wildcard not counted",
        "def f(x):\n    match x:\n        case 1:\n            pass\n        case 2:\n            pass\n"
        "        case _:\n            pass\n",
        3,
    ),
    (
        "match without wildcard",
        "def f(x):\n    match x:\n        case 1:\n            pass\n        case 2:\n            pass\n"
        "        case [a, b]:\n            pass\n",
        4,
    ),
    (
        "match capture catch-all not counted",
        "def f(x):\n    match x:\n        case 1:\n            pass\n        case other:\n            pass\n",
        2,
    ),
    (
        "match guarded wildcard counted",
        "def f(x):\n    match x:\n        case 1:\n            pass\n        case _ if x:\n            pass\n",
        3,
    ),
    ("with not counted", "def f(x):\n    with x as a, x as b:\n        pass\n", 1),
    ("async with not counted", "async def f(x):\n    async with x:\n        pass\n", 1),
    ("lambda in enclosing function", "def f(x):\n    g = lambda y: y if y else x\n    return g\n", 2),
    (
        "nested function not added",
        "def f(x):\n    def g(y):\n        if y:\n            pass\n        for i in y:\n            pass\n"
        "    if x:\n        pass\n    return g\n",
        2,
    ),
    (
        "nested class not added",
        "def f(x):\n    class C:\n        flag = x if x else None\n\n"
        "        def m(self):\n            if self:\n                pass\n    return C\n",
        1,
    ),
    ("decorator and defaults not counted", "@d(a or b)\ndef f(x=c if d else e):\n    pass\n", 1),
]


@pytest.mark.parametrize(
    ("source", "expected"), [c[1:] for c in COMPLEXITY_CASES], ids=[c[0] for c in COMPLEXITY_CASES]
)
def test_complexity_rules(source: str, expected: int) -> None:
    assert _complexity(source) == expected


RADON_AGREES = [
    "def f(x):\n    if x == 1:\n        return 1\n    elif x == 2:\n        return 2\n    return 3\n",
    "def f(x):\n    for i in x:\n        while i:\n            i -= 1\n",
    "def f():\n    try:\n        pass\n    except A:\n        pass\n    except B:\n        pass\n",
    "def f(a, b, c, d):\n    return a and b or c and d\n",
    "def f(x):\n    return [b for a in x for b in a if a if b] + [y if y else 0 for y in x]\n",
    "def f(x):\n    assert x\n    g = lambda y: y or x\n    return g\n",
    "def f(x):\n    def g(y):\n        return y and x\n    return g if x else None\n",
]


@pytest.mark.parametrize("source", RADON_AGREES)
def test_agrees_with_radon_on_plain_rules(source: str) -> None:
    (radon_block,) = cc_visit(source)
    assert _complexity(source) == radon_block.complexity


@pytest.mark.parametrize(
    ("source", "ours", "radon"),
    [
        ("def f(x):\n    for i in x:\n        pass\n    else:\n        pass\n", 2, 3),
        ("def f():\n    try:\n        pass\n    except A:\n        pass\n    else:\n        pass\n", 2, 3),
        ("def f():\n    try:\n        pass\n    except* A:\n        pass\n", 2, 1),
    ],
    ids=["loop-else", "try-else", "except-star"],
)
def test_documented_differences_from_radon(source: str, ours: int, radon: int) -> None:
    (radon_block,) = cc_visit(source)
    assert (_complexity(source), radon_block.complexity) == (ours, radon)


QUALIFIED = """\
def top():
    def inner():
        def deepest():
            pass
    class Local:
        def m(self):
            pass

class Report:
    def render(self):
        pass

    async def fetch(self):
        pass

    class Inner:
        def m(self):
            pass

if True:
    def conditional():
        pass
"""


def test_qualified_names_cover_methods_nested_functions_and_nested_classes() -> None:
    names = [m.name for m in measure_source("m.py", QUALIFIED)]
    assert names == [
        "top",
        "top.inner",
        "top.inner.deepest",
        "top.Local.m",
        "Report.render",
        "Report.fetch",
        "Report.Inner.m",
        "conditional",
    ]


def test_length_runs_from_def_line_excluding_decorators() -> None:
    source = "import functools\n\n@functools.cache\n@staticmethod\ndef f(\n    x,\n):\n    y = x\n\n    return y\n"
    (metrics,) = measure_source("pkg/m.py", source)
    assert (metrics.path, metrics.name, metrics.lineno, metrics.length) == ("pkg/m.py", "f", 5, 6)


def test_one_line_function_has_length_one() -> None:
    (metrics,) = measure_source("m.py", "def f(): return 1\n")
    assert metrics.length == 1


def test_module_without_functions_measures_nothing() -> None:
    assert measure_source("m.py", "X = 1 if y else 2\n") == []


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(:\n    pass\n", "bad.py:1: cannot parse: "),
        ("x = 1\ndef f():\nreturn 1\n", "bad.py:3: cannot parse: "),
        ("x = 1\0\n", "bad.py"),
    ],
    ids=["syntax", "indentation", "null-byte"],
)
def test_unparsable_source_raises_source_error_naming_the_path(source: str, message: str) -> None:
    with pytest.raises(SourceError) as caught:
        measure_source("bad.py", source)
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, ValueError)
    assert caught.value.path == "bad.py"


def test_deep_expression_the_parser_accepts_does_not_overflow_the_walk() -> None:
    source = "def f(x):\n    return " + " + ".join(["(x if x else 1)"] * 1500) + "\n"
    assert _complexity(source) == 1501


def test_expression_too_deep_for_the_parser_is_a_source_error() -> None:
    source = "def f(x):\n    return " + " + ".join(["x"] * 100_000) + "\n"
    with pytest.raises(SourceError, match=r"^deep\.py: cannot parse: "):
        measure_source("deep.py", source)


# --- the grader -------------------------------------------------------------------------------


def _task(task_type: str = "refactor", quality: dict[str, Any] | None = None) -> TaskSpec:
    data: dict[str, Any] = {
        "task_id": "t",
        "type": task_type,
        "repo": "/tmp/r",
        "tests": {"command": "pytest --junitxml={junit}"},
    }
    if quality is not None:
        data["quality"] = quality
    return TaskSpec.model_validate(data)


def _fn(name: str, length: int, complexity: int, lineno: int = 10) -> FunctionMetrics:
    return FunctionMetrics(path="src/m.py", name=name, lineno=lineno, length=length, complexity=complexity)


def _grade(task: TaskSpec, functions: list[FunctionMetrics] | None) -> Any:
    return QualityGrader().grade(GradingContext(task=task, workspace=InMemoryWorkspace(), functions=functions))


BOTH = {"max_function_length": 40, "max_cyclomatic_complexity": 8}
SMALL, LONG, COMPLEX = _fn("ok", 10, 2, 1), _fn("Report.render", 52, 3, 20), _fn("parse", 12, 11, 80)


@pytest.mark.parametrize(
    ("quality", "functions", "score", "passed"),
    [
        (None, None, 1.0, True),
        ({}, None, 1.0, True),
        ({"max_function_length": 40}, [], 1.0, True),
        (BOTH, [SMALL], 1.0, True),
        (BOTH, [SMALL, LONG], 0.5, False),
        (BOTH, [SMALL, COMPLEX], 0.5, False),
        (BOTH, [LONG, COMPLEX], 0.0, False),
        ({"max_function_length": 40}, [SMALL, COMPLEX], 1.0, True),
        ({"max_cyclomatic_complexity": 8}, [LONG, COMPLEX], 0.0, False),
        ({"max_function_length": 52, "max_cyclomatic_complexity": 11}, [LONG, COMPLEX], 1.0, True),
    ],
    ids=[
        "no-quality",
        "no-limits",
        "nothing-measured",
        "all-within",
        "length-broken",
        "complexity-broken",
        "both-broken",
        "undeclared-rule-ignored",
        "single-rule-broken",
        "limit-is-inclusive",
    ],
)
def test_score_is_share_of_declared_rules_unbroken(
    quality: dict[str, Any] | None, functions: list[FunctionMetrics] | None, score: float, passed: bool
) -> None:
    component = _grade(_task(quality=quality), functions)
    assert (component.name, component.score, component.passed) == ("quality", score, passed)
    assert component.reason_codes == ([] if passed else ["quality-limit-exceeded"])
    json.dumps(component.details)


@pytest.mark.parametrize(
    ("task_type", "role"),
    [("refactor", "objective"), ("bugfix", "gate"), ("feature", "gate"), ("perf", "gate")],
)
def test_role_is_objective_only_for_refactors(task_type: str, role: str) -> None:
    assert _grade(_task(task_type, BOTH), [LONG]).role == role
    assert _grade(_task(task_type), None).role == role
    assert QualityGrader.role == "objective"  # the per-call role never leaks into the class


def test_no_limits_declared_says_so() -> None:
    component = _grade(_task(quality={"paths": ["src/**/*.py"]}), [LONG])
    assert component.messages == ["no quality limits declared"]
    assert component.details["rules"] == {}


def test_messages_name_each_offender_with_file_and_line() -> None:
    component = _grade(_task(quality=BOTH), [SMALL, LONG, COMPLEX])
    assert component.messages == [
        "src/m.py:20 Report.render: length 52 > 40",
        "src/m.py:80 parse: complexity 11 > 8",
    ]


def test_details_list_violations_and_worst_functions() -> None:
    details = _grade(_task(quality=BOTH), [SMALL, LONG, COMPLEX]).details
    assert details["functions_measured"] == 3
    assert details["rules"]["max_function_length"] == {
        "limit": 40,
        "violations": [{"path": "src/m.py", "name": "Report.render", "lineno": 20, "value": 52}],
    }
    assert details["rules"]["max_cyclomatic_complexity"]["violations"][0]["name"] == "parse"
    assert details["worst"]["length"]["name"] == "Report.render"
    assert details["worst"]["complexity"] == {"path": "src/m.py", "name": "parse", "lineno": 80, "value": 11}


def test_passing_message_states_the_limits() -> None:
    component = _grade(_task(quality=BOTH), [SMALL])
    assert component.messages == ["all 1 functions within limits (length <= 40, complexity <= 8)"]


def test_many_offenders_are_capped_in_messages_not_in_details() -> None:
    functions = [_fn(f"f{i}", 41 + i, 1, lineno=i + 1) for i in range(30)]
    component = _grade(_task(quality={"max_function_length": 40}), functions)
    assert len(component.messages) == 21
    assert component.messages[0].startswith("src/m.py:30 f29: length 70 > 40")
    assert component.messages[-1].startswith("... and 10 more")
    assert len(component.details["rules"]["max_function_length"]["violations"]) == 30


def test_missing_evidence_with_declared_limits_raises() -> None:
    with pytest.raises(ValueError, match="quality evidence missing"):
        _grade(_task(quality=BOTH), None)


def test_measured_source_feeds_the_grader() -> None:
    source = "def f(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n" for i in range(9))
    functions = measure_source("src/m.py", source)
    component = _grade(_task("bugfix", {"max_cyclomatic_complexity": 8}), functions)
    assert (component.score, component.role) == (0.0, "gate")
    assert component.messages == ["src/m.py:1 f: complexity 10 > 8"]
