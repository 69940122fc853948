"""Read per-test outcomes from a test runner's console log into :class:`TestCaseResult` models.

The log formats SWE-bench grades Python repositories by (:data:`LOG_FORMATS`), each read into the cases
pytest's JUnit writer would give, so :func:`~gradeflow.tasks._junit.outcomes_for` matches them unchanged:

- ``pytest-log``: the ``-rA`` short test summary of pytest 3 to 9 (``PASSED``/``FAILED``/``FAIL``/``ERROR``/
  ``SKIPPED``/``SKIP``/``XFAIL``/``XPASS`` then a node id);
- ``django-log``: unittest's verbose runner, as Django's ``tests/runtests.py --verbosity 2`` and
  ``python -m unittest -v`` print it (``test_x (module.Class) ... ok`` and the ``FAIL:``/``ERROR:`` blocks);
- ``sympy-log``: sympy's ``bin/test --verbose`` (a ``path.py[N]`` header, then ``test_x ok``).

A log is what the candidate's code printed too, so anything in it can be forged: every result line is kept
as a case of its own (a test reported twice gives two cases, and :func:`outcomes_for` keeps the worst), and
a log proves nothing without evidence the candidate could not write. Bytes in, models out, as for JUnit:
logs over :data:`MAX_LOG_BYTES` or :data:`MAX_LOG_CASES` raise :class:`LogTooLarge`; invalid UTF-8 is
replaced, terminal colours are dropped, and other control characters are spelled ``#xNN`` as pytest's JUnit
writer spells them. Only lines that can matter are visited (one regular expression per format, without
nested repetition) and each line is read a bounded number of times, so the cost is linear in the log.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections import deque
from collections.abc import Callable

from gradeflow.bulk import collector_paused
from gradeflow.models.evidence import CaseOutcome, TestCaseResult
from gradeflow.tasks._junit import MAX_JUNIT_TESTCASES, MESSAGE_CHARS, JUnitTooLarge

__all__ = ["LOG_FORMATS", "MAX_LOG_BYTES", "MAX_LOG_CASES", "LogTooLarge", "parse_log"]

LOG_FORMATS: tuple[str, ...] = ("pytest-log", "django-log", "sympy-log")
"""The formats :func:`parse_log` reads."""
MAX_LOG_BYTES = 32 * 1024 * 1024
"""Logs larger than this are refused unread."""
MAX_LOG_CASES = MAX_JUNIT_TESTCASES
"""Logs with more test results than this are refused (reading stops at the first one over)."""

_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
_BRACKET = re.compile(r"[][]")
_EXCEPTION_LINE = re.compile(r"^(?!Traceback \(most recent call last\):)\S[^\n]*", re.MULTILINE)
_SEPARATOR = "-" * 70
"""The line unittest prints between a ``FAIL:`` header (and its docstring line) and the traceback."""


class LogTooLarge(JUnitTooLarge):
    """The log is over a cap (bytes or test results): the candidate's fault, read like ``junit-too-large``."""


class _Cases:
    """The cases read so far, capped, and the failure blocks that may give a case its message.

    A block (unittest's ``FAIL: test_x (m.C)``, sympy's ``____ path:test_x ____``) names a test the log
    reported as failing: it lends its message to the earliest such case no block claimed yet, else it is a
    case of its own. Its message is read at the end, from its text up to the next of :attr:`bounds`.
    """

    def __init__(self, max_cases: int) -> None:
        self.max_cases = max_cases
        self.cases: list[TestCaseResult] = []
        self.bounds: list[int] = []
        """Where a block's text ends (the start of the next block or separator), in increasing order."""
        self._unclaimed: dict[tuple[str, str, str | None, CaseOutcome], deque[TestCaseResult]] = {}
        self._blocks: list[tuple[TestCaseResult, int]] = []

    def add(self, classname: str, name: str, file: str | None, outcome: CaseOutcome, message: str = "") -> None:
        case = self._add(classname, name, file, outcome, message)
        if outcome in ("failed", "error"):
            self._unclaimed.setdefault((classname, name, file, outcome), deque()).append(case)

    def _add(self, classname: str, name: str, file: str | None, outcome: CaseOutcome, message: str) -> TestCaseResult:
        if len(self.cases) >= self.max_cases:
            raise LogTooLarge(f"test log has more than {self.max_cases} test results, over the limit")
        # As in _junit: only what differs from the defaults is passed, and shared names are interned.
        fields: dict[str, str] = {"name": name, "outcome": outcome}
        if classname:
            fields["classname"] = sys.intern(classname)
        if file is not None:
            fields["file"] = sys.intern(file)
        if message:
            fields["message"] = message[:MESSAGE_CHARS]
        self.cases.append(TestCaseResult(**fields))  # type: ignore[arg-type]
        return self.cases[-1]

    def block(
        self, test: tuple[str, str, str | None], outcomes: tuple[CaseOutcome, ...], start: int, message: str = ""
    ) -> None:
        """A block naming the failing ``test`` (classname, name, file), whose text starts at ``start``: it claims
        a case of that test with one of ``outcomes``, else it is a case with the first of them and ``message``."""
        for outcome in outcomes:
            waiting = self._unclaimed.get((*test, outcome))
            if waiting:
                self._blocks.append((waiting.popleft(), start))
                return
        self._blocks.append((self._add(*test, outcomes[0], message), start))

    def results(self, text: str, skip_to: str | None = None) -> list[TestCaseResult]:
        """The cases, each block's message (past the line ``skip_to`` in its text) filled in."""
        for case, start in self._blocks:
            at = bisect.bisect_right(self.bounds, start)
            end = self.bounds[at] if at < len(self.bounds) else len(text)
            if not case.message:
                case.message = _exception_line(text, start, end, skip_to)
        return self.cases


