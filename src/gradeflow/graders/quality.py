"""Length and cyclomatic complexity of every unit of code, and the ``quality`` grader that checks them.

:func:`measure_units` turns one Python file into :class:`FunctionMetrics`, one per *unit*: each
``def`` and ``async def`` anywhere in the module (methods, nested functions, methods of nested
classes), each ``lambda``, each class body and the module body. Code outside every ``def`` is
measured too, so branching cannot leave the limits by moving out of a function: into module-level
lambdas, a class body, top-level statements, default values, decorators or comprehensions.

Cyclomatic complexity is 1 plus one per decision point in the unit's own code:

* ``if`` and each ``elif``; ``for``, ``async for`` and ``while`` loops; each ``except`` handler
  (``except*`` too); ``assert``; a conditional expression; each ``for`` clause and each ``if`` of a
  comprehension or generator expression; a boolean operation with *n* operands adds *n - 1*;
* each ``match`` case, except a final catch-all without a guard (``case _:`` or ``case name:``),
  which is the match's ``else``;
* never counted: ``else`` of an ``if``, a loop or a ``try``; ``finally``; ``with`` / ``async with``.

A unit's own code is what Python runs in its scope:

* a function's body; a nested ``def`` or ``class`` adds nothing of its body, which is a unit of its
  own (``outer.inner``, ``<class outer.Local>``);
* a ``def``'s or ``class``'s decorators, default values, annotations and bases run where the
  definition stands, and count there (toward the module, the class body or the enclosing function);
* a lambda is an expression of the scope it is written in and counts there in full (as in radon),
  and it is also a unit of its own: ``1 +`` its body's decision points (``f.<lambda>``, ``<lambda>``
  at module level, ``Report.<lambda>`` in a class body);
* ``<class Report>`` is a class body's own code (its methods and nested classes excluded), and
  ``<module>`` the module's code outside every ``def`` and ``class`` body.

The complexity limit applies to every unit. The length limit applies to functions and lambdas only:
module and class bodies run once, at import, and a module of constants or a class of many methods
is long without being one long routine; their ``length`` (lines spanned) is reported, not limited.

These rules follow radon 6 (``radon.complexity.cc_visit``, ``radon.visitors.ComplexityVisitor``)
where it is sound, and agree with it on ``if``/``elif``, loops without ``else``, ``except``,
boolean operators, conditional expressions, comprehensions, ``assert``, lambdas inside a function,
a nested function's own complexity, and the module-level ``complexity`` of its visitor (which
includes module-level lambdas). They differ:

* radon adds 1 for the ``else`` of a loop or of a ``try``; we do not, as for an ``if``'s ``else``
  (the ``else`` is the fall-through path, not a new decision);
* radon skips a catch-all ``match`` case even when it has a guard (``case _ if x:`` is a decision);
* radon ignores ``except*`` handlers (it does not know ``TryStar``);
* radon does not look inside an ``assert``'s expressions (``assert a or b`` adds 1, not 2);
* radon counts a ``def``'s decorators, defaults and annotations nowhere; we count them where they run;
* radon reports no lambda, class body or module body as a block (a class's complexity is its
  methods' summed with its own code); we report each as a unit;
* radon does not report nested functions as blocks of their own (only as ``closures`` of their
  parent), and drops classes nested in a class or in a function together with their methods;
  we report every function with a qualified name (``outer.inner``, ``Outer.Inner.m``, ``f.C.m``).

:func:`measure_source` keeps to functions (``def`` and ``async def``) for the steps that compare a
patch's touched functions before and after.
"""

from __future__ import annotations

import ast
from typing import Any

from gradeflow.graders.base import Grader, GradingContext
from gradeflow.models import GradeComponent, Role
from gradeflow.models.evidence import FunctionMetrics, UnitKind
from gradeflow.text import parse_python

__all__ = ["QualityGrader", "SourceError", "measure_source", "measure_units"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BRANCHES = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.Assert)
# Spec field, and the FunctionMetrics attribute it limits (also the word used in messages).
_RULES = (("max_function_length", "length"), ("max_cyclomatic_complexity", "complexity"))
# The kinds each rule applies to: a module or class body runs once and is not one routine.
_LIMITED = {"length": ("function", "lambda"), "complexity": ("function", "lambda", "class", "module")}
_MAX_MESSAGES = 20


