"""Every code fence of README.md and of every page of docs/ has a handling (``tests/docs_fences.py``): a fence
added without one fails here, and so does a listed fence that is gone, a test named that does not exist, and a
fence whose page says "not run" where its handling runs it (or the other way round)."""

from __future__ import annotations

from docs_fences import DOCS, EXCEPTED, HANDLING, NOT_CODE, ROOT, fences


def _listed(doc: str, first: str) -> list[tuple[str, str]]:
    return [key for key in HANDLING if key[0] == doc and first.startswith(key[1])]


def test_every_page_of_the_site_is_read() -> None:
    assert "README.md" in DOCS and "docs/index.md" in DOCS and "docs/reference/reason-codes.md" in DOCS
    assert len(DOCS) == 1 + len(list((ROOT / "docs").rglob("*.md")))


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
    assert {how for how, _ in HANDLING.values()} <= {"run", "checked", NOT_CODE, EXCEPTED}


def test_a_fence_is_marked_not_run_in_its_page_exactly_when_no_test_runs_it() -> None:
    """``<!-- not run: why -->`` above a fence in the page, and a handling of "not code" or "excepted" here."""
    disagree = []
    for doc in DOCS:
        for block in fences(doc):
            [key] = _listed(doc, block.first)
            not_run = HANDLING[key][0] in (NOT_CODE, EXCEPTED)
            if not_run != (block.not_run is not None):
                disagree.append((doc, block.line, block.first, HANDLING[key][0], block.not_run))
    assert disagree == []


def test_the_not_run_comment_is_read_from_the_page() -> None:
    [drawing] = [f for f in fences("docs/index.md") if f.first.startswith("pin base")]
    assert drawing.not_run == "the grading steps drawn"
    [grade] = [f for f in fences("README.md") if f.first.startswith("gradeflow grade")]
    assert grade.not_run is None
