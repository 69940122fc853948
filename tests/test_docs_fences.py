"""Every code fence of README.md and docs/operations.md has a handling (``tests/docs_fences.py``): a fence
added without one fails here, and so does a listed fence that is gone or a test named that does not exist."""

from __future__ import annotations

from docs_fences import DOCS, HANDLING, ROOT, fences


def _listed(doc: str, first: str) -> list[tuple[str, str]]:
    return [key for key in HANDLING if key[0] == doc and first.startswith(key[1])]


def test_every_fence_has_one_handling() -> None:
    found = [(f.doc, f.line, f.first) for doc in DOCS for f in fences(doc)]
    assert [(doc, line, first) for doc, line, first in found if len(_listed(doc, first)) != 1] == []


def test_every_handling_is_a_fence_of_its_document() -> None:
    found = [(f.doc, f.first) for doc in DOCS for f in fences(doc)]
    assert [key for key in HANDLING if not any(d == key[0] and first.startswith(key[1]) for d, first in found)] == []


def test_the_tests_named_exist() -> None:
    named = [what for how, what in HANDLING.values() if how in ("run", "checked")]
    missing = [what for what in named if f"def {what.split('::')[1]}(" not in (ROOT / what.split("::")[0]).read_text()]
    assert missing == []
    assert {how for how, _ in HANDLING.values()} <= {"run", "checked", "not code", "excepted"}