def parse_log(format: str, data: bytes, *, max_cases: int = MAX_LOG_CASES) -> list[TestCaseResult]:
    """Every test result a log in ``format`` (one of :data:`LOG_FORMATS`) reports, in the log's order.

    A result line found anywhere in the log counts, as SWE-bench reads logs; the same test reported twice
    gives two cases. ``message`` is the first line of the reason the format gives (a failure's message, a
    skip's reason; for unittest and sympy, a failure's exception line from its traceback), cut to
    :data:`MESSAGE_CHARS`. A log without result lines gives ``[]``.

    Raises:
        LogTooLarge: the log is over :data:`MAX_LOG_BYTES` or reports more than ``max_cases`` results.
        ValueError: ``format`` is not one of :data:`LOG_FORMATS` (a caller's mistake, not a ``JUnitError``).
    """
    reader = _READERS.get(format)
    if reader is None:
        raise ValueError(f"unknown test log format {format!r}; expected one of {', '.join(LOG_FORMATS)}")
    if len(data) > MAX_LOG_BYTES:
        raise LogTooLarge(f"test log is {len(data)} bytes, over the {MAX_LOG_BYTES}-byte limit")
    with collector_paused():  # many objects, no cycles: see gradeflow.bulk
        return reader(_text(data), _Cases(max_cases))


def _text(data: bytes) -> str:
    """The log as text: lines end at ``\\n`` (``\\r`` too), no colours, no control characters but tabs."""
    text = data.decode("utf-8-sig", "replace").replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(lambda match: f"#x{ord(match.group()):02X}", _CSI.sub("", text))


def _exception_line(text: str, start: int, end: int, skip_to: str | None) -> str:
    """The first line of a traceback's exception in ``text[start:end]`` (past the line ``skip_to``), or ``""``."""
    if skip_to is not None:
        at = text.find("\n" + skip_to, start, end)
        if at < 0:
            return ""
        start = at + 1 + len(skip_to)
    match = _EXCEPTION_LINE.search(text, start, end)
    return match.group().strip()[:MESSAGE_CHARS] if match else ""


# pytest -----------------------------------------------------------------------------------------------------

_PYTEST_LINE = re.compile(r"^(PASSED|FAILED|FAIL|ERROR|SKIPPED|SKIP|XFAIL|XPASS) ([^\n]*)", re.MULTILINE)
_PYTEST_OUTCOMES: dict[str, CaseOutcome] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "FAIL": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "SKIP": "skipped",
    "XFAIL": "xfailed",
    "XPASS": "passed",  # a non-strict unexpected pass, a pass in pytest's JUnit; a strict one is FAILED
}
_PHASE = re.compile(r"at (?:setup|call|teardown) of ")
"""pytest 8 spells an expected failure outside the call ``XFAIL at setup of <node id>``."""


