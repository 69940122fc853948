"""The documentation site: it builds strictly (as ``make docs`` and CI's ``make lint`` build it), its generated
references follow the code, every reason code has an entry, the README is a landing page whose links resolve,
and the pages with figures show them in headless Chromium.

The site is built once for this file, with ``mkdocs build --strict``: a broken link or anchor, a page missing
from the navigation, a reason code without an entry or an unknown generated part fails it
(``scripts/gen_docs.py`` generates the task spec, CLI and reason-code parts).
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from markdown.extensions.toc import slugify

from docs_fences import FIRST_GRADE, INSTALL, ROOT, fence, fences, shown
from gradeflow.models import TaskSpec
from gradeflow.models.reasons import BUILTIN_REASON_CODES

MKDOCS = Path(sys.executable).parent / "mkdocs"
README = ROOT / "README.md"
REASONS = ROOT / "docs" / "reference" / "reason-codes.md"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
PICTURE = re.compile(r"!\[([^\]]+)\]\([^)]+\)")
PAGES = sorted(page.relative_to(ROOT / "docs") for page in (ROOT / "docs").rglob("*.md"))


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_docs = _load("gen_docs", ROOT / "scripts" / "gen_docs.py")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as ``make docs`` builds it (strict), in a folder of this module's."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    return out


def _text(page: Path) -> str:
    """A built page's text: tags dropped, entities decoded, whitespace folded."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.read_text())).split())


def test_every_page_is_built(site: Path) -> None:
    assert PAGES and all((site / page.with_suffix(".html")).is_file() for page in PAGES)
    assert (site / "search" / "search_index.json").is_file()


def test_every_reason_code_has_an_entry() -> None:
    """The registry (``gradeflow.models.reasons``) and the reference page name the same codes, each once."""
    documented = gen_docs.documented_codes(REASONS.read_text())
    assert sorted(documented) == sorted(BUILTIN_REASON_CODES)
    assert len(documented) == len(set(documented))
    entries = re.split(r"^### ", REASONS.read_text(), flags=re.M)[1:]
    assert all("**Cause.**" in entry and "**What to do.**" in entry for entry in entries)


def test_the_built_reason_codes_carry_the_registrys_words(site: Path) -> None:
    page = (site / "reference" / "reason-codes.html").read_text()
    text = _text(site / "reference" / "reason-codes.html")
    for code, meaning in BUILTIN_REASON_CODES.items():
        assert f'id="{code}"' in page, code
        assert " ".join(meaning.split()) in text, code


def test_a_page_and_registry_that_disagree_stop_the_build() -> None:
    page = REASONS.read_text()
    missing = page.replace("### `empty-patch`", "### empty patch")
    with pytest.raises(gen_docs.GenerationError, match="no entry for \\['empty-patch'\\]"):
        gen_docs.reason_codes_markdown(missing)
    with pytest.raises(gen_docs.GenerationError, match="unregistered codes \\['not-a-code'\\]"):
        gen_docs.reason_codes_markdown(page + "\n### `not-a-code`\n")
    with pytest.raises(gen_docs.GenerationError, match="unknown generated part \\['nothing'\\]"):
        gen_docs.expand("<!-- generated: nothing -->\n", "reference/cli.md")


def test_the_cli_reference_has_every_command_and_option(site: Path) -> None:
    from gradeflow.cli.main import _parser

    text = _text(site / "reference" / "cli.html")
    for path, _, parser in gen_docs._commands(_parser(), "gradeflow"):
        assert path in text, path
        for action in parser._actions:
            if action.help != argparse.SUPPRESS and not isinstance(action, argparse._SubParsersAction):
                assert all(option in text for option in action.option_strings), (path, action.option_strings)


def test_the_task_spec_reference_has_every_key(site: Path) -> None:
    schema = TaskSpec.model_json_schema()
    page = (site / "reference" / "task-spec.html").read_text()
    sections = gen_docs._sections(schema)
    assert set(sections) == set(schema["$defs"])
    for definition in [schema, *schema["$defs"].values()]:
        assert all(f"<code>{key}</code>" in page for key in definition["properties"]), definition["title"]
    assert "Seconds before the whole test command" in _text(site / "reference" / "task-spec.html")  # a docstring


def test_the_python_api_reference_documents_the_public_names(site: Path) -> None:
    page = (site / "reference" / "python-api.html").read_text()
    for name in ("gradeflow.api.grade", "gradeflow.spec.load_task", "gradeflow.models.GradeResult", "gradeflow.errors"):
        assert f'id="{name}"' in page, name
    assert "Grade one submission through the" in page
    assert not re.search(r":(func|class|mod|meth|attr):", page)  # roles read as code


