"""Limits on the grader's own work over a candidate's files: what a parser may raise, how long a step may take.

A parser given a candidate's bytes (``tomllib``, ``json``, ``configparser``, ``ast``) fails however the
bytes make it fail: a syntax error, a nesting deep enough for :class:`RecursionError`, a value too big for
memory. Every such failure is the candidate's (:data:`PARSE_ERRORS`), never the grader's crash. A step
that walks candidate input checks a :class:`Deadline` between its pieces of work, each of which is linear
in its input (patterns run on re2), so no input makes the step take hours.
"""

from __future__ import annotations

import configparser
import time

__all__ = ["PARSE_ERRORS", "BudgetExceeded", "Deadline"]

PARSE_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,  # tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError, null bytes
    SyntaxError,
    TypeError,
    AttributeError,
    LookupError,
    RecursionError,
    MemoryError,
    OverflowError,
    configparser.Error,
)
"""What a parser raises on input crafted to break it; caught, it is the candidate's (never inconclusive)."""


class BudgetExceeded(Exception):
    """A step over candidate input used its whole time budget."""


class Deadline:
    """A time budget started now; :meth:`check` raises :class:`BudgetExceeded` once it is spent."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._ends = time.monotonic() + seconds

    def expired(self) -> bool:
        return time.monotonic() >= self._ends

    def check(self) -> None:
        if self.expired():
            raise BudgetExceeded(f"took longer than its {self.seconds:g} s budget")
