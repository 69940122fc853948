"""Compatibility detector evidence: public-API breaks between two checkouts, by griffe's static analysis.

griffe loads each package with ``allow_inspection=False``: it parses the sources and never imports
them, so no candidate code runs in the grader. The packages are the task's, or else the top-level
import packages (folders with an ``__init__.py``) at the repository root or under ``src/``, tests left
out. A package that fails to load on the base makes the detector unavailable (``None``); one the
candidate cannot load is a break of that package, so no patch turns the detector off.
"""

from __future__ import annotations

from pathlib import Path

import griffe

from gradeflow.graders.compatibility import CompatibilityBreak, mark_allowed

__all__ = ["api_breaks", "top_level_packages"]


def _search_path(root: Path, package: str) -> Path:
    src = root / "src"
    return src if (src / package).is_dir() or (src / f"{package}.py").is_file() else root


def top_level_packages(root: Path) -> list[str]:
    """The import packages at ``root`` or under ``root/src``, and the modules under ``root/src``, sorted.

    Test folders are left out, and so are modules at the root (``setup.py``, ``conftest.py``, scripts).
    """
    packages = {
        d.name
        for base in (root, root / "src")
        if base.is_dir()
        for d in base.iterdir()
        if (d / "__init__.py").is_file() and d.name not in {"tests", "test"}
    }
    src = root / "src"
    modules = {f.stem for f in src.glob("*.py") if f.stem != "conftest"} if src.is_dir() else set()
    return sorted(packages | modules)


def _detail(old_value: object) -> str:
    # A removed or changed parameter names the part of the object that broke; a removed object is whole.
    return old_value.name if isinstance(old_value, griffe.Parameter) else ""


_LOAD_ERRORS = (ImportError, OSError, SyntaxError, ValueError, griffe.GriffeError, griffe.LoadingError)


class _BaseUnloadable(Exception):
    """The base's package cannot be loaded: the detector cannot run (not the candidate's doing)."""


def _load(package: str, root: Path) -> griffe.Object | griffe.Alias:
    return griffe.load(
        package, search_paths=[_search_path(root, package)], allow_inspection=False, try_relative_path=False
    )


def _breaks(package: str, base: Path, candidate: Path) -> list[CompatibilityBreak]:
    try:
        old = _load(package, base)
    except _LOAD_ERRORS as exc:
        raise _BaseUnloadable(package) from exc
    try:
        new = _load(package, candidate)
    except _LOAD_ERRORS as exc:
        # The patch left the package unparseable or removed it: every importer breaks. Counted as a
        # break, so a patch cannot turn the detector off (and a strict grade inconclusive) by breaking it.
        why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return [CompatibilityBreak(object=package, kind="Package cannot be loaded", detail=why)]
    return [
        CompatibilityBreak(object=b.obj.path, kind=b.kind.value, detail=_detail(b.old_value))
        for b in griffe.find_breaking_changes(old, new)
    ]


def api_breaks(
    base: Path, candidate: Path, packages: list[str] | None = None, allow: list[str] | None = None
) -> list[CompatibilityBreak] | None:
    """Every break from ``base`` to ``candidate`` (checkout folders), or ``None`` when the base cannot load.

    A package the candidate cannot load (a syntax error, removed) is one break of that package.
    """
    names = packages if packages is not None else top_level_packages(base)
    try:
        breaks = [b for name in names for b in _breaks(name, base, candidate)]
    except _BaseUnloadable:
        return None
    return mark_allowed(breaks, allow or [])
