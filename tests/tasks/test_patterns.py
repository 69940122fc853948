"""Forbidden and required patterns: checked at load, matched on an engine that cannot hang, never dodged."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from builders import make_task
from gradeflow.cli import main
from gradeflow.errors import SpecError
from gradeflow.models import ConstraintsSpec, RequiredPattern, TaskSpec
from gradeflow.spec import load_task
from gradeflow.tasks._diff import AddedLines
from gradeflow.tasks.constraints import match_patterns, pattern_engine

LONG = "a" * 50_000


def _absent(path: str) -> str:
    raise FileNotFoundError(path)


def _forbidden(pattern: str, added: AddedLines, timeout: float = 5.0) -> tuple[list[tuple[str, int]], str | None]:
    evidence = match_patterns(ConstraintsSpec(forbidden_patterns=[pattern]), added, _absent, timeout=timeout)
    (found,) = evidence.matches
    return [(h.path, h.line) for h in found.hits], found.error


@pytest.mark.parametrize(
    ("pattern", "engine"),
    [
        (r"breakpoint\(", "re2"),
        ("(a+)+$", "re2"),
        (r"\\d", "re2"),  # an escaped backslash, then a plain d
        (r"\pN", "re2"),  # only re2 reads it
        (r"(a+)+\1$", "re"),  # a backreference
        ("(?=(a+)+$)", "re"),  # lookahead
        (r"a\Z", "re"),
        (r"import\s+pdb", "re"),  # re2's \s, \w, \d and \b are ASCII-only
        (r"\w+\.system", "re"),
        ("[[:alpha:]]", "re"),  # a POSIX class to re2, a plain set to re
        ("a{,3}", "re"),  # literal to re2
    ],
)
def test_each_pattern_runs_on_the_engine_that_reads_it_as_python_does(pattern: str, engine: str) -> None:
    assert pattern_engine(pattern) == engine


def test_catastrophic_backtracking_finishes_at_once_on_re2() -> None:
    started = time.monotonic()
    assert _forbidden("(a+)+$", {"src/x.py": [(1, LONG + "!")]}) == ([], None)
    assert _forbidden("(a+)+$", {"src/x.py": [(1, "!"), (2, LONG)]}) == ([("src/x.py", 2)], None)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("pattern", [r"(a+)+\1$", "(?=(a+)+$)"])
def test_a_pattern_re2_cannot_take_times_out_within_the_bound(pattern: str) -> None:
    started = time.monotonic()
    hits, error = _forbidden(pattern, {"src/x.py": [(1, LONG + "!")]}, timeout=1.0)
    assert (hits, error) == ([], "took longer than 1 s")
    assert time.monotonic() - started < 3.0  # the worker was killed, not waited for


def test_python_re_patterns_still_match_when_they_finish() -> None:
    assert _forbidden(r"(a+)+\1$", {"src/x.py": [(4, "aaaa")]}) == ([("src/x.py", 4)], None)


@pytest.mark.parametrize(
    ("pattern", "line"),
    [
        (r"breakpoint\(", "ｂreakpoint()"),  # Python reads identifiers in NFKC: this calls breakpoint()
        ("^import pdb", "x = 1\rimport pdb"),  # Python ends a line at a lone carriage return
        ("import pdb$", "import pdb\r"),  # a CRLF file
        (r"\w+\.system\(", "ñ.system('id')"),  # a Unicode identifier: re's \w, not re2's ASCII one
        (r"\bexec\(", "é = exec('1')"),
    ],
)
def test_forbidden_patterns_cannot_be_dodged_by_spelling(pattern: str, line: str) -> None:
    assert _forbidden(pattern, {"src/x.py": [(7, line)]}) == ([("src/x.py", 7)], None)


def test_required_patterns_match_in_the_whole_file_line_by_line() -> None:
    spec = ConstraintsSpec(
        required_patterns=[
            RequiredPattern(path="src/calc.py", pattern="^    raise ZeroDivisionError$"),
            RequiredPattern(path="src/calc.py", pattern=r"(?m)^\s+return None$"),
            RequiredPattern(path="src/none.py", pattern="x"),
        ]
    )
    files = {"src/calc.py": "def f(b):\n    if not b:\n    raise ZeroDivisionError\n    return b\n"}
    evidence = match_patterns(spec, {}, lambda p: files[p] if p in files else _absent(p))
    assert [[(h.path, h.line) for h in m.hits] for m in evidence.matches] == [[("src/calc.py", 3)], [], []]
    assert [m.engine for m in evidence.matches] == ["re2", "re", "re2"]


@pytest.mark.parametrize(
    "constraints",
    [
        {"forbidden_patterns": ["ok", "(unclosed"]},
        {"required_patterns": [{"path": "src/a.py", "pattern": "[z-a]"}]},
    ],
)
def test_a_pattern_no_engine_compiles_is_a_spec_error(constraints: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="neither re2 nor re compiles it"):
        TaskSpec.model_validate(make_task(constraints=constraints))


def test_patterns_either_engine_compiles_are_valid() -> None:
    spec = TaskSpec.model_validate(make_task(constraints={"forbidden_patterns": [r"\pL", r"(a)\1", r"(?<=x)y"]}))
    assert len(spec.constraints.forbidden_patterns) == 3


@pytest.mark.parametrize("command", ["grade", "validate"])
def test_an_invalid_pattern_exits_2_with_one_line_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    (tmp_path / "repo").mkdir()
    task = tmp_path / "task.yaml"
    spec = make_task(repo="./repo", constraints={"forbidden_patterns": ["breakpoint\\(", "(a+"]})
    task.write_text(yaml.safe_dump(spec))
    with pytest.raises(SpecError, match=r"constraints\.forbidden_patterns"):
        load_task(task)
    args = ["grade", str(task), "--patch", str(task)] if command == "grade" else ["validate", str(task)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "task.yaml: constraints.forbidden_patterns: invalid regular expression '(a+'" in err
