"""Path globs as task specs write them: ``*`` stays within a folder, ``**`` crosses folders."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["glob_to_regex", "matches_any"]


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
    return any(glob_to_regex(p.lstrip("./") if p.startswith("./") else p).match(path) for p in patterns)
