"""Read untrusted JUnit XML into :class:`TestCaseResult` models and look test ids up in them.

Bytes in, models out: no files, network or console. The report comes from a candidate's tests, so
:func:`parse_junit` refuses reports over :data:`MAX_JUNIT_BYTES` or :data:`MAX_JUNIT_TESTCASES`
(:class:`JUnitTooLarge`) and, before parsing, any DOCTYPE or ENTITY declaration in any encoding expat
reads. Every refusal is a :class:`JUnitError`. Reading is a stream (no element tree) and every lookup
of :func:`outcomes_for` goes through an index, so the grader's cost is linear in the report's size.
"""

from __future__ import annotations

import codecs
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from gradeflow.bulk import collector_paused
from gradeflow.models.evidence import CaseOutcome, Outcome, TestCaseResult
from gradeflow.models.testids import split_test_id

__all__ = [
    "MAX_JUNIT_BYTES",
    "MAX_JUNIT_TESTCASES",
    "MESSAGE_CHARS",
    "JUnitError",
    "JUnitTooLarge",
    "junit_names",
    "names_in",
    "outcomes_for",
    "parse_junit",
]

MAX_JUNIT_BYTES = 32 * 1024 * 1024
"""Reports larger than this are refused unread."""
MAX_JUNIT_TESTCASES = 500_000
"""Reports with more testcases than this are refused (reading stops at the first one over)."""
MESSAGE_CHARS = 200
"""``TestCaseResult.message`` is cut to this many characters."""

_ROOTS = ("testsuites", "testsuite")
_DECLARATION = re.compile(r"<!(?:doctype|entity)", re.IGNORECASE)
_MISC = re.compile(r"(?:\s|<\?.*?\?>|<!--.*?-->)*", re.DOTALL)
_PATH_PREFIX = re.compile(r"^(?:\.?/)+")
_FIRST_LINE = re.compile(r"\s*([^\r\n]*)")
_KINDS: dict[str, CaseOutcome] = {"error": "error", "failure": "failed", "skipped": "skipped"}
_XFAIL_TYPE = "pytest.xfail"
"""The ``type`` of the ``<skipped>`` pytest writes for an expected failure (xfail, unittest's expectedFailure)."""
_NON_BLANK = re.compile(r"\S")
_RANK: dict[str, int] = {"skipped": 0, "passed": 1, "xfailed": 2, "failed": 3, "error": 4}
"""Across duplicate testcases the worst wins: error > failed > xfailed > passed > skipped.

An expected failure is still a failure that happened, so it outranks a pass (a test whose subtest
xfailed did not pass whole), and it ranks below an unexpected failure or error.
"""


class JUnitError(ValueError):
    """The report cannot be used; ``str()`` is one line saying why."""


class JUnitTooLarge(JUnitError):
    """The report is over a cap (bytes or testcases): the candidate's fault, ``junit-too-large``."""


@dataclass
class _OpenResult:
    """A ``<failure>``, ``<error>`` or ``<skipped>`` being read: its message and the text before its first child."""

    kind: CaseOutcome
    message: str | None
    text: list[str] = field(default_factory=list)
    started: bool = False
    """A non-blank character of the text has been seen."""
    done: bool = False
    """No more text counts: a child element began, or the first non-blank line ended."""

    def add_text(self, chunk: str) -> None:
        # Only the first non-blank line is ever used, so the rest of a long trace is not kept.
        if self.done:
            return
        self.text.append(chunk)
        rest = chunk
        if not self.started:
            first = _NON_BLANK.search(chunk)
            if first is None:
                return
            self.started, rest = True, chunk[first.start() :]
        self.done = "\n" in rest or "\r" in rest


@dataclass
class _OpenCase:
    """A ``<testcase>`` being read: its attributes, its slot in the output, the results inside it."""

    index: int
    attrib: dict[str, str]
    results: list[_OpenResult] = field(default_factory=list)


