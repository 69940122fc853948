"""Path globs as task specs write them: ``*`` stays within a folder, ``**`` crosses folders."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

__all__ = ["any_matcher", "glob_to_regex", "matches_any"]


@lru_cache(maxsize=512)
def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob: ``**/`` matches zero or more folders, ``**`` anything, ``*`` and ``?`` one segment."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches_any(path: str, patterns: Iterable[str]) -> bool:
    """Whether the repository-relative ``path`` matches one of ``patterns``."""
    return any(glob_to_regex(_written(p)).match(path) for p in patterns)


@lru_cache(maxsize=256)
def any_matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """:func:`matches_any` over ``patterns`` as one compiled expression, for a walk that asks it of every file."""
    if not patterns:
        return lambda path: False
    combined = re.compile("|".join(f"(?:{glob_to_regex(_written(p)).pattern})" for p in patterns))
    return lambda path: combined.match(path) is not None


def _written(pattern: str) -> str:
    return pattern.lstrip("./") if pattern.startswith("./") else pattern
