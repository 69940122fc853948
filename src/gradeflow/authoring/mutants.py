"""Mutants of a reference fix: small wrong versions of the fixed source, made on the lines the fix changes. Pure.

Operators (each mutant one change, parsed back to be sure it compiles):

- ``flip-comparison``: ``<`` ↔ ``>=``, ``>`` ↔ ``<=``, ``==`` ↔ ``!=``, ``is`` ↔ ``is not``, ``in`` ↔ ``not in``;
- ``negate-condition``: the test of an ``if``, ``while``, ``assert`` or conditional expression negated;
  ``and`` ↔ ``or``;
- ``constant-plus-one`` / ``constant-minus-one``: an integer or float literal moved by one;
- ``drop-statement``: a statement replaced by ``pass``;
- ``early-return``: ``return None`` inserted before a statement of a function.

mutmut and cosmic-ray mutate whole modules and run the tests themselves; here each mutant must be a
patch graded by gradeflow's own flow and only the fix's lines matter, so the operators are written
over :mod:`ast` and applied to the source text by position (the rest of the file keeps its bytes).
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterator

from pydantic import BaseModel

__all__ = ["Mutant", "changed_lines", "mutate", "reverted_blocks"]

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


class Mutant(BaseModel):
    """One file of the fixed tree, changed by one operator."""

    operator: str
    path: str
    line: int
    """1-based line of the fixed file where the change is."""
    source: str
    """The whole file's text after the change."""


def changed_lines(base: str, fixed: str) -> set[int]:
    """1-based lines of ``fixed`` that the fix added or changed (a pure deletion marks the line after it)."""
    lines: set[int] = set()
    matcher = difflib.SequenceMatcher(a=base.splitlines(), b=fixed.splitlines(), autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            lines.update(range(j1 + 1, j2 + 1))
        elif tag == "delete":
            lines.add(j1 + 1)
    return lines


def reverted_blocks(base: str, fixed: str, python: bool = True) -> list[str]:
    """``fixed`` with one changed block put back as in ``base``, for each block (none if there is only one).

    With ``python``, a revert that leaves the same code (a docstring or comment block) is left out: no
    test could tell it from the fix.
    """
    a, b = base.splitlines(keepends=True), fixed.splitlines(keepends=True)
    blocks = [op for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(blocks) < 2:
        return []
    reverts = ["".join(b[:j1] + a[i1:i2] + b[j2:]) for _, i1, i2, j1, j2 in blocks]
    if not python:
        return reverts
    return [text for text in reverts if _code(text) is None or _code(text) != _code(fixed)]


def _code(text: str) -> str | None:
    """The module's AST without docstrings, dumped; ``None`` when it does not parse."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt) and _is_docstring(body[0]):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.dump(tree)


class _Source:
    """The fixed file's text, with node positions (UTF-8 byte columns) turned into string offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, byte_col: int) -> int:
        return self.starts[line - 1] + len(self.lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def replace(self, node: ast.AST, text: str) -> str:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return self.text[:start] + text + self.text[end:]

    def indent(self, line: int) -> str:
        row = self.lines[line - 1]
        return row[: len(row) - len(row.lstrip())]

    def insert_line(self, line: int, text: str) -> str:
        return self.text[: self.starts[line - 1]] + self.indent(line) + text + "\n" + self.text[self.starts[line - 1] :]


def _touches(node: ast.AST, lines: set[int]) -> bool:
    first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    return any(first <= line <= last for line in lines)


def _expression_mutants(node: ast.AST, source: _Source) -> Iterator[tuple[str, str]]:
    if isinstance(node, ast.Compare) and type(node.ops[0]) in _FLIP:
        flipped = ast.Compare(node.left, [_FLIP[type(node.ops[0])](), *node.ops[1:]], node.comparators)
        yield "flip-comparison", source.replace(node, ast.unparse(flipped))
    elif isinstance(node, ast.BoolOp):
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "flip-boolean", source.replace(node, f"({ast.unparse(ast.BoolOp(other, node.values))})")
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = node.value
        assert isinstance(value, (int, float))
        for name, step in (("constant-plus-one", 1), ("constant-minus-one", -1)):
            yield name, source.replace(node, repr(value + step))
    elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        yield "negate-condition", source.replace(node.test, f"not ({ast.unparse(node.test)})")


def _statement_mutants(node: ast.stmt, source: _Source, in_function: bool) -> Iterator[tuple[str, str]]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or _is_docstring(node):
        return
    yield "drop-statement", source.replace(node, "pass")
    if in_function and not isinstance(node, ast.Return):
        yield "early-return", source.insert_line(node.lineno, "return None")


def _is_docstring(node: ast.stmt) -> bool:
    """A bare string statement: dropping it changes nothing the tests could see."""
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _walk(tree: ast.AST, in_function: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(tree):
        yield child, in_function
        yield from _walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))


def mutate(path: str, base: str, fixed: str) -> list[Mutant]:
    """Every mutant of ``fixed`` (``path``'s text after the fix) on the lines the fix changed, in file order.

    A file that does not parse, or a change that does not compile or changes nothing, gives no mutant.
    """
    try:
        tree = ast.parse(fixed)
    except SyntaxError:
        return []
    lines, source, found, seen = changed_lines(base, fixed), _Source(fixed), [], {fixed}
    for node, in_function in _walk(tree):
        if not hasattr(node, "lineno") or not _touches(node, lines):
            continue
        made = list(_expression_mutants(node, source))
        if isinstance(node, ast.stmt) and node.lineno in lines:
            made += _statement_mutants(node, source, in_function)
        for operator, text in made:
            if text not in seen and _compiles(text):
                seen.add(text)
                found.append(Mutant(operator=operator, path=path, line=node.lineno, source=text))
    return found


def _compiles(text: str) -> bool:
    try:
        compile(text, "<mutant>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True