class SourceError(ValueError):
    """A file that Python cannot parse; ``str()`` is ``PATH:LINE: cannot parse: MSG``.

    ``path`` is the path given to :func:`measure_source`; ``lineno`` is ``None`` (and the
    ``:LINE`` part left out) when the parser names no line.
    """

    def __init__(self, path: str, lineno: int | None, msg: str) -> None:
        self.path, self.lineno, self.msg = path, lineno, msg
        where = path if lineno is None else f"{path}:{lineno}"
        super().__init__(f"{where}: cannot parse: {msg}")


def measure_source(path: str, source: str) -> list[FunctionMetrics]:
    """One :class:`FunctionMetrics` per ``def`` or ``async def`` of ``source``, sorted by line.

    ``path`` is only copied into the results and errors. Raises :class:`SourceError` when the
    source does not parse (including null bytes and nesting too deep for the parser).
    """
    return [m for m in measure_units(path, source) if m.kind == "function"]


def measure_units(path: str, source: str) -> list[FunctionMetrics]:
    """Every unit of ``source`` (functions, lambdas, class bodies, the module body), sorted by line.

    Raises :class:`SourceError` as :func:`measure_source` does.
    """
    try:
        tree = parse_python(source, filename=path)
    except SyntaxError as exc:
        raise SourceError(path, exc.lineno, exc.msg) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise SourceError(path, None, str(exc) or type(exc).__name__) from None
    tally = _Tally()
    tally.walk(tree)
    last = max((getattr(n, "end_lineno", None) or 1 for n in tree.body), default=1)
    found = [_unit(path, "module", "<module>", 1, last, 1 + tally.totals[0])]
    for kind, name, node, slot in tally.units:
        lineno = getattr(node, "lineno", 1)
        found.append(_unit(path, kind, name, lineno, getattr(node, "end_lineno", None), 1 + tally.totals[slot]))
    return sorted(found, key=lambda m: (m.lineno, m.name))


def _unit(path: str, kind: UnitKind, name: str, lineno: int, end: int | None, complexity: int) -> FunctionMetrics:
    length = (end or lineno) - lineno + 1
    return FunctionMetrics(path=path, name=name, lineno=lineno, length=length, complexity=complexity, kind=kind)


class _Tally:
    """Decision points totalled per unit in one pass over the tree.

    Each node gets a slot holding its own decision points; a slot adds into its parent's once the
    walk is done. A ``def``'s or ``class``'s body adds into a slot of its own (the unit), never
    upwards, while the rest of the definition (decorators, defaults, annotations, bases) adds into
    the scope around it, where it runs. A lambda's body adds into its own slot, which adds upwards
    too: the lambda is a unit and an expression of its scope. Slot 0 is the module's own code.
    """

    def __init__(self) -> None:
        self.totals: list[int] = []
        self.parents: list[int] = []
        self.units: list[tuple[UnitKind, str, ast.AST, int]] = []

    def _slot(self, points: int, parent: int) -> int:
        self.totals.append(points)
        self.parents.append(parent)
        return len(self.totals) - 1

    def walk(self, tree: ast.Module) -> None:
        # Iterative: deeply nested expressions would overflow a recursive visitor.
        todo: list[tuple[ast.AST, str, int]] = [(tree, "", -1)]
        while todo:
            node, qualname, parent = todo.pop()
            here = self._slot(_decision_points(node), parent)
            if isinstance(node, _SCOPES):
                name = f"{qualname}.{node.name}" if qualname else node.name
                body = self._slot(0, -1)
                kind: UnitKind = "function" if isinstance(node, _FUNCTIONS) else "class"
                self.units.append((kind, name if kind == "function" else f"<class {name}>", node, body))
                inside = {id(child) for child in node.body}
                todo += [(child, name, body) for child in node.body]
                todo += [(c, qualname, here) for c in ast.iter_child_nodes(node) if id(c) not in inside]
            elif isinstance(node, ast.Lambda):
                body = self._slot(0, here)
                self.units.append(("lambda", f"{qualname}.<lambda>" if qualname else "<lambda>", node, body))
                todo += [(node.args, qualname, here), (node.body, qualname, body)]
            else:
                todo += [(child, qualname, here) for child in ast.iter_child_nodes(node)]
        # A parent's slot comes before its children's: backwards, every child is added before its parent.
        for slot in range(len(self.totals) - 1, 0, -1):
            if self.parents[slot] >= 0:
                self.totals[self.parents[slot]] += self.totals[slot]


def _decision_points(node: ast.AST) -> int:
    """How many decision points ``node`` itself adds (its children are counted separately)."""
    if isinstance(node, _BRANCHES):
        return 1
    if isinstance(node, ast.BoolOp):
        return len(node.values) - 1
    if isinstance(node, ast.comprehension):
        return 1 + len(node.ifs)
    if isinstance(node, ast.match_case):
        catch_all = isinstance(node.pattern, ast.MatchAs) and node.pattern.pattern is None
        return 0 if catch_all and node.guard is None else 1
    return 0


