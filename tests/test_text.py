"""Text for people is neutralised: a candidate's file name holding ESC, CR, LF, backticks and a link reaches
the terminal, the summary artifact and the review form as literal text.

The real input: the calc example's reference fix plus a file ``docs/<ESC>[2K<CR>PASS 1.000 (forged)<LF># owned
`x` [l](http:e.vil)`` (outside the task's allowed files, so the grade names it), graded through the CLI in
the local sandbox; the markdown is rendered with markdown-it (CommonMark) and read back as tokens.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

import gradeflow.tasks.combine as combine
from gradeflow.cli import main
from gradeflow.models import GradeResult
from gradeflow.service.review import ReviewRequest, review_form
from gradeflow.text import for_markdown, for_terminal, markdown_code

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "calc"
NAME = "\x1b[2K\rPASS 1.000 (forged)\n# owned `x` [l](http:e.vil) <b>bold *em* | cell"
HOSTILE = [NAME, "a\u202eevil", "bell\x07", "nul\x00", "c1\x9b2J", "tab\tkept", "`` two ``", "plain"]


def _tokens(markdown: str) -> list[Any]:
    return [t for block in MarkdownIt("commonmark").parse(markdown) for t in [block, *(block.children or [])]]


@pytest.mark.parametrize("text", HOSTILE)
def test_terminal_text_holds_no_character_a_terminal_acts_on(text: str) -> None:
    shown = for_terminal(text)
    assert not any((ord(c) < 0x20 and c != "\t") or 0x7F <= ord(c) <= 0x9F or c == "\u202e" for c in shown)
    assert "\n" not in shown and (shown == text or "\\" in shown)


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_text_renders_as_one_literal_line(text: str) -> None:
    for rendered in (f"- {for_markdown(text)}", f"- {markdown_code(text)}"):
        types = {t.type for t in _tokens(rendered)}
        assert types & {"heading_open", "link_open", "image", "html_inline", "html_block", "em_open"} == set()
        assert sum(t.type == "list_item_open" for t in _tokens(rendered)) == 1, rendered


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, prefect: None) -> tuple[int, str, GradeResult]:
    folder = tmp_path_factory.mktemp("hostile-name")
    workspace = folder / "workspace"
    shutil.copytree(EXAMPLE / "repo", workspace)
    subprocess.run(["git", "apply", str(EXAMPLE / "reference.diff")], cwd=workspace, check=True)
    (workspace / "docs").mkdir(exist_ok=True)
    (workspace / "docs" / NAME).write_text("x\n")
    out = folder / "result.json"
    stdout = io.StringIO()
    args = ["--workspace", str(workspace), "--sandbox", "local", "--out", str(out)]
    with contextlib.redirect_stdout(stdout):
        code = main(["grade", str(EXAMPLE / "task.yaml"), *args])
    return code, stdout.getvalue(), GradeResult.model_validate(json.loads(out.read_text()))


@pytest.mark.slow
@pytest.mark.usefixtures("prefect")
def test_the_cli_prints_the_name_escaped_on_one_line(graded: tuple[int, str, GradeResult]) -> None:
    code, stdout, result = graded
    assert (code, result.decision, result.reason_codes) == (1, "rejected", ["scope-expansion"])
    assert "\x1b" not in stdout and "\r" not in stdout
    assert stdout.splitlines()[0].startswith("FAIL 0.000")
    assert not any(line.startswith(("PASS", "# owned")) for line in stdout.splitlines())
    named = [line for line in stdout.splitlines() if "forged" in line]
    assert len(named) == 1 and "\\x1b[2K\\rPASS 1.000 (forged)\\n# owned" in named[0]


@pytest.mark.slow
@pytest.mark.usefixtures("prefect")
def test_the_summary_artifact_and_the_review_form_show_the_name_as_text(
    graded: tuple[int, str, GradeResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    result = graded[2]
    published: dict[str, str] = {}

    def post(artifacts: list[Any]) -> None:
        published.update(markdown=next(a.data for a in artifacts if a.type == "markdown"))

    monkeypatch.setattr(combine, "post_artifacts", post)
    combine.publish_artifacts(result)
    request = ReviewRequest.for_grade(
        result, content_key="k", run_id="r", ledger=None, questions=["is `this` [ok](http:x)?"], timeout_hours=1
    )
    for markdown in (published["markdown"], review_form(request)):
        assert "\r" not in markdown and "\x1b" not in markdown
        tokens = _tokens(markdown)
        headings = [t.content for t in tokens if t.type == "inline" and "owned" in t.content]
        assert headings and all("forged" in h for h in headings), headings
        assert not any(t.type in {"link_open", "image", "html_inline", "html_block"} for t in tokens), markdown
        assert sum(t.type == "heading_open" for t in tokens) == markdown.count("\n#") + markdown.startswith("#")


def test_report_prints_model_ids_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from evaluate_helpers import record
    from gradeflow.evaluation.ledger import Ledger

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(url)
    try:
        ledger.add(record(model_id="m\x1b[31m\rforged\nrow"))
    finally:
        ledger.close()
    assert main(["report", "--ledger", url]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "m\\x1b[31m\\rforged\\nrow" in out
    assert not any(line.startswith("row") for line in out.splitlines())