class _CaseCollector:
    """An expat target that keeps only what each testcase needs (no element tree), and counts testcases.

    Matches junitparser's reading: a result element anywhere inside a testcase belongs to it, and its
    text is the text before its first child element. Refuses a DOCTYPE whatever the encoding.
    """

    def __init__(self, max_cases: int) -> None:
        self.max_cases = max_cases
        self.root: str | None = None
        self.cases: list[TestCaseResult | None] = []
        self._stack: list[_OpenCase | _OpenResult | None] = []
        self._open_cases: list[_OpenCase] = []

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if self.root is None:
            self.root = tag
        top = self._stack[-1] if self._stack else None
        if isinstance(top, _OpenResult):
            top.done = True
        entry: _OpenCase | _OpenResult | None = None
        if self.root not in _ROOTS:
            pass  # not a JUnit report: parsed to the end for well-formedness, nothing kept
        elif tag == "testcase":
            entry = self._open_case(attrib)
        elif tag in _KINDS and self._open_cases:
            kind = "xfailed" if tag == "skipped" and attrib.get("type") == _XFAIL_TYPE else _KINDS[tag]
            entry = _OpenResult(kind, attrib.get("message"))
            for case in self._open_cases:
                case.results.append(entry)
        self._stack.append(entry)

    def _open_case(self, attrib: dict[str, str]) -> _OpenCase:
        if len(self.cases) >= self.max_cases:
            raise JUnitTooLarge(f"JUnit report has more than {self.max_cases} testcases, over the limit")
        case = _OpenCase(len(self.cases), attrib)
        self.cases.append(None)
        self._open_cases.append(case)
        return case

    def end(self, tag: str) -> None:
        entry = self._stack.pop()
        if isinstance(entry, _OpenCase):
            self._open_cases.pop()
            self.cases[entry.index] = _case_result(entry)

    def data(self, text: str) -> None:
        top = self._stack[-1] if self._stack else None
        if isinstance(top, _OpenResult):
            top.add_text(text)

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise JUnitError("JUnit report has a DOCTYPE declaration; refused while parsing")

    def results(self) -> list[TestCaseResult]:
        """The testcases read, in document order (a testcase left open by a broken report is dropped)."""
        return [case for case in self.cases if case is not None]


def parse_junit(data: bytes, *, max_cases: int = MAX_JUNIT_TESTCASES) -> list[TestCaseResult]:
    """Every ``<testcase>`` of a JUnit report, in document order.

    The root must be ``<testsuites>`` or ``<testsuite>``; testcases are found at any depth (nested
    suites included). A testcase with ``<error>`` is ``error``, else ``<failure>`` is ``failed``, else
    pytest's expected failure (``<skipped type="pytest.xfail">``: a failing ``@pytest.mark.xfail``,
    ``pytest.xfail()``, unittest's ``expectedFailure``) is ``xfailed``, else any other ``<skipped>`` is
    ``skipped``, else ``passed``. pytest writes an unexpected pass as a plain pass (non-strict) or a
    ``<failure>`` (strict, ``[XPASS(strict)]``), so those read as ``passed`` and ``failed``.
    ``message`` is the first non-blank line of that result's ``message`` attribute, or else its text,
    cut to :data:`MESSAGE_CHARS`. A valid report without testcases gives ``[]``. The report is read as a
    stream (no element tree is built), so time and memory grow linearly with its size.

    Raises:
        JUnitTooLarge: the report is over :data:`MAX_JUNIT_BYTES` or holds more than ``max_cases``
            testcases (reading stops at the first one over).
        JUnitError: the report is empty, declares a DOCTYPE/ENTITY, is not well-formed or not in an
            encoding expat reads, or its root is not a JUnit element.
    """
    _check_prolog(data)
    collector = _CaseCollector(max_cases)
    parser = ET.XMLParser(target=collector)
    try:
        with collector_paused():
            parser.feed(data)
            parser.close()
    except JUnitError:
        raise
    except (ET.ParseError, LookupError, ValueError) as exc:
        raise JUnitError(f"JUnit report is not well-formed XML: {_first_line(str(exc))}") from None
    if collector.root not in _ROOTS:
        tag = _first_line(str(collector.root))[:60]
        raise JUnitError(f"not a JUnit report: root element is <{tag}>, not <testsuites> or <testsuite>")
    return collector.results()


