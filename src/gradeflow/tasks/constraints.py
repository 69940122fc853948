"""Task: the constraints gate. It matches the task's patterns (evidence); the grader scores the matches.

What is matched. A forbidden pattern is searched in every line the patch adds, in every file, by the
file's real name (read from git's diff with its quoting undone: spaces, tabs, newlines, quotes and
non-ASCII names included). Each line is also searched in its NFKC form, since Python reads identifiers
that way (``ｂreakpoint()`` calls ``breakpoint``), and piece by piece between carriage returns, since
Python ends a line at a lone ``\\r``. A required pattern is searched in its whole file after the patch,
``^``/``$`` at each line.

Engines. A pattern runs on google-re2, whose time is linear in the text, when re2 compiles it and reads
it the way Python's ``re`` does. re2's ``\\w \\d \\s \\b`` (and their capitals) are ASCII-only, ``[:`` opens a
POSIX class and ``{,n}`` is literal, so a pattern holding any of them, and one re2 cannot compile
(backreferences, lookaround, ``\\Z``, verbose mode), runs on Python's ``re`` instead: in a bare child
interpreter, one per pattern, killed after ``PATTERN_TIMEOUT`` seconds. A pattern that runs out of time
fails its check with ``pattern-timeout``: the text it hung on is the patch's.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata
import warnings
from collections.abc import Callable

import re2
from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.errors import InfraError
from gradeflow.graders.base import GradingContext
from gradeflow.graders.constraints import ConstraintGrader
from gradeflow.models import ConstraintsSpec, GradeComponent, RequiredPattern, TaskSpec
from gradeflow.models.evidence import PatternEngine, PatternEvidence, PatternHit, PatternMatches
from gradeflow.tasks._diff import AddedLines, added_by_path
from gradeflow.tasks.baseline import replaced_by_hidden
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["PATTERN_TIMEOUT", "check_constraints", "match_patterns", "pattern_engine"]

PATTERN_TIMEOUT = 5.0
"""Seconds one pattern may take on Python's ``re`` (read at each call, so a test may lower it)."""

# Tokens re2 reads differently from Python's re; `\\.` first, so an escaped backslash is skipped whole.
_DIFFERENT = re.compile(r"\\.|\[:|\{,", re.DOTALL)
_ASCII_ONLY = frozenset({"\\w", "\\W", "\\b", "\\B", "\\d", "\\D", "\\s", "\\S", "[:", "{,"})

# Run as `python -I -S -c`: a bare interpreter (no site-packages, no gradeflow) starts in milliseconds.
_WORKER = (
    "import json, re, sys\n"
    "job = json.load(sys.stdin)\n"
    "regex = re.compile(job['pattern'], job['flags'])\n"
    "json.dump([[i, m.start()] for i, t in enumerate(job['texts']) if (m := regex.search(t))], sys.stdout)\n"
)

_Found = list[tuple[int, int]]
"""(index of the text, start of the first match in it) for each text that matches."""


@task(name="constraints", cache_policy=NO_CACHE)
def check_constraints(task_spec: TaskSpec, snapshot: Snapshot) -> GradeComponent:
    """Match the patterns on the snapshot, then grade the constraints gate on the changes and the matches."""
    view = snapshot.view()
    evidence = match_patterns(task_spec.constraints, added_by_path(snapshot.patch.encode()), view.read)
    grader = ConstraintGrader(evidence, replaced_by_hidden(task_spec))
    return grader.grade(GradingContext(task=task_spec, workspace=view))


def match_patterns(
    constraints: ConstraintsSpec, added: AddedLines, read: Callable[[str], str], timeout: float | None = None
) -> PatternEvidence:
    """Every forbidden pattern on the added lines and every required pattern in its file.

    ``read`` returns a file's text after the patch (``FileNotFoundError`` when there is none).
    """
    bound = PATTERN_TIMEOUT if timeout is None else timeout
    matches = [_forbidden(p, added, bound) for p in constraints.forbidden_patterns]
    matches += [_required(r, read, bound) for r in constraints.required_patterns]
    return PatternEvidence(matches=matches, timeout=bound)


