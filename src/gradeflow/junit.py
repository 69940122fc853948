"""Read untrusted JUnit XML into :class:`TestCaseResult` models and look test ids up in them.

Bytes in, models out: no files, network or console. The report comes from a candidate's tests, so
:func:`parse_junit` refuses reports over :data:`MAX_JUNIT_BYTES` and, before parsing, any DOCTYPE or
ENTITY declaration in any encoding expat reads. Every refusal is a :class:`JUnitError`.
"""

from __future__ import annotations

import codecs
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from junitparser import Attr, Error, Failure, Skipped, TestCase

from gradeflow.evidence import Outcome, TestCaseResult

__all__ = ["MAX_JUNIT_BYTES", "MESSAGE_CHARS", "JUnitError", "outcomes_for", "parse_junit"]

MAX_JUNIT_BYTES = 32 * 1024 * 1024
"""Reports larger than this are refused unread."""
MESSAGE_CHARS = 200
"""``TestCaseResult.message`` is cut to this many characters."""

_ROOTS = ("testsuites", "testsuite")
_DECLARATION = re.compile(r"<!(?:doctype|entity)", re.IGNORECASE)
_MISC = re.compile(r"(?:\s|<\?.*?\?>|<!--.*?-->)*", re.DOTALL)
_PATH_PREFIX = re.compile(r"^(?:\.?/)+")
_FIRST_LINE = re.compile(r"\s*([^\r\n]*)")
_CaseOutcome = Literal["passed", "failed", "error", "skipped"]
_KINDS: tuple[tuple[type, _CaseOutcome], ...] = ((Error, "error"), (Failure, "failed"), (Skipped, "skipped"))
_RANK: dict[str, int] = {"skipped": 0, "passed": 1, "failed": 2, "error": 3}
"""Across duplicate testcases the worst wins: error > failed > passed > skipped."""


class JUnitError(ValueError):
    """The report cannot be used; ``str()`` is one line saying why."""


class _Case(TestCase):
    """junitparser's testcase plus the ``file`` attribute pytest's xunit1 family writes."""

    file = Attr()


class _NoDoctypeBuilder(ET.TreeBuilder):
    """Builds the tree but stops at a DOCTYPE, whatever the document's encoding."""

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise JUnitError("JUnit report has a DOCTYPE declaration; refused while parsing")


def parse_junit(data: bytes) -> list[TestCaseResult]:
    """Every ``<testcase>`` of a JUnit report, in document order.

    The root must be ``<testsuites>`` or ``<testsuite>``; testcases are found at any depth (nested
    suites included). A testcase with ``<error>`` is ``error``, else ``<failure>`` is ``failed``, else
    ``<skipped>`` (pytest's xfail too) is ``skipped``, else ``passed``. ``message`` is the first
    non-blank line of that result's ``message`` attribute, or else its text, cut to
    :data:`MESSAGE_CHARS`. A valid report without testcases gives ``[]``.

    Raises:
        JUnitError: the report is too large, empty, declares a DOCTYPE/ENTITY, is not well-formed
            or not in an encoding expat reads, or its root is not a JUnit element.
    """
    root = _parse_xml(data)
    if root.tag not in _ROOTS:
        tag = _first_line(str(root.tag))[:60]
        raise JUnitError(f"not a JUnit report: root element is <{tag}>, not <testsuites> or <testsuite>")
    return [_case_result(_Case.fromelem(elem)) for elem in root.iter("testcase")]


def _parse_xml(data: bytes) -> ET.Element:
    """The root element of ``data``, checked for size and declarations first."""
    if len(data) > MAX_JUNIT_BYTES:
        raise JUnitError(f"JUnit report is {len(data)} bytes, over the {MAX_JUNIT_BYTES}-byte limit")
    if not data.strip():
        raise JUnitError("JUnit report is empty")
    if _declares_dtd(data):
        raise JUnitError("JUnit report has a DOCTYPE or ENTITY declaration; refused before parsing")
    parser = ET.XMLParser(target=_NoDoctypeBuilder())
    try:
        parser.feed(data)
        return parser.close()
    except JUnitError:
        raise
    except (ET.ParseError, LookupError, ValueError) as exc:
        raise JUnitError(f"JUnit report is not well-formed XML: {_first_line(str(exc))}") from None


