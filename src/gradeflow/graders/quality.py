"""Per-function length and cyclomatic complexity, and the ``quality`` grader that checks them.

:func:`measure_source` turns one Python file into :class:`FunctionMetrics`, one per ``def`` or
``async def`` anywhere in the module (methods, nested functions, methods of nested classes).
Cyclomatic complexity is 1 plus one per decision point in the function's own body:

* ``if`` and each ``elif``; ``for``, ``async for`` and ``while`` loops; each ``except`` handler
  (``except*`` too); ``assert``; a conditional expression; each ``for`` clause and each ``if`` of a
  comprehension or generator expression; a boolean operation with *n* operands adds *n - 1*;
* each ``match`` case, except a final catch-all without a guard (``case _:`` or ``case name:``),
  which is the match's ``else``;
* never counted: ``else`` of an ``if``, a loop or a ``try``; ``finally``; ``with`` / ``async with``.

A nested ``def`` or ``class`` is its own scope: its body adds nothing to the enclosing function,
and nested functions are reported on their own. Decorators, default values and annotations of a
``def`` are counted nowhere. A lambda is an expression of the enclosing function and counts there.

These rules follow radon 6 (``radon.complexity.cc_visit``) where it is sound, and agree with it on
``if``/``elif``, loops without ``else``, ``except``, boolean operators, conditional expressions,
comprehensions, ``assert``, lambdas, and a nested function's own complexity. They differ:

* radon adds 1 for the ``else`` of a loop or of a ``try``; we do not, as for an ``if``'s ``else``
  (the ``else`` is the fall-through path, not a new decision);
* radon skips a catch-all ``match`` case even when it has a guard (``case _ if x:`` is a decision);
* radon ignores ``except*`` handlers (it does not know ``TryStar``);
* radon does not report nested functions as blocks of their own (only as ``closures`` of their
  parent), and drops classes nested in a class or in a function together with their methods;
  we report every function with a qualified name (``outer.inner``, ``Outer.Inner.m``, ``f.C.m``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from gradeflow.graders.base import Grader, GradingContext
from gradeflow.models import GradeComponent, Role
from gradeflow.models.evidence import FunctionMetrics

__all__ = ["QualityGrader", "SourceError", "measure_source"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BRANCHES = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.Assert)
# Spec field, and the FunctionMetrics attribute it limits (also the word used in messages).
_RULES = (("max_function_length", "length"), ("max_cyclomatic_complexity", "complexity"))
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
    """One :class:`FunctionMetrics` per function or method of ``source``, sorted by line.

    ``path`` is only copied into the results and errors. Raises :class:`SourceError` when the
    source does not parse (including null bytes and nesting too deep for the parser).
    """
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise SourceError(path, exc.lineno, exc.msg) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise SourceError(path, None, str(exc) or type(exc).__name__) from None
    found: list[FunctionMetrics] = []
    scopes: list[tuple[ast.AST, str]] = [(tree, "")]
    while scopes:
        scope, qualname = scopes.pop()
        cc = 1
        for node in _own_nodes(scope):
            if isinstance(node, _SCOPES):
                scopes.append((node, f"{qualname}.{node.name}" if qualname else node.name))
            else:
                cc += _decision_points(node)
        if isinstance(scope, _FUNCTIONS):
            length = (scope.end_lineno or scope.lineno) - scope.lineno + 1
            found.append(FunctionMetrics(path=path, name=qualname, lineno=scope.lineno, length=length, complexity=cc))
    return sorted(found, key=lambda m: (m.lineno, m.name))


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``scope``'s body, yielding nested defs and classes but not entering them."""
    # Iterative: deeply nested expressions would overflow a recursive visitor.
    todo: list[ast.AST] = list(getattr(scope, "body", []))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _SCOPES):
            todo.extend(ast.iter_child_nodes(node))


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
    """Checks every measured function against the task's ``quality`` limits.

    Each declared limit is one rule; the score is the share of rules no function breaks, and the
    component passes only at 1. It is an ``objective`` for refactor tasks and a ``gate`` otherwise.
    ``details`` holds ``rules`` (per declared limit: ``limit`` and every violation as ``path``,
    ``name``, ``lineno``, ``value``), ``functions_measured`` and ``worst`` (the longest and the most
    complex function). Violations and messages list the worst first, length before complexity;
    messages stop after 20 offences.
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
                details={"rules": {}, "functions_measured": len(context.functions or [])},
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

    def _score(self, functions: list[FunctionMetrics], limits: dict[str, int], role: Role) -> GradeComponent:
        rules: dict[str, Any] = {}
        offences: list[str] = []
        for key, attr in _RULES:
            if key in limits:
                limit = limits[key]
                bad = sorted((f for f in functions if getattr(f, attr) > limit), key=lambda f: -getattr(f, attr))
                rules[key] = {"limit": limit, "violations": [_entry(f, attr) for f in bad]}
                offences += [f"{f.path}:{f.lineno} {f.name}: {attr} {getattr(f, attr)} > {limit}" for f in bad]
        broken = sum(1 for rule in rules.values() if rule["violations"])
        score = (len(rules) - broken) / len(rules)
        details = {"rules": rules, "functions_measured": len(functions), "worst": _worst(functions)}
        return self.component(
            score,
            broken == 0,
            role=role,
            details=details,
            messages=_messages(offences, len(functions), limits),
            reason_codes=["quality-limit-exceeded"] if broken else [],
        )


def _worst(functions: list[FunctionMetrics]) -> dict[str, Any]:
    """The longest and the most complex function (the first given on ties), or ``{}``."""
    if not functions:
        return {}
    return {attr: _entry(max(functions, key=lambda f: getattr(f, attr)), attr) for _, attr in _RULES}


def _messages(offences: list[str], measured: int, limits: dict[str, int]) -> list[str]:
    if not offences:
        stated = ", ".join(f"{attr} <= {limits[key]}" for key, attr in _RULES if key in limits)
        return [f"all {measured} functions within limits ({stated})"]
    shown = offences[:_MAX_MESSAGES]
    if len(offences) > len(shown):
        shown.append(f"... and {len(offences) - len(shown)} more over the limits (see details)")
    return shown
