"""Which functions a patch touched, from the diff's line numbers and per-function metrics. Pure.

A function is *touched* when a line the patch adds lies within its span after the patch, or a line
the patch removes lies within its span before it (decorators are outside the span). A nested
function is touched together with the function around it.
"""

from __future__ import annotations

from functools import lru_cache

from gradeflow.models.evidence import FunctionChange, FunctionMetrics, TouchedLines
from gradeflow.tasks._diff import file_diffs

__all__ = ["selected_test_ids", "touched_functions", "touched_lines"]


def touched_lines(patch: str) -> dict[str, TouchedLines]:
    """Per path after the patch, the lines it adds and removes; ``{}`` when the diff cannot be read.

    Paths are the real file names (git's quoting undone), as in the snapshot's list of changes. The
    diff is parsed once per patch: the steps that ask for it (tamper scan, test evidence, reviewability)
    share the parse, so callers must not change what they get.
    """
    return dict(_parsed(patch))


@lru_cache(maxsize=4)
def _parsed(patch: str) -> tuple[tuple[str, TouchedLines], ...]:
    found: dict[str, TouchedLines] = {}
    for changed in file_diffs(patch.encode("utf-8", errors="surrogateescape")):
        if changed.path is None:
            continue
        found[changed.path] = TouchedLines(
            old_path=changed.old_path,
            added={number for number, _ in changed.added},
            removed=set(changed.removed),
        )
    return tuple(found.items())


def _spans(function: FunctionMetrics, numbers: set[int]) -> bool:
    return any(function.lineno <= n < function.lineno + function.length for n in numbers)


def touched_functions(
    path: str, before: list[FunctionMetrics], after: list[FunctionMetrics], lines: TouchedLines
) -> list[FunctionChange]:
    """The functions of ``path`` the patch touched, in order of appearance after, then before."""
    old = {f.name: f for f in before}
    new = {f.name: f for f in after}
    names = [f.name for f in after if _spans(f, lines.added)]
    names += [f.name for f in before if _spans(f, lines.removed)]
    return [FunctionChange(path=path, name=n, before=old.get(n), after=new.get(n)) for n in dict.fromkeys(names)]


def selected_test_ids(path: str, changes: list[FunctionChange], functions: list[FunctionMetrics]) -> list[str]:
    """pytest node ids of the touched tests of ``path`` that still exist after the patch.

    A test is a module-level ``test*`` function or a ``test*`` method of a ``Test*`` class; any other
    touched method of a ``Test*`` class (``setUp``, a fixture) selects the whole class. Touched helpers
    and fixtures at module level select nothing, and pytest's ``python_functions``/``python_classes``
    settings are not read.
    """
    defined = {f.name for f in functions}
    ids: list[str] = []
    for change in changes:
        parts = change.name.split(".")
        if change.after is None or len(parts) > 2:
            continue
        if len(parts) == 1 and parts[0].startswith("test"):
            ids.append(f"{path}::{parts[0]}")
        elif len(parts) == 2 and parts[0].startswith("Test") and parts[0] not in defined:
            ids.append(f"{path}::{parts[0]}::{parts[1]}" if parts[1].startswith("test") else f"{path}::{parts[0]}")
    selected = list(dict.fromkeys(ids))
    classes = {i for i in selected if i.count("::") == 1 and i.split("::")[1].startswith("Test")}
    return [i for i in selected if not any(i.startswith(c + "::") for c in classes)]