def _declares_dtd(data: bytes) -> bool:
    """Whether the prolog, past any XML declaration, comments and PIs, opens a DOCTYPE or ENTITY.

    Only the prolog is read, so ``<!DOCTYPE html>`` quoted in a CDATA failure message is no reason
    to refuse; a declaration anywhere else is malformed, and :class:`_NoDoctypeBuilder` stops any
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


def _case_result(case: _Case) -> TestCaseResult:
    """One testcase as a model; the worst of several results decides its outcome."""
    outcome: _CaseOutcome = "passed"
    message = ""
    for result in case.result:
        kind = next(kind for cls, kind in _KINDS if isinstance(result, cls))
        if outcome == "passed" or _RANK[kind] > _RANK[outcome]:
            outcome, message = kind, _first_line(result.message) or _first_line(result.text)
    classname, name = case.classname or "", case.name or ""
    return TestCaseResult(classname=classname, name=name, file=case.file, outcome=outcome, message=message)


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


def outcomes_for(test_ids: list[str], cases: list[TestCaseResult]) -> dict[str, Outcome]:
    """The outcome of each test id in ``cases``; ``missing`` when no testcase matches.

    An id may be a pytest node id (``tests/test_m.py::TestX::test_y[p]``) or the JUnit spelling
    ``classname::name`` (``tests.test_m.TestX::test_y[p]``, ``com.acme.CalcTest::testDivide``);
    ``::`` inside square brackets belongs to the name. Tried in order, first hit wins:

    1. the id is literally ``classname::name`` of some testcase;
    2. the classname and name derived from the id match exactly;
    3. (node ids) same name, the testcase's ``file`` is the id's path, its classname ends with
       the id's classes, and only one such classname exists;
    4. same name and exactly one classname ending with ``"." + expected``, or else exactly one
       that ``expected`` ends with after a ``"."`` (rootdir added or dropped a package prefix);
    5. all of that again with non-ASCII in ``[...]`` escaped, since pytest writes the parameter
       id ``[ünï]`` as ``[\\xfcn\\xef]`` (a function named ``test_ünï`` stays unescaped).

    Several testcases under one classname and name (subtests, pytest's separate teardown error)
    aggregate: error beats failed beats passed beats skipped, so ``skipped`` means all skipped.
    """
    by_key: dict[str, list[TestCaseResult]] = defaultdict(list)
    by_name: dict[str, list[TestCaseResult]] = defaultdict(list)
    for case in cases:
        by_key[f"{case.classname}::{case.name}"].append(case)
        by_name[case.name].append(case)
    outcomes: dict[str, Outcome] = {}
    for test_id in test_ids:
        found = _find(test_id, by_key, by_name) or _find(_escaped_params(test_id), by_key, by_name)
        outcomes[test_id] = max((c.outcome for c in found), key=_RANK.__getitem__) if found else "missing"
    return outcomes


def _find(
    test_id: str, by_key: dict[str, list[TestCaseResult]], by_name: dict[str, list[TestCaseResult]]
) -> list[TestCaseResult]:
    """The testcases ``test_id`` names, looked up as documented in :func:`outcomes_for`."""
    expected = _expected(test_id)
    return by_key.get(test_id) or _match(expected, by_name.get(expected.name, []))


def _escaped_params(test_id: str) -> str:
    """``test_id`` with non-ASCII in its ``[...]`` escaped, as pytest writes parameter ids."""
    start = test_id.find("[")
    if start < 0 or test_id[start:].isascii():
        return test_id
    return test_id[:start] + test_id[start:].encode("unicode_escape").decode("ascii")


def _match(expected: _Expected, same_name: list[TestCaseResult]) -> list[TestCaseResult]:
    """The testcases ``expected`` names, among those with its name; ``[]`` for none or ambiguous."""
    found = [case for case in same_name if case.classname == expected.classname]
    found = found or _one_classname(case for case in same_name if _same_file(case, expected))
    if found or not expected.classname:
        return found
    dotted = "." + expected.classname
    longer = _one_classname(case for case in same_name if case.classname.endswith(dotted))
    return longer or _one_classname(
        case for case in same_name if case.classname and dotted.endswith("." + case.classname)
    )


def _same_file(case: TestCaseResult, expected: _Expected) -> bool:
    """Whether ``case`` was written from the id's file and sits in the id's classes."""
    if expected.path is None or case.file is None or _normal_path(case.file) != expected.path:
        return False
    count = len(expected.classes)
    return count == 0 or tuple(case.classname.split(".")[-count:]) == expected.classes


def _one_classname(cases: Iterable[TestCaseResult]) -> list[TestCaseResult]:
    """``cases`` if they all share one classname, else ``[]``."""
    found = list(cases)
    return found if len({case.classname for case in found}) == 1 else []


def _expected(test_id: str) -> _Expected:
    """Classname and name a test id refers to, following pytest's JUnit conventions."""
    *head, name = _split_id(test_id)
    if head and head[0].endswith(".py"):
        path = _normal_path(head[0])
        classes = tuple(head[1:])
        classname = ".".join([path[:-3].replace("/", "."), *classes])
        return _Expected(classname, name, path, classes)
    return _Expected(".".join(head), name)


def _split_id(test_id: str) -> list[str]:
    """``test_id`` split at each ``::`` outside square brackets."""
    parts: list[str] = []
    depth = start = index = 0
    while index < len(test_id):
        char = test_id[index]
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(depth - 1, 0)
        elif depth == 0 and test_id.startswith("::", index):
            parts.append(test_id[start:index])
            start = index = index + 2
            continue
        index += 1
    parts.append(test_id[start:])
    return parts


def _normal_path(path: str) -> str:
    """``path`` with forward slashes and no leading ``./`` or ``/``."""
    return _PATH_PREFIX.sub("", path.replace("\\", "/"))