def _read_pytest(text: str, cases: _Cases) -> list[TestCaseResult]:
    """pytest's short test summary (``-rA``), every spelling from pytest 3 on.

    A folded skip (``SKIPPED [2] tests/t.py:12: reason``) names where a skip was raised and how often, not
    which tests: it gives no case, so those tests read ``missing`` (as in SWE-bench); pytest 8.3's
    ``--no-fold-skipped`` prints one ``SKIPPED <node id>`` line per test instead.
    """
    for match in _PYTEST_LINE.finditer(text):
        word, rest = match.group(1), match.group(2).rstrip()
        if word.startswith("SKIP") and rest.startswith("["):
            continue
        if word == "XFAIL" and (phase := _PHASE.match(rest)):
            rest = rest[phase.end() :]
        node, message = rest, ""  # a pass has no message, so the whole rest is its node id
        if word != "PASSED":
            rest = rest.removesuffix(" -")  # an empty message
            node, message = _split_node(rest, (" - ", " ") if word == "XPASS" else (" - ",))
        if not node or node.startswith(" "):
            continue
        if word == "XFAIL" and not message and text.startswith("\n  ", match.end()):  # pytest 3-7: the reason below
            below = text.find("\n", match.end() + 1)
            message = text[match.end() + 1 : below if below >= 0 else len(text)].strip()
        if word.startswith("SKIP"):
            message = message.removeprefix("Skipped: ")
        cases.add(*_pytest_fields(node), _PYTEST_OUTCOMES[word], message)
    return cases.results(text)


def _split_node(rest: str, separators: tuple[str, ...]) -> tuple[str, str]:
    """``rest`` split into the node id and the message after it (`` - message``, or `` reason`` for XPASS).

    Names are identifiers, so a node id without parameters ends at the first space after its ``::``; one
    without ``::`` (a file's collection error) ends at the first `` - ``. Parameter ids may hold spaces,
    `` - ``, ``::`` and brackets: see :func:`_params_end`.
    """
    colon, dash = rest.find("::"), rest.find(" - ")
    if colon < 0 or 0 <= dash < colon:
        end = dash if dash >= 0 else len(rest)
    else:
        bracket, space = rest.find("[", colon), rest.find(" ", colon)
        if bracket < 0 or 0 <= space < bracket:
            end = space if space >= 0 else len(rest)
        else:
            end = _params_end(rest, bracket, separators)
    tail = rest[end:].strip()
    return rest[:end], (tail[2:] if tail.startswith("- ") or tail == "-" else tail)


def _params_end(rest: str, start: int, separators: tuple[str, ...]) -> int:
    """Where the parameter id opening at ``rest[start]`` ends: at the ``]`` that balances it, when the end of
    the line or a separator follows; else at the first ``]`` a separator follows (the line cannot tell a
    ``] - `` inside the id from the one before the message, and a message is the likelier to hold one)."""
    depth, first, balanced = 0, -1, True
    for match in _BRACKET.finditer(rest, start):
        at = match.start()
        depth += 1 if rest[at] == "[" else -1
        if rest[at] == "[":
            continue
        ends = at + 1 == len(rest) or rest.startswith(separators, at + 1)
        if ends and balanced and depth == 0:
            return at + 1
        if ends and first < 0:
            first = at + 1
        balanced = balanced and (depth > 0 or ends)
        if not balanced and first >= 0:
            return first
    return first if first >= 0 else len(rest)


def _pytest_fields(node: str) -> tuple[str, str, str]:
    """Classname, name and file pytest's JUnit writer gives the test ``node`` (``mangle_test_address``)."""
    head, bracket, params = node.partition("[")
    names = [part for part in head.split("::") if part != "()"]  # pytest < 4 spelled instances ``::()``
    file = names[0]
    names[0] = file.replace("/", ".").removesuffix(".py")
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1], file


# unittest / Django ------------------------------------------------------------------------------------------

_UNITTEST_LINE = re.compile(
    r"^(?:[^\n]*? \.\.\.(?: [^\n]*|$)"
    r"|(?:FAIL|ERROR|UNEXPECTED SUCCESS): [^\n]*"
    r"|={70}[ \t]*$|Ran \d+ tests? in [^\n]*"
    r"|[ \t]*(?:ok|FAIL|ERROR|expected failure|unexpected success|skipped(?: [^\n]*)?)[ \t]*$"
    r"|[ \t]*\w+ \([A-Za-z_][\w.]*\)[^\n]*)",
    re.MULTILINE,
)
_DESCRIPTION = re.compile(r"(\w+) \(([A-Za-z_][\w.]*)\)")
"""``test_x (module.Class)``, or ``test_x (module.Class.test_x)`` from Python 3.11 on."""
_UNITTEST_STATUSES: dict[str, CaseOutcome] = {
    "ok": "passed",
    "FAIL": "failed",
    "ERROR": "error",
    "expected failure": "xfailed",
    "unexpected success": "failed",  # unittest fails the run, and pytest reads it as a failure
}
_HEADERS: dict[str, CaseOutcome] = {"FAIL: ": "failed", "ERROR: ": "error", "UNEXPECTED SUCCESS: ": "failed"}
_Key = tuple[str, str]


