"""api_breaks with griffe on real checkouts: removed functions and parameters, allowed breaks, src layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradeflow.tasks.compatibility import api_breaks, top_level_packages

BASE = "def area(w, h=1):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
FIXED = "def area(w, h=1):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * w + 2 * h\n"
NO_PERIMETER = "def area(w, h=1):\n    return w * h\n"
NO_PARAM = "def area(w):\n    return w * w\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"


def _checkout(root: Path, text: str, layout: str = "") -> Path:
    pkg = root / layout / "shapes"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(text)
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    return root


@pytest.mark.parametrize(
    ("candidate", "allow", "expected"),
    [
        (FIXED, [], []),
        (NO_PERIMETER, [], [("shapes.perimeter", "Public object was removed", "", False)]),
        (NO_PARAM, [], [("shapes.area", "Parameter was removed", "h", False)]),
        (NO_PERIMETER, ["shapes.perimeter"], [("shapes.perimeter", "Public object was removed", "", True)]),
    ],
)
@pytest.mark.parametrize("layout", ["", "src"])
def test_api_breaks(
    tmp_path: Path, candidate: str, allow: list[str], expected: list[tuple[str, str, str, bool]], layout: str
) -> None:
    base, cand = _checkout(tmp_path / "b", BASE, layout), _checkout(tmp_path / "c", candidate, layout)
    assert top_level_packages(base) == ["shapes"]
    breaks = api_breaks(base, cand, allow=allow)
    assert breaks is not None
    assert [(b.object, b.kind, b.detail, b.allowed) for b in breaks] == expected


def test_candidate_code_is_never_imported(tmp_path: Path) -> None:
    boom = "raise SystemExit('imported')\n\n\ndef area(w):\n    return w\n"
    breaks = api_breaks(_checkout(tmp_path / "b", BASE), _checkout(tmp_path / "c", boom))
    assert breaks is not None and {b.object for b in breaks} == {"shapes.area", "shapes.perimeter"}


def test_a_package_missing_on_the_base_is_unavailable(tmp_path: Path) -> None:
    assert api_breaks(tmp_path, _checkout(tmp_path / "c", BASE), packages=["nowhere"]) is None


@pytest.mark.parametrize("broken", ["unparseable", "removed"])
def test_a_package_the_candidate_cannot_load_is_a_break_not_an_unavailable_detector(
    tmp_path: Path, broken: str
) -> None:
    # Otherwise a patch that breaks its own package would turn the detector off, and under a profile
    # with detector_unavailable: inconclusive make its own grade inconclusive.
    base = _checkout(tmp_path / "b", BASE)
    if broken == "unparseable":
        candidate = _checkout(tmp_path / "c", "def area(w, h=1:\n    return w\n")
    else:
        candidate = tmp_path / "c"
        (candidate / "tests").mkdir(parents=True)
    breaks = api_breaks(base, candidate)
    assert breaks is not None
    assert [(b.object, b.kind, b.allowed) for b in breaks] == [("shapes", "Package cannot be loaded", False)]


def test_single_module_under_src(tmp_path: Path) -> None:
    for name, text in (("b", BASE), ("c", NO_PERIMETER)):
        (tmp_path / name / "src").mkdir(parents=True)
        (tmp_path / name / "src" / "shapes.py").write_text(text)
        (tmp_path / name / "setup.py").write_text("")
    assert top_level_packages(tmp_path / "b") == ["shapes"]
    breaks = api_breaks(tmp_path / "b", tmp_path / "c")
    assert breaks is not None and [b.object for b in breaks] == ["shapes.perimeter"]