def _check_prolog(data: bytes) -> None:
    """Size and declarations, checked before any parsing."""
    if len(data) > MAX_JUNIT_BYTES:
        raise JUnitTooLarge(f"JUnit report is {len(data)} bytes, over the {MAX_JUNIT_BYTES}-byte limit")
    if not data.strip():
        raise JUnitError("JUnit report is empty")
    if _declares_dtd(data):
        raise JUnitError("JUnit report has a DOCTYPE or ENTITY declaration; refused before parsing")


def _declares_dtd(data: bytes) -> bool:
    """Whether the prolog, past any XML declaration, comments and PIs, opens a DOCTYPE or ENTITY.

    Only the prolog is read, so ``<!DOCTYPE html>`` quoted in a CDATA failure message is no reason
    to refuse; a declaration anywhere else is malformed, and :class:`_CaseCollector` stops any
    DOCTYPE expat meets.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = data.decode("utf-16", "replace")
    elif data[:1] == b"\x00" or data[1:2] == b"\x00":  # expat reads these as UTF-16 too
        text = data.decode("utf-16-be" if data[:1] == b"\x00" else "utf-16-le", "replace")
    else:
        text = data.removeprefix(codecs.BOM_UTF8).decode("latin-1")
    misc = _MISC.match(text)
    return _DECLARATION.match(text, misc.end() if misc else 0) is not None


def _case_result(case: _OpenCase) -> TestCaseResult:
    """One testcase as a model; the worst of several results decides its outcome."""
    outcome: CaseOutcome = "passed"
    message = ""
    for result in case.results:
        if outcome == "passed" or _RANK[result.kind] > _RANK[outcome]:
            outcome = result.kind
            message = _first_line(result.message) or _first_line("".join(result.text) or None)
    attrib = case.attrib
    # Only what differs from the defaults is passed (a smaller fields-set per case), and the names many
    # cases share are interned: a case costs about half a kilobyte.
    fields: dict[str, str] = {"name": attrib.get("name") or "", "outcome": outcome}
    if attrib.get("classname"):
        fields["classname"] = sys.intern(attrib["classname"])
    if attrib.get("file") is not None:
        fields["file"] = sys.intern(attrib["file"])
    if message:
        fields["message"] = message
    return TestCaseResult(**fields)  # type: ignore[arg-type]


def _first_line(text: str | None) -> str:
    """The first non-blank line of ``text``, stripped and cut to :data:`MESSAGE_CHARS`."""
    match = _FIRST_LINE.match(text or "")
    return match.group(1).strip()[:MESSAGE_CHARS] if match else ""


@dataclass(frozen=True)
class _Expected:
    """Where a test id says its testcase is."""

    classname: str
    name: str
    path: str | None = None  # the ``.py`` file of a pytest node id
    classes: tuple[str, ...] = ()


def outcomes_for(
    test_ids: list[str], cases: list[TestCaseResult], last_run_of: Mapping[str, Sequence[str]] | None = None
) -> dict[str, Outcome]:
    """The outcome of each test id in ``cases``; ``missing`` when no testcase matches.

    An id may be a pytest node id (``tests/test_m.py::TestX::test_y[p]``) or the JUnit spelling
    ``classname::name`` (``tests.test_m.TestX::test_y[p]``, ``com.acme.CalcTest::testDivide``);
    everything from the first ``[`` belongs to the name, as pytest splits ids (:func:`split_test_id`);
    a text file's doctest (``docs/guide.rst::guide.rst``) is also found under the JUnit spelling
    ``docs.guide.rst``. Tried in order, first hit wins:

    1. the id is literally ``classname::name`` of some testcase;
    2. the classname and name derived from the id match exactly;
    3. (node ids) same name, the testcase's ``file`` is the id's path, its classname ends with
       the id's classes, and only one such classname exists;
    4. same name and exactly one classname ending with ``"." + expected``, or else exactly one
       that ``expected`` ends with after a ``"."`` (rootdir added or dropped a package prefix);
    5. all of that again with non-ASCII in ``[...]`` escaped, since pytest writes the parameter
       id ``[ünï]`` as ``[\\xfcn\\xef]`` (a function named ``test_ünï`` stays unescaped).

    Several testcases under one classname and name (subtests, pytest's separate teardown error)
    aggregate: error beats failed beats xfailed beats passed beats skipped, so ``skipped`` means all
    skipped.

    A test id that is a name of ``last_run_of`` (``tests.last_run_of``) is looked up as the one of its ids whose
    last testcase comes latest in ``cases``, the run's order (a log's or the recorder's); none found, ``missing``.
    """
    index = _Index(cases)
    order = {id(case): at for at, case in enumerate(cases)} if last_run_of else {}
    outcomes: dict[str, Outcome] = {}
    for test_id in test_ids:
        if last_run_of and test_id in last_run_of:
            each = [index.find(t) or index.find(_escaped_params(t)) for t in last_run_of[test_id]]
            found = max(each, key=lambda hits: max((order[id(c)] for c in hits), default=-1), default=[])
        else:
            found = index.find(test_id) or index.find(_escaped_params(test_id))
        outcomes[test_id] = max((c.outcome for c in found), key=_RANK.__getitem__) if found else "missing"
    return outcomes


def junit_names(test_ids: list[str], cases: list[TestCaseResult]) -> list[str]:
    """``classname::name`` of every testcase in ``cases`` that one of ``test_ids`` names (as
    :func:`outcomes_for` matches them), in first-seen order: how a run that must select those tests again
    can know them whatever spelling the ids use (a Django-style id, a package prefix the rootdir drops)."""
    index, names = _Index(cases), dict[str, None]()
    for test_id in test_ids:
        for case in index.find(test_id) or index.find(_escaped_params(test_id)):
            names[f"{case.classname}::{case.name}"] = None
    return list(names)


def names_in(test_ids: Iterable[str]) -> frozenset[str]:
    """Every testcase name :func:`outcomes_for` could match one of ``test_ids`` to: each id whole, each
    part after a ``::``, of the id and of its escaped spelling. A case whose name is not here matches no id,
    so callers may drop it before building cases they would otherwise index for nothing."""
    names: set[str] = set()
    for test_id in test_ids:
        for spelling in {test_id, _escaped_params(test_id)}:
            names.add(spelling)
            start = spelling.find("::")
            while start >= 0:
                names.add(spelling[start + 2 :])
                start = spelling.find("::", start + 2)
    return frozenset(names)


class _Groups:
    """Cases grouped by a string key, holding a list only for a key seen twice.

    Keys join their parts with NUL, which XML cannot hold. Strings and few lists leave the garbage
    collector little to walk: for 300,000 cases this halves the time and memory of plain lists.
    """

    def __init__(self) -> None:
        self._first: dict[str, TestCaseResult] = {}
        self._more: dict[str, list[TestCaseResult]] = {}

    def add(self, key: str, case: TestCaseResult) -> None:
        if key not in self._first:
            self._first[key] = case
        else:
            self._more.setdefault(key, []).append(case)

    def get(self, key: str) -> list[TestCaseResult]:
        first = self._first.get(key)
        return [] if first is None else [first, *self._more.get(key, ())]

    def __iter__(self) -> Iterator[str]:
        return iter(self._first)


class _Index:
    """The testcases of one report, indexed so that each lookup of :func:`outcomes_for` costs about O(1).

    Built in one pass over the cases; the suffix index for ids of ``m`` dotted parts is built on the
    first lookup that needs it. Time and memory stay linear in the report, whatever its names.
    """

    def __init__(self, cases: list[TestCaseResult]) -> None:
        self._classes = _Groups()
        self._files = _Groups()
        paths: dict[str, str] = {}
        for case in cases:
            self._classes.add(f"{case.classname}\0{case.name}", case)
            if case.file is not None:
                path = paths.get(case.file)
                if path is None:
                    path = paths[case.file] = _normal_path(case.file)
                self._files.add(f"{case.name}\0{path}", case)
        self._suffixes: dict[int, dict[tuple[str, str], set[str]]] = {}

    def _by_class(self, classname: str, name: str) -> list[TestCaseResult]:
        return self._classes.get(f"{classname}\0{name}")

    def find(self, test_id: str) -> list[TestCaseResult]:
        """The testcases ``test_id`` names, looked up as documented in :func:`outcomes_for`."""
        literal = self._literal(test_id)
        if literal:
            return literal
        expected = _expected(test_id)
        found = self._by_class(expected.classname, expected.name)
        found = found or self._same_file(expected)
        if found or not expected.classname:
            return found
        return self._longer(expected) or self._shorter(expected)

    def _literal(self, test_id: str) -> list[TestCaseResult]:
        """Every case whose ``classname::name`` is ``test_id``, at whichever ``::`` it splits."""
        found: list[TestCaseResult] = []
        at = test_id.find("::")
        while at >= 0:
            found += self._by_class(test_id[:at], test_id[at + 2 :])
            at = test_id.find("::", at + 1)
        return found

    def _same_file(self, expected: _Expected) -> list[TestCaseResult]:
        if expected.path is None:
            return []
        same = self._files.get(f"{expected.name}\0{expected.path}")
        count = len(expected.classes)
        return _one_classname(
            c for c in same if count == 0 or tuple(c.classname.split(".")[-count:]) == expected.classes
        )

    def _longer(self, expected: _Expected) -> list[TestCaseResult]:
        """Cases of the one classname that ends with ``"." + expected.classname`` (a package prefix added)."""
        parts = expected.classname.count(".") + 1
        classnames = self._suffix_index(parts).get((expected.name, expected.classname), set())
        return self._by_class(next(iter(classnames)), expected.name) if len(classnames) == 1 else []

    def _shorter(self, expected: _Expected) -> list[TestCaseResult]:
        """Cases of the one classname that ``expected.classname`` ends with after a ``"."`` (a prefix dropped)."""
        dotted = "." + expected.classname
        suffixes = [dotted[i + 1 :] for i, char in enumerate(dotted) if char == "."]
        hits = [found for s in suffixes if s and (found := self._by_class(s, expected.name))]
        return hits[0] if len(hits) == 1 else []

    def _suffix_index(self, parts: int) -> dict[tuple[str, str], set[str]]:
        """(name, last ``parts`` dotted parts of a longer classname) → those classnames."""
        if parts not in self._suffixes:
            index: dict[tuple[str, str], set[str]] = defaultdict(set)
            for key in self._classes:
                classname, name = key.split("\0")
                head = classname.rsplit(".", parts)
                if len(head) == parts + 1:
                    index[(name, classname[len(head[0]) + 1 :])].add(classname)
            self._suffixes[parts] = index
        return self._suffixes[parts]


def _escaped_params(test_id: str) -> str:
    """``test_id`` with non-ASCII in its ``[...]`` escaped, as pytest writes parameter ids."""
    start = test_id.find("[")
    if start < 0 or test_id[start:].isascii():
        return test_id
    return test_id[:start] + test_id[start:].encode("unicode_escape").decode("ascii")


def _one_classname(cases: Iterable[TestCaseResult]) -> list[TestCaseResult]:
    """``cases`` if they all share one classname, else ``[]``."""
    found = list(cases)
    return found if len({case.classname for case in found}) == 1 else []


def _expected(test_id: str) -> _Expected:
    """Classname and name a test id refers to, following pytest's JUnit conventions."""
    *head, name = split_test_id(test_id)
    if head and head[0].endswith(".py"):
        path = _normal_path(head[0])
        classes = tuple(head[1:])
        classname = ".".join([path[:-3].replace("/", "."), *classes])
        return _Expected(classname, name, path, classes)
    # A text file's doctest (``docs/guide.rst::guide.rst``): pytest's JUnit classname dots the path.
    return _Expected(".".join([*(h.replace("/", ".") for h in head[:1]), *head[1:]]), name)


def _normal_path(path: str) -> str:
    """``path`` with forward slashes and no leading ``./`` or ``/``."""
    return _PATH_PREFIX.sub("", path.replace("\\", "/"))