def _unittest_status(text: str) -> tuple[CaseOutcome, str] | None:
    """The outcome and message of a status unittest printed after `` ... ``, or ``None``."""
    text = text.strip()
    if text in _UNITTEST_STATUSES:
        return _UNITTEST_STATUSES[text], "unexpected success" if text == "unexpected success" else ""
    if text == "skipped" or text.startswith("skipped "):
        reason = text[8:]
        if len(reason) >= 2 and reason[0] == reason[-1] and reason[0] in "'\"":
            reason = reason[1:-1]
        return "skipped", reason
    return None


def _describe(line: str, at: int) -> tuple[_Key, int] | None:
    """The test ``line`` describes at ``at`` (classname, name) and where the description ends."""
    match = _DESCRIPTION.match(line, at)
    if match is None:
        return None
    name, where = match.groups()
    return (where.removesuffix("." + name), name), match.end()


def _description_after_docstring(line: str) -> tuple[_Key, int] | None:
    """The next test's description after a `` ... `` of a docstring line (``Doc. ... test_b (m.T)``), or ``None``.

    Before Python 3.11 a test whose subtests failed prints no status, so the next test's description
    follows on its line; a docstring may hold `` ... `` itself, so every one is tried."""
    at = line.find(" ... ")
    while at >= 0:
        found = _describe(line, at + 5)
        if found is not None:
            return found
        at = line.find(" ... ", at + 5)
    return None


class _UnittestReader:
    """unittest's verbose output, read line by line.

    A status comes after `` ... ``, on the same line unless the test printed first: then it is a line of its
    own further down (a test left *pending*). With a docstring, the description is alone on its line and the
    docstring's first line carries the `` ... ``. A subtest's line adds its parameters after the description.
    Every failure and error is listed again in a block at the end, a case of its own unless a status line
    claimed it: a status the test printed itself (``ok`` before its real ``FAIL``) hides no failure.
    """

    def __init__(self, text: str, cases: _Cases) -> None:
        self.text, self.cases = text, cases
        self.pending: _Key | None = None
        self.described: tuple[_Key, int] | None = None
        """A description alone on its line, and where that line ended: the next line is its docstring."""

    def read(self) -> list[TestCaseResult]:
        for match in _UNITTEST_LINE.finditer(self.text):
            described, self.described = self.described, None
            self._line(match.group(), match.start(), described)
        return self.cases.results(self.text, _SEPARATOR)

    def _line(self, line: str, start: int, described: tuple[_Key, int] | None) -> None:
        if line.endswith(" ..."):  # a log that lost its trailing spaces
            line += " "
        status = _unittest_status(line)
        if status is not None:
            if self.pending is not None:
                self._add(self.pending, status)
            self.pending = None
            return
        header = next((h for h in _HEADERS if line.startswith(h)), None)
        if header is not None or line.startswith(("=" * 70, "Ran ")):
            self.pending = None
            self.cases.bounds.append(start)
            found = _describe(line, len(header)) if header else None
            if header and found:
                (classname, name), _ = found
                message = "unexpected success" if header.startswith("UNEXPECTED") else ""
                self.cases.block((classname, name, None), (_HEADERS[header],), start + len(line), message)
            return
        self._result(line, described if described and described[1] + 1 == start else None, start)

    def _result(self, line: str, described: tuple[_Key, int] | None, start: int) -> None:
        at = len(line) - len(line.lstrip())
        found = _describe(line, at)
        if found is None and described is not None:  # the docstring line of the test described above
            found = _description_after_docstring(line)  # else the next test, read as any line from here
            if found is None:
                self._status_after(described[0], line, 0)
                return
        first = line.find(" ... ")
        if found is None and first >= 0 and (dots := line.rfind("...", 0, first)) >= 0:
            found = _describe(line, dots + 3)  # another program's text ending in "..." came first
        while found is not None:
            key, end = found
            if line.find(" ... ", end) < 0:
                self.pending, self.described = None, (key, start + len(line))
                return
            if not line.startswith(" ... ", end):  # a subtest's parameters
                self._status_after(key, line, end)
                return
            # Before Python 3.11 a test whose subtests failed prints no status: the next test follows on its line.
            found = _describe(line, end + 5)
            if found is None:
                self._status_after(key, line, end)

    def _status_after(self, key: _Key, line: str, end: int) -> None:
        """The status after the last `` ... `` past ``end`` (a docstring may hold one), else ``key`` pends."""
        status = _unittest_status(line[line.rfind(" ... ", end) + 5 :])
        if status is None:
            self.pending = key
        else:
            self.pending = None
            self._add(key, status)

    def _add(self, key: _Key, status: tuple[CaseOutcome, str]) -> None:
        self.cases.add(key[0], key[1], None, *status)


