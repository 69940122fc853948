"""Function metrics from the AST and the quality grader's scoring."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest
from radon.complexity import cc_visit
from radon.visitors import ComplexityVisitor

from gradeflow.graders.base import GradingContext, InMemoryWorkspace
from gradeflow.graders.quality import QualityGrader, SourceError, measure_source, measure_units
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
        ("def f(x, y):\n    assert x or y\n", 3, 2),
    ],
    ids=["loop-else", "try-else", "except-star", "inside-assert"],
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


# --- code outside every def: lambdas, class bodies, the module -------------------------------


def _units(source: str) -> dict[str, FunctionMetrics]:
    return {m.name: m for m in measure_units("m.py", textwrap.dedent(source))}


UNITS = """\
TABLE = [a for a in range(3) if a]


@register(a or b)
def top(x=lambda y: y if y else 0) -> int:
    f = lambda z: z and x

    class Local:
        flag = x if x else None

        def m(self):
            pass

    return f


class Report(Base if TABLE else object):
    key = lambda self: (
        self.a or self.b
    )

    def render(self, wide=TABLE or None):
        pass
"""


def test_units_cover_functions_lambdas_class_bodies_and_the_module() -> None:
    found = [(m.kind, m.name, m.lineno, m.length, m.complexity) for m in measure_units("m.py", UNITS)]
    assert found == [
        # comprehension 2, decorator's `or` 1, the default lambda's conditional 1, the class base's 1
        ("module", "<module>", 1, 23, 6),
        ("lambda", "<lambda>", 5, 1, 2),
        ("function", "top", 5, 10, 2),
        ("lambda", "top.<lambda>", 6, 1, 2),
        ("class", "<class top.Local>", 8, 5, 2),
        ("function", "top.Local.m", 11, 2, 1),
        ("class", "<class Report>", 17, 7, 3),
        ("lambda", "Report.<lambda>", 18, 3, 2),
        ("function", "Report.render", 22, 2, 1),
    ]


def test_measure_source_keeps_to_functions() -> None:
    assert [m.name for m in measure_source("m.py", UNITS)] == ["top", "top.Local.m", "Report.render"]
    assert {m.kind for m in measure_source("m.py", UNITS)} == {"function"}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("X = 1\n", 1),
        ("X = 1 if y else 2\n", 2),
        ("try:\n    import a\nexcept ImportError:\n    a = None\n", 2),
        ("if a:\n    pass\nelif b and c:\n    pass\n", 4),
        ("for i in x:\n    while i:\n        i -= 1\n", 3),
        ("T = {k: v for k, v in x if v if k}\n", 4),
        ("assert x\n", 2),
        ("f = lambda a: a if a else (lambda b: b or a)\n", 3),
        ("def f(x=a or b):\n    if x:\n        pass\n", 2),
        ("@d(a if b else c)\nclass C(D if e else F):\n    x = 1 if y else 2\n", 3),
    ],
    ids=[
        "plain",
        "ternary",
        "try-except",
        "if-elif-and",
        "loops",
        "comprehension",
        "assert",
        "lambdas",
        "default",
        "decorator-and-base",
    ],
)
def test_module_counts_its_own_code(source: str, expected: int) -> None:
    assert _units(source)["<module>"].complexity == expected


MODULE_RADON_AGREES = [
    "X = [a for a in x if a]\nY = a and b or c\nif X:\n    Z = 1 if Y else 2\n",
    "_row = lambda r, w: (r if len(r) <= w else r[: w - 3] + '...')\n_tot = lambda s: [x for x in s if x] or None\n",
    "f = lambda a: (lambda b: b if b else a)(a and 1)\ndef g(y):\n    return y if y else 0\n",
    "try:\n    import a\nexcept ImportError:\n    a = None\nclass C:\n    x = 1 if a else 2\n",
    "while x:\n    x = [y for y in x if y]\nassert x\n",
]


@pytest.mark.parametrize("source", MODULE_RADON_AGREES)
def test_module_agrees_with_radons_module_level_complexity(source: str) -> None:
    assert _units(source)["<module>"].complexity == ComplexityVisitor.from_code(source).complexity


@pytest.mark.parametrize(
    "body",
    [
        "a if b else c",
        "[x for x in a if x] or (b and c)",
        "(lambda d: d if d else a)(b if c else a)",
        "{k: v for k in a for v in b if k if v}",
    ],
)
def test_lambda_agrees_with_radon_on_its_body(body: str) -> None:
    (unit,) = [m for m in measure_units("m.py", f"f = lambda a, b, c: {body}\n") if m.name == "<lambda>"][:1]
    assert unit.complexity == ComplexityVisitor.from_code(f"_ = ({body})\n").complexity


def test_class_body_agrees_with_radon_without_its_methods() -> None:
    source = (
        "class C:\n    x = 1 if a else 2\n    y = [z for z in x if z]\n    if a and b:\n        w = 1\n"
        "    def m(self):\n        return self if self else None\n"
    )
    (radon_class,) = [b for b in cc_visit(source) if b.name == "C" and hasattr(b, "methods")]
    own = radon_class.real_complexity - sum(m.complexity for m in radon_class.methods)
    assert _units(source)["<class C>"].complexity == own == 6


def test_lambda_defaults_count_where_the_lambda_stands_not_in_it() -> None:
    units = _units("def f(x):\n    g = lambda y=(x if x else 1): y\n    return g\n")
    assert (units["f"].complexity, units["f.<lambda>"].complexity) == (2, 1)


def test_nested_lambda_counts_toward_the_outer_one_and_on_its_own() -> None:
    found = [(m.name, m.lineno, m.complexity) for m in measure_units("m.py", "f = lambda a: lambda b: b or a\n")]
    assert sorted(found) == [("<lambda>", 1, 2), ("<lambda>", 1, 2), ("<module>", 1, 2)]


def test_deeply_nested_lambdas_are_measured_without_overflow() -> None:
    source = "f = " + "lambda: " * 600 + "a if b else c\n"
    lambdas = [m for m in measure_units("m.py", source) if m.kind == "lambda"]
    assert len(lambdas) == 600 and {m.complexity for m in lambdas} == {2}


def test_empty_module_is_one_unit_of_complexity_one() -> None:
    assert [(m.kind, m.name, m.complexity) for m in measure_units("m.py", "")] == [("module", "<module>", 1)]


# The red team's shape (red team 5, q_lambda): a function's branching moved out of the def, which stays
# simple. Each source is graded with max_function_length 12, max_cyclomatic_complexity 3.
ESCAPES = {
    "module-lambdas": (
        "_name = lambda r, w: r if len(r) <= w else r[: w - 3] + '...'\n"
        "_money = lambda c, a: '(' + c + str(-a) + ')' if a < 0 else c + str(a)\n"
        "_label = lambda n, q: n if q == 1 else n + ' x' + str(q)\n"
        "_footer = lambda t, n: [str(t)] + (['refund' if n == 1 else 'refunds'] if n else [])\n"
        "\n\ndef format_row(rec, currency, width):\n"
        "    return _label(_name(rec['name'], width), rec['qty']) + _money(currency, rec['amount'])\n",
        "<module>",
    ),
    "one-lambda": (
        "_row = lambda r, w: (r if len(r) <= w else r[:w]) if r else ('-' if w else '' if r is None else '?')\n"
        "\n\ndef format_row(rec, width):\n    return _row(rec, width)\n",
        "<lambda>",
    ),
    "class-body-lambdas": (
        "class _Parts:\n"
        "    name = staticmethod(lambda r, w: r if len(r) <= w else r[:w])\n"
        "    money = staticmethod(lambda c, a: c + str(-a) if a < 0 else c + str(a))\n"
        "    label = staticmethod(lambda n, q: n if q == 1 else n + str(q))\n"
        "\n\ndef format_row(rec, currency, width):\n"
        "    return _Parts.label(_Parts.name(rec['name'], width), 1) + _Parts.money(currency, 1)\n",
        "<class _Parts>",
    ),
    "default-arguments": (
        "def format_row(\n    rec,\n    width,\n"
        "    _name=lambda r, w: r if len(r) <= w else r[:w],\n"
        "    _money=lambda a: '(' + str(-a) + ')' if a < 0 else str(a),\n"
        "    _label=lambda n, q: n if q == 1 else n + str(q),\n"
        "):\n    return _label(_name(rec['name'], width), rec['qty']) + _money(rec['amount'])\n",
        "<module>",
    ),
    "decorator": (
        "@(lambda f: lambda r: f(r) if r else ('-' if r is None else '') if r != 0 else '0')\n"
        "def format_row(rec):\n    return str(rec)\n",
        "<module>",
    ),
    "module-table": (
        "ROWS = {k: (v if v else '-') for k, v in DATA.items() if k if not k.startswith('_')}\n"
        "\n\ndef format_row(key):\n    return ROWS[key]\n",
        "<module>",
    ),
    "module-statements": (
        "".join(f"if MODE == {i}:\n    WIDTH = {i}\n" for i in range(5))
        + "\n\ndef format_row(rec):\n    return str(rec).ljust(WIDTH)\n",
        "<module>",
    ),
    "class-body-statements": (
        "class Style:\n"
        + "".join(f"    if MODE == {i}:\n        width = {i}\n" for i in range(5))
        + "\n    def format_row(self, rec):\n        return str(rec).ljust(self.width)\n",
        "<class Style>",
    ),
    "long-lambda": (
        "_render = lambda rec: (\n" + "".join(f"    str(rec[{i}])\n    +\n" for i in range(8)) + "    ''\n)\n"
        "\n\ndef format_row(rec):\n    return _render(rec)\n",
        "<lambda>",
    ),
}


@pytest.mark.parametrize(("source", "offender"), list(ESCAPES.values()), ids=list(ESCAPES))
def test_branching_moved_out_of_a_def_is_still_measured(source: str, offender: str) -> None:
    units = measure_units("src/report.py", source)
    assert all(u.complexity <= 3 and u.length <= 12 for u in units if u.kind == "function")
    component = _grade(_task("refactor", {"max_function_length": 12, "max_cyclomatic_complexity": 3}), units)
    assert (component.score, component.passed, component.reason_codes) == (0.5, False, ["quality-limit-exceeded"])
    assert any(f" {offender}: " in message for message in component.messages), component.messages


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
MODULE = FunctionMetrics(path="src/m.py", name="<module>", lineno=1, length=400, complexity=3, kind="module")


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
    details = _grade(_task(quality=BOTH), [SMALL, LONG, COMPLEX, MODULE]).details
    assert (details["functions_measured"], details["bodies_measured"]) == (3, 1)
    assert details["rules"]["max_function_length"] == {
        "limit": 40,
        "violations": [{"path": "src/m.py", "name": "Report.render", "lineno": 20, "value": 52}],
    }
    assert details["rules"]["max_cyclomatic_complexity"]["violations"][0]["name"] == "parse"
    assert details["worst"]["length"]["name"] == "Report.render"
    assert details["worst"]["complexity"] == {"path": "src/m.py", "name": "parse", "lineno": 80, "value": 11}


def test_passing_message_states_the_limits() -> None:
    component = _grade(_task(quality=BOTH), [SMALL, MODULE])
    assert component.messages == [
        "all within limits (length <= 40, complexity <= 8): 1 functions and lambdas, 1 module and class bodies"
    ]


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


def test_length_limit_skips_module_and_class_bodies_complexity_does_not() -> None:
    body = FunctionMetrics(path="src/m.py", name="<class Big>", lineno=5, length=300, complexity=9, kind="class")
    component = _grade(_task(quality=BOTH), [SMALL, MODULE, body])
    assert (component.score, component.messages) == (0.5, ["src/m.py:5 <class Big>: complexity 9 > 8"])
    assert component.details["worst"]["length"]["name"] == "ok"
    assert component.details["worst"]["complexity"]["name"] == "<class Big>"


def test_a_long_lambda_breaks_the_length_limit() -> None:
    lam = FunctionMetrics(path="src/m.py", name="<lambda>", lineno=3, length=42, complexity=1, kind="lambda")
    component = _grade(_task(quality=BOTH), [SMALL, lam])
    assert component.messages == ["src/m.py:3 <lambda>: length 42 > 40"]
