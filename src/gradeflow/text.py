"""Text for people: strings a candidate controls, neutralised before a terminal or a markdown renderer reads them.

A file name, a test id, a message quoting either, or a model id can hold ESC sequences, CR, LF or markdown.
:func:`for_terminal` writes every control character as an escape (``\\x1b``, ``\\r``, ``\\n``) and so do
the invisible format characters that reorder or hide text (bidi overrides, zero-width), so a printed line
cannot be moved, recoloured, overwritten or split. :func:`for_markdown` does that and puts a backslash
before every character inline markdown reads, so the text cannot add a heading, a link, an image, a
table cell, emphasis, HTML or a code span; :func:`markdown_code` shows it as a code span. Neither
changes text with none of these.
"""

from __future__ import annotations

import ast
import re
import threading

__all__ = ["for_markdown", "for_terminal", "markdown_code", "parse_python"]

_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\x1b": "\\x1b"}
_MARKDOWN = re.compile(r"([\\`*_\[\]|<>~&])")
"""What inline markdown reads; ``#``, ``-``, ``+`` or ``1.`` act only at the start of a line, where this
text never is (its line breaks are escaped)."""


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def for_terminal(text: str) -> str:
    """``text`` on one line with no character a terminal acts on: each control or format character escaped."""
    return _CONTROL.sub(_escape, text)


def for_markdown(text: str) -> str:
    """``text`` as literal inline markdown: :func:`for_terminal`, then markdown's punctuation backslash-escaped."""
    return _MARKDOWN.sub(r"\\\1", for_terminal(text))


def markdown_code(text: str) -> str:
    """``text`` as one inline code span: :func:`for_terminal`, fenced by more backticks than it holds in a row."""
    shown = for_terminal(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


_AST_LOCK = threading.Lock()


def parse_python(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse`` under one process-wide lock. CPython 3.11 keeps the recursion depth of its AST conversion in
    state all threads share: two grades parsing at once (``evaluate --concurrency 2``) can fail with
    ``SystemError: AST constructor recursion depth mismatch``. Parsing is milliseconds; the lock costs nothing."""
    with _AST_LOCK:
        return ast.parse(source, filename=filename)
