"""Compatibility detector evidence: public-API breaks between two checkouts, by griffe's static analysis.

griffe loads each package with ``allow_inspection=False``: it parses the sources and never imports
them, so no candidate code runs in the grader. The packages are the task's, or else the top-level
import packages (folders with an ``__init__.py``) at the repository root or under ``src/``, tests left
out. A package that fails to load on either side makes the detector unavailable (``None``).
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


def _breaks(package: str, base: Path, candidate: Path) -> list[CompatibilityBreak]:
    old = griffe.load(
        package, search_paths=[_search_path(base, package)], allow_inspection=False, try_relative_path=False
    )
    new = griffe.load(
        package, search_paths=[_search_path(candidate, package)], allow_inspection=False, try_relative_path=False
    )
    return [
        CompatibilityBreak(object=b.obj.path, kind=b.kind.value, detail=_detail(b.old_value))
        for b in griffe.find_breaking_changes(old, new)
    ]


def api_breaks(
    base: Path, candidate: Path, packages: list[str] | None = None, allow: list[str] | None = None
) -> list[CompatibilityBreak] | None:
    """Every break from ``base`` to ``candidate`` (checkout folders), or ``None`` when one cannot load."""
    names = packages if packages is not None else top_level_packages(base)
    try:
        breaks = [b for name in names for b in _breaks(name, base, candidate)]
    except (ImportError, OSError, SyntaxError, griffe.GriffeError):
        return None
    return mark_allowed(breaks, allow or [])
