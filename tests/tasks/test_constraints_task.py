"""The constraints task on real git output: every added line is checked whatever its file is called.

File names with a space, a tab, a newline, a double quote, a backslash or a non-ASCII letter are quoted
(or not) by git in its diffs; the patterns must reach them all, in a patch and in a checkout, through
the real grade path. Matching must end within its bound whatever the patch adds.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from fakes import BUG, FIX, diff, fake_pytest, write_task
from gradeflow import grade, load_task
from gradeflow.models import GradeResult
from gradeflow.sandbox import FakeSandboxFactory
from gradeflow.tasks import constraints
from gradeflow.tasks._diff import added_by_path
from gradeflow.tasks._functions import touched_lines

NAMES = [
    "src/é.py",
    "src/a b.py",
    "src/tab\tname.py",
    "src/new\nline.py",
    'src/q"uote.py',
    "src/back\\slash.py",
    "src/x.py b/src/y.py",
]
"""Names git prints quoted, or with spaces that make its ``diff --git`` line ambiguous."""
FORBID = {"forbidden_patterns": [r"breakpoint\(", "import pdb"]}


def _git(repo: Path, *args: str, quote_path: bool = True) -> bytes:
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    config = ["-c", f"core.quotePath={str(quote_path).lower()}", "-c", "user.name=t", "-c", "user.email=t@t"]
    return subprocess.run(["git", *config, *args], cwd=repo, env=env, check=True, capture_output=True).stdout


def _agent_patch(tmp_path: Path, quote_path: bool) -> str:
    """The diff an agent's own git prints for the fix plus one forbidden line in each oddly named file."""
    repo = tmp_path / f"agent-{quote_path}"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "calc.py").write_text(BUG)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / "src" / "calc.py").write_text(FIX)
    for name in NAMES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("x = 1\nbreakpoint()\n")
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached", "HEAD", quote_path=quote_path).decode()


def _fake() -> FakeSandboxFactory:
    return FakeSandboxFactory(fake_pytest)


def _forbidden_hits(result: GradeResult) -> list[str]:
    component = result.component("constraints")
    return [m for m in component.messages if m.startswith("forbidden_pattern 'breakpoint")]


@pytest.mark.parametrize("quote_path", [True, False])
def test_diff_readers_use_the_real_names(tmp_path: Path, quote_path: bool) -> None:
    patch = _agent_patch(tmp_path, quote_path)
    added = added_by_path(patch.encode())
    assert set(added) == {"src/calc.py", *NAMES}
    assert all(added[name] == [(1, "x = 1"), (2, "breakpoint()")] for name in NAMES)
    touched = touched_lines(patch)
    assert set(touched) == set(added) and touched["src/a b.py"].added == {1, 2}


def test_hunk_lines_that_read_like_headers_are_content() -> None:
    patch = diff(BUG + "-- a/gone.py\n", FIX + "++ b/elsewhere.py\nbreakpoint()\n")  # "--- a/…", "+++ b/…"
    assert "\n--- a/gone.py\n" in patch and "\n+++ b/elsewhere.py\n" in patch
    added = added_by_path(patch.encode())
    assert list(added) == ["src/calc.py"]
    assert [text for _, text in added["src/calc.py"]][-2:] == ["++ b/elsewhere.py", "breakpoint()"]


@pytest.mark.usefixtures("prefect")
@pytest.mark.parametrize("quote_path", [True, False])
def test_a_forbidden_line_in_an_oddly_named_file_of_a_patch_fails(tmp_path: Path, quote_path: bool) -> None:
    task = load_task(write_task(tmp_path, constraints=FORBID))
    result = grade(task, patch=_agent_patch(tmp_path, quote_path), sandbox=_fake())
    assert sorted(result.files_changed) == sorted(["src/calc.py", *NAMES])
    component = result.component("constraints")
    assert component.reason_codes == ["forbidden-pattern"]
    shown = [m.split(": ", 1)[1].rsplit(": added line 2 matches", 1)[0] for m in _forbidden_hits(result)]
    assert sorted(shown) == sorted(n if n.isprintable() else json.dumps(n, ensure_ascii=False) for n in NAMES)
    assert len(component.messages) == len(NAMES)  # one line per file


@pytest.mark.usefixtures("prefect")
def test_a_forbidden_line_in_an_oddly_named_file_of_a_checkout_fails(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, constraints=FORBID))
    checkout = tmp_path / "checkout"
    shutil.copytree(tmp_path / "repo", checkout)
    (checkout / "src" / "calc.py").write_text(FIX)
    for name in NAMES:
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text("breakpoint()\n")
    result = grade(task, workspace=checkout, sandbox=_fake())
    component = result.component("constraints")
    assert component.reason_codes == ["forbidden-pattern"]
    assert len(_forbidden_hits(result)) == len(component.messages) == len(NAMES)
    assert result.component("tests").passed


@pytest.mark.usefixtures("prefect")
def test_catastrophic_backtracking_on_a_long_added_line_does_not_hang(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, constraints={"forbidden_patterns": ["(a+)+$"]}))
    started = time.monotonic()
    result = grade(task, patch=diff(BUG, FIX + "x = '" + "a" * 50_000 + "!'\n"), sandbox=_fake())
    assert time.monotonic() - started < 30  # the whole grade; re2 itself takes milliseconds
    assert (result.status, result.passed) == ("graded", True)
    assert result.component("constraints").details["patterns"][0]["engine"] == "re2"
    hit = grade(task, patch=diff(BUG, FIX + "a" * 50_000 + "\n"), sandbox=_fake())
    assert hit.reason_codes[:1] == ["forbidden-pattern"]


@pytest.mark.usefixtures("prefect")
@pytest.mark.parametrize("pattern", [r"(a+)+\1$", "(?=(a+)+$)"])
def test_a_pattern_only_python_reads_ends_with_pattern_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    monkeypatch.setattr(constraints, "PATTERN_TIMEOUT", 1.0)
    task = load_task(write_task(tmp_path, constraints={"forbidden_patterns": [pattern]}))
    started = time.monotonic()
    result = grade(task, patch=diff(BUG, FIX + "x = '" + "a" * 50_000 + "!'\n"), sandbox=_fake())
    assert time.monotonic() - started < 30
    assert (result.status, result.passed) == ("graded", False)  # the candidate's, never inconclusive
    component = result.component("constraints")
    assert component.reason_codes == ["pattern-timeout"]
    assert component.messages == [f"forbidden_pattern {pattern!r}: matching {pattern!r} (re) took longer than 1 s"]
