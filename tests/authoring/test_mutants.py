"""The mutation operators on the lines a fix changes (pure)."""

from __future__ import annotations

import pytest

from gradeflow.authoring.mutants import changed_lines, mutate, reverted_blocks

BASE = '''def clamp(x, lo, hi):
    """Clamp x into [lo, hi]."""
    return max(x, lo)


def untouched(a):
    return a < 1
'''
FIXED = '''def clamp(x, lo, hi):
    """Clamp x into [lo, hi]."""
    if x < lo:
        return lo
    if x > hi:
        return hi + 0
    return x


def untouched(a):
    return a < 1
'''


def _line(source: str, number: int) -> str:
    return source.splitlines()[number - 1].strip()


def test_changed_lines_are_the_new_sides_of_the_fix() -> None:
    assert changed_lines(BASE, FIXED) == {3, 4, 5, 6, 7}
    assert changed_lines("a\nb\nc\n", "a\nc\n") == {2}  # a deletion marks the line after it


@pytest.mark.parametrize(
    ("operator", "line", "text"),
    [
        ("flip-comparison", 3, "if x >= lo:"),
        ("flip-comparison", 5, "if x <= hi:"),
        ("negate-condition", 3, "if not (x < lo):"),
        ("drop-statement", 4, "pass"),
        ("drop-statement", 6, "pass"),
        ("early-return", 5, "return None"),
        ("constant-plus-one", 6, "return hi + 1"),
        ("constant-minus-one", 6, "return hi + -1"),
    ],
)
def test_each_operator_changes_one_line_of_the_fix(operator: str, line: int, text: str) -> None:
    found = [m for m in mutate("clamp.py", BASE, FIXED) if (m.operator, m.line) == (operator, line)]
    assert text in [_line(m.source, line) for m in found]
    for mutant in found:
        compile(mutant.source, "clamp.py", "exec")
        assert mutant.source.endswith("def untouched(a):\n    return a < 1\n")  # the rest keeps its bytes


def test_lines_the_fix_did_not_touch_and_docstrings_are_never_mutated() -> None:
    mutants = mutate("clamp.py", BASE, FIXED)
    assert mutants and all(3 <= m.line <= 7 for m in mutants)
    assert all('"""Clamp x into [lo, hi]."""' in m.source for m in mutants)
    assert len({m.source for m in mutants}) == len(mutants)
    assert mutate("broken.py", "", "def f(:\n") == []


def test_reverted_blocks_leave_out_a_docstring_only_revert() -> None:
    base = 'def f(b):\n    """Old."""\n    if b == 0:\n        return None\n    return 1 / b\n'
    fixed = 'def f(b):\n    """New."""\n    if b == 0:\n        raise ZeroDivisionError\n    return 1 / b\n'
    (revert,) = reverted_blocks(base, fixed)
    assert "return None" in revert and '"""New."""' in revert
    assert len(reverted_blocks(base, fixed, python=False)) == 2
    assert reverted_blocks("a\n", "b\n") == []  # one block: reverting it is the do-nothing patch