# sympy ------------------------------------------------------------------------------------------------------

_SYMPY_LINE = re.compile(
    r"^(?:(?P<test>test\w*)[ \t](?P<rest>[^\n]*)"
    r"|(?P<file>[^\s\[]+\.py)\[(?P<count>[^]\n]*)\][^\n]*"
    r"|(?P<block>_{3,}[^\n]*)"
    r"|(?P<status>[ \t]*(?:ok|[FETfXsKw])(?:[ \t]+\[(?:OK|FAIL)\])?[ \t]*)$)",
    re.MULTILINE,
)
_SYMPY_STATUSES: dict[str, CaseOutcome] = {
    "ok": "passed",
    "F": "failed",
    "E": "error",
    "T": "error",  # timed out
    "f": "xfailed",
    "X": "passed",  # an unexpected pass, which sympy does not count against the run
    "s": "skipped",
    "K": "skipped",  # skipped by KeyboardInterrupt
    "w": "skipped",  # slow, not run
}


def _sympy_status(rest: str) -> tuple[CaseOutcome, str] | None:
    """The outcome and message of what follows a test's name, or ``None`` when no status ends it.

    A skip prints its reason before its letter (`` - `` without one); any other letter may follow text the
    test printed without a newline, which is ignored (as SWE-bench does).
    """
    rest = rest.strip()
    if rest.endswith(("[OK]", "[FAIL]")):  # the file's verdict, right-aligned after its last test
        rest = rest[: rest.rfind("[")].rstrip()
    head, _, letter = rest.rpartition(" ")
    outcome = _SYMPY_STATUSES.get(letter)
    if outcome is None:
        return None
    head = head.strip()
    if outcome == "skipped" or (letter == "T" and head == "Timeout"):
        return "skipped", "" if head == "-" else head
    return outcome, ""


def _read_sympy(text: str, cases: _Cases) -> list[TestCaseResult]:
    """sympy's ``bin/test --verbose``: classname ``""``, the function's name, and the file header as ``file``."""
    file: str | None = None
    pending: str | None = None
    for match in _SYMPY_LINE.finditer(text):
        if match["block"] is not None:
            cases.bounds.append(match.start())
            _sympy_block(match["block"], match.end(), cases)
        elif match["test"] is not None:
            status = _sympy_status(match["rest"])
            pending = match["test"] if status is None else None
            if status is not None:
                cases.add("", match["test"], file, *status)
        elif match["file"] is not None:
            file, pending = match["file"], None
            if match["count"] == "?":
                cases.add("", file, file, "error", "Failed to import")
        elif pending is not None and (status := _sympy_status(match["status"])) is not None:
            cases.add("", pending, file, status[0])
            pending = None
    return cases.results(text)


def _sympy_block(line: str, end: int, cases: _Cases) -> None:
    """A traceback's header, ``____ path:test_x ____`` (``path::test_x`` for a failure in newer sympy)."""
    path, colon, name = line.strip("_").strip().rpartition(":")
    if colon and name.startswith("test"):
        # Failures and exceptions are told apart by "::" in newer sympy only: either may claim either.
        outcomes: tuple[CaseOutcome, ...] = ("failed", "error") if path.endswith(":") else ("error", "failed")
        cases.block(("", name, path.rstrip(":")), outcomes, end)


_READERS: dict[str, Callable[[str, _Cases], list[TestCaseResult]]] = {
    "pytest-log": _read_pytest,
    "django-log": lambda text, cases: _UnittestReader(text, cases).read(),
    "sympy-log": _read_sympy,
}
