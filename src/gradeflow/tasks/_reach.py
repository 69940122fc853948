"""The lines a patch's own test must run to count as evidence: the patch's changes outside its tests, in functions.

A test that fails on the base and passes on the candidate proves the change only if it exercises it: a test of
a constant the patch adds fails on the base too (``AttributeError``). So the test-evidence candidate run records,
per test, which of these lines ran in a function's code (see ``_change_reach`` in the harness plugin).

Each line the patch adds to a Python file outside ``tests.test_files`` stands for a line that runs:

* inside a function's (or lambda's) body: the line itself and the first line of the innermost statement holding
  it (a continuation line of a long call runs as its statement);
* in a function's header (decorators, ``def`` line, arguments and their defaults): the function's first
  statement after its docstring, which runs whenever the function does;
* at module or class level: nothing. Such lines run at import, before any test; no test can be shown to run
  them (a fix that only changes a constant or a default computed at import brings no provable test).

Lines a patch only removes are not mapped (a fix that only deletes lines inside a function brings no provable
test either); files that do not parse give nothing.
"""

from __future__ import annotations

import ast

from gradeflow.models import TaskSpec
from gradeflow.models.globs import matches_any
from gradeflow.tasks._functions import touched_lines
from gradeflow.tasks.snapshot import Snapshot
from gradeflow.text import parse_python

__all__ = ["function_lines", "reach_targets"]

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def reach_targets(task_spec: TaskSpec, snapshot: Snapshot) -> dict[str, list[int]]:
    """Repository-relative file → the lines a patch's test must run one of (files without such lines left out)."""
    assert snapshot.workspace is not None
    lines = touched_lines(snapshot.patch)
    found: dict[str, list[int]] = {}
    for change in snapshot.changes:
        touched = lines.get(change.path)
        if change.status == "removed" or not change.path.endswith(".py") or touched is None:
            continue
        if matches_any(change.path, task_spec.tests.test_files):
            continue
        path = snapshot.workspace / change.path
        if path.is_symlink() or not path.is_file():
            continue
        targets = function_lines(path.read_text(encoding="utf-8", errors="replace"), touched.added)
        if targets:
            found[change.path] = targets
    return found


def function_lines(source: str, added: set[int]) -> list[int]:
    """The lines that run when code at one of ``added`` (line numbers of ``source``) runs inside a function."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    statements: list[ast.stmt] = []
    headers: list[tuple[int, int, int]] = []  # first line, last line of a header, the line it stands for
    lambdas: list[ast.Lambda] = []
    _walk(tree, False, statements, headers, lambdas)
    found: set[int] = set()
    for line in added:
        holding = [s for s in statements if s.lineno <= line <= (s.end_lineno or s.lineno)]
        if holding:
            found |= {line, max(holding, key=lambda s: s.lineno).lineno}
        found |= {first for start, end, first in headers if start <= line <= end}
        found |= {line for node in lambdas if node.lineno <= line <= (node.end_lineno or node.lineno)}
    return sorted(found)


def _walk(
    node: ast.AST,
    in_function: bool,
    statements: list[ast.stmt],
    headers: list[tuple[int, int, int]],
    lambdas: list[ast.Lambda],
) -> None:
    """Collect the statements whose nearest scope is a function, function headers and lambdas under ``node``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt) and in_function:
            statements.append(child)
        if isinstance(child, _Function):
            body = child.body[1:] if _has_docstring(child) else child.body
            if body:
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                headers.append((start, max(child.lineno, child.body[0].lineno - 1), body[0].lineno))
            _walk(child, True, statements, headers, lambdas)
        elif isinstance(child, ast.ClassDef):
            _walk(child, False, statements, headers, lambdas)
        elif isinstance(child, ast.Lambda):
            lambdas.append(child)
            _walk(child, True, statements, headers, lambdas)
        else:
            _walk(child, in_function, statements, headers, lambdas)


def _has_docstring(node: _Function) -> bool:
    first = node.body[0]
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