def test_the_readme_is_a_landing_page() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    firsts = [f.first.split()[:2] for f in fences("README.md")]
    assert firsts == [["make", "demo"], ["gradeflow", "grade"]]  # the two commands, one grade
    assert len(re.findall(r"!\[[^\]]+\]\(docs/[^)]+\.(png|svg)\)", text)) == 1  # one picture
    assert "mkdocs serve" in text and "make docs" in text


def _headings(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings, as MkDocs makes them (fenced blocks left out)."""
    anchors, fenced = set(), False
    for line in page.read_text().splitlines():
        fenced = fenced != line.strip().startswith("```")
        heading = re.match(r"#{1,6} (.+)", line)
        if heading and not fenced:
            anchors.add(slugify(heading.group(1).replace("`", ""), "-"))
    return anchors


def test_every_link_of_the_readme_resolves() -> None:
    """Relative links (pages and pictures) name files that exist, and an anchor a heading of the page."""
    links = LINK.findall(README.read_text())
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert len([link for link in local if link.startswith("docs/") and ".md" in link]) >= 10
    broken = []
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        if not target.is_file() or (anchor and anchor not in _headings(target)):
            broken.append(link)
    assert broken == []


def test_the_readme_links_every_page_of_the_site() -> None:
    linked = {link.partition("#")[0] for link in LINK.findall(README.read_text())}
    assert {f"docs/{page}" for page in PAGES if page.name != "index.md"} <= linked


def test_the_readme_blocks_are_the_pages_blocks() -> None:
    """The README's two commands and its one grade are the install page's and the first grade's, which run."""
    assert fence("README.md", "make demo").text == fence(INSTALL, "make demo").text
    readme = fence("README.md", "gradeflow grade examples/calc/task.yaml --patch").text
    page = fence(FIRST_GRADE, "gradeflow grade examples/calc/task.yaml --patch").text
    command = readme.splitlines()[0]
    assert page.startswith(command + "\n") and shown(readme, command) == shown(page, command)
    assert readme == "\n".join([command, *(f"# {line}" for line in shown(page, command))]) + "\n"


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path:
        return path
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true but chromium is missing: .ci/run must `apt-get install -y chromium`")
    pytest.skip("chromium is not installed (apt-get install -y chromium)")


IMAGES = """(() => [...document.querySelectorAll('article img')].map(
  (img) => [img.getAttribute('alt'), img.complete, img.naturalWidth, img.getBoundingClientRect().width]))()"""


def _images(page: Any, timeout: float = 30) -> list[list[Any]]:
    """The article's pictures (alt, loaded, natural width, shown width) once every one has loaded or failed."""
    deadline = time.monotonic() + timeout
    found: list[list[Any]] = page.evaluate(IMAGES) or []
    while time.monotonic() < deadline and not (found and all(complete for _, complete, *_ in found)):
        time.sleep(0.5)
        found = page.evaluate(IMAGES) or []
    return found


def test_the_pages_with_figures_show_them_in_headless_chromium(site: Path, tmp_path: Path) -> None:
    """Each page with a picture, opened from the built site as a reader's browser opens it: every picture loads
    (a broken path shows nothing, which the strict build does not catch) and is laid out at a readable width."""
    figures = {page: PICTURE.findall((ROOT / "docs" / page).read_text()) for page in PAGES}
    figures = {page: alts for page, alts in figures.items() if alts}
    assert len(figures) >= 3  # the landing page, the service how-to and operations
    chromium_page = _load("chromium_page", ROOT / "tests" / "service" / "chromium_page.py")
    page = chromium_page.ChromiumPage(_chromium(), tmp_path / "profile")
    try:
        for source, alts in figures.items():
            title = (ROOT / "docs" / source).read_text().splitlines()[0].removeprefix("# ").replace("`", "")
            page.goto((site / source.with_suffix(".html")).as_uri())
            page.wait_for_text([title], 30)
            pictures = _images(page)
            assert [alt for alt, *_ in pictures] == alts, source
            assert all(loaded and natural > 100 and width > 300 for _, loaded, natural, width in pictures), (
                source,
                pictures,
            )
            shot = tmp_path / f"{source.stem}.png"
            page.screenshot(shot)
            assert shot.stat().st_size > 10_000
    finally:
        page.close()