def _entry(metrics: FunctionMetrics, attr: str) -> dict[str, Any]:
    return metrics.model_dump(include={"path", "name", "lineno"}) | {"value": getattr(metrics, attr)}


class QualityGrader(Grader):
    """Checks every measured unit against the task's ``quality`` limits.

    Each declared limit is one rule; the score is the share of rules no unit breaks, and the
    component passes only at 1. It is an ``objective`` for refactor tasks and a ``gate`` otherwise.
    The length limit applies to functions and lambdas, the complexity limit to every unit (module
    and class bodies too). ``details`` holds ``rules`` (per declared limit: ``limit`` and every
    violation as ``path``, ``name``, ``lineno``, ``value``), ``functions_measured`` (functions and
    lambdas), ``bodies_measured`` (class and module bodies) and ``worst`` (the longest function or
    lambda and the most complex unit). Violations and messages list the worst first, length before
    complexity; messages stop after 20 offences.
    """

    name = "quality"

    def grade(self, context: GradingContext) -> GradeComponent:
        """Score ``context.functions``; ``ValueError`` when limits are declared but it is ``None``."""
        task = context.task
        role: Role = "objective" if task.type == "refactor" else "gate"
        spec = task.quality
        limits = {key: getattr(spec, key) for key, _ in _RULES if getattr(spec, key, None) is not None}
        if not limits:
            return self.component(
                1.0,
                True,
                role=role,
                details={"rules": {}, **_counts(context.functions or [])},
                messages=["no quality limits declared"],
            )
        if context.functions is None:
            raise ValueError("quality evidence missing")
        component = self._score(context.functions, limits, role)
        if not context.unreadable:
            return component
        return component.model_copy(
            update={
                "score": 0.0,
                "passed": False,
                "messages": [*component.messages, *(f"cannot measure {u}" for u in context.unreadable)],
                "reason_codes": sorted({*component.reason_codes, "quality-unparseable"}),
            }
        )

    def _score(self, units: list[FunctionMetrics], limits: dict[str, int], role: Role) -> GradeComponent:
        rules: dict[str, Any] = {}
        offences: list[str] = []
        for key, attr in _RULES:
            if key in limits:
                limit = limits[key]
                bad = sorted(
                    (u for u in _limited(units, attr) if getattr(u, attr) > limit), key=lambda u: -getattr(u, attr)
                )
                rules[key] = {"limit": limit, "violations": [_entry(u, attr) for u in bad]}
                offences += [f"{u.path}:{u.lineno} {u.name}: {attr} {getattr(u, attr)} > {limit}" for u in bad]
        broken = sum(1 for rule in rules.values() if rule["violations"])
        score = (len(rules) - broken) / len(rules)
        details = {"rules": rules, **_counts(units), "worst": _worst(units)}
        return self.component(
            score,
            broken == 0,
            role=role,
            details=details,
            messages=_messages(offences, units, limits),
            reason_codes=["quality-limit-exceeded"] if broken else [],
        )


def _limited(units: list[FunctionMetrics], attr: str) -> list[FunctionMetrics]:
    """The units the rule on ``attr`` applies to."""
    return [u for u in units if u.kind in _LIMITED[attr]]


def _counts(units: list[FunctionMetrics]) -> dict[str, int]:
    functions = len(_limited(units, "length"))
    return {"functions_measured": functions, "bodies_measured": len(units) - functions}


def _worst(units: list[FunctionMetrics]) -> dict[str, Any]:
    """The longest function or lambda and the most complex unit (the first given on ties)."""
    worst: dict[str, Any] = {}
    for _, attr in _RULES:
        limited = _limited(units, attr)
        if limited:
            worst[attr] = _entry(max(limited, key=lambda u: getattr(u, attr)), attr)
    return worst


def _messages(offences: list[str], units: list[FunctionMetrics], limits: dict[str, int]) -> list[str]:
    if not offences:
        stated = ", ".join(f"{attr} <= {limits[key]}" for key, attr in _RULES if key in limits)
        counts = _counts(units)
        measured = (
            f"{counts['functions_measured']} functions and lambdas, {counts['bodies_measured']} module and class bodies"
        )
        return [f"all within limits ({stated}): {measured}"]
    shown = offences[:_MAX_MESSAGES]
    if len(offences) > len(shown):
        shown.append(f"... and {len(offences) - len(shown)} more over the limits (see details)")
    return shown