def pattern_engine(pattern: str) -> PatternEngine:
    """``re2`` when re2 compiles ``pattern`` and reads it as Python's ``re`` does, else ``re``."""
    if _re2(pattern, multiline=False) is None:
        return "re"
    try:
        with warnings.catch_warnings():  # the spec's load has shown re's warnings (a nested set) already
            warnings.simplefilter("ignore")
            re.compile(pattern)
    except re.error:
        return "re2"  # only re2 reads it
    return "re" if any(t[0] in _ASCII_ONLY for t in _DIFFERENT.finditer(pattern)) else "re2"


def _forbidden(pattern: str, added: AddedLines, timeout: float) -> PatternMatches:
    where: list[tuple[str, int]] = []
    texts: list[str] = []
    for path, lines in added.items():
        for number, text in lines:
            forms = _line_forms(text)
            where += [(path, number)] * len(forms)
            texts += forms
    engine, found, error = _search(pattern, texts, multiline=False, timeout=timeout)
    hits = dict.fromkeys(where[i] for i, _ in found)
    return PatternMatches(
        kind="forbidden",
        pattern=pattern,
        engine=engine,
        hits=[PatternHit(path=p, line=n) for p, n in hits],
        error=error,
    )


def _line_forms(text: str) -> list[str]:
    """The forms of one added line a forbidden pattern is searched in (see the module docstring)."""
    forms = list(dict.fromkeys([text, unicodedata.normalize("NFKC", text)]))
    return forms + [piece for form in forms if "\r" in form for piece in form.split("\r")]


def _required(spec: RequiredPattern, read: Callable[[str], str], timeout: float) -> PatternMatches:
    try:
        text = read(spec.path)
    except (FileNotFoundError, UnicodeDecodeError):
        text = None
    engine, found, error = _search(spec.pattern, [] if text is None else [text], multiline=True, timeout=timeout)
    hits = [PatternHit(path=spec.path, line=text.count("\n", 0, start) + 1) for _, start in found if text]
    return PatternMatches(kind="required", pattern=spec.pattern, path=spec.path, engine=engine, hits=hits, error=error)


def _search(
    pattern: str, texts: list[str], *, multiline: bool, timeout: float
) -> tuple[PatternEngine, _Found, str | None]:
    """Which texts ``pattern`` matches, on the engine :func:`pattern_engine` picks; an error when it could not say."""
    engine = pattern_engine(pattern)
    regex = _re2(pattern, multiline=multiline) if engine == "re2" else None
    if regex is not None:
        return engine, [(i, m.start()) for i, t in enumerate(texts) if (m := regex.search(t))], None
    if not texts:
        return engine, [], None
    found, error = _search_bounded(pattern, texts, re.MULTILINE if multiline else 0, timeout)
    return engine, found, error


def _re2(pattern: str, *, multiline: bool) -> re2._Regexp | None:
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(("(?m)" if multiline else "") + pattern, options)
    except re2.error:
        return None


def _search_bounded(pattern: str, texts: list[str], flags: int, timeout: float) -> tuple[_Found, str | None]:
    """Python's ``re`` in a child interpreter that is killed after ``timeout`` seconds (a thread cannot stop it)."""
    job = json.dumps({"pattern": pattern, "flags": flags, "texts": texts}).encode()
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _WORKER], input=job, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return [], f"took longer than {timeout:g} s"
    except OSError as exc:
        raise InfraError(f"cannot start a Python interpreter to match {pattern!r}: {exc}") from exc
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        return [], f"failed: {lines[-1] if lines else f'exit status {proc.returncode}'}"
    return [(int(i), int(start)) for i, start in json.loads(proc.stdout)], None
