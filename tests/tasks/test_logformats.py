"""Tests for gradeflow.tasks._logformats: hand-written excerpts of each log format, real runs, hostile logs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gradeflow.authoring.swebench import map_test_name
from gradeflow.models.evidence import TestCaseResult
from gradeflow.tasks import _logformats
from gradeflow.tasks._junit import MESSAGE_CHARS, JUnitError, JUnitTooLarge, outcomes_for, parse_junit
from gradeflow.tasks._logformats import LOG_FORMATS, MAX_LOG_BYTES, MAX_LOG_CASES, LogTooLarge, parse_log


def _rows(cases: list[TestCaseResult]) -> list[tuple[str, str, str | None, str, str]]:
    return [(c.classname, c.name, c.file, c.outcome, c.message) for c in cases]


def test_the_public_api() -> None:
    assert _logformats.__all__ == ["LOG_FORMATS", "MAX_LOG_BYTES", "MAX_LOG_CASES", "LogTooLarge", "parse_log"]
    assert LOG_FORMATS == ("pytest-log", "django-log", "sympy-log")
    assert issubclass(LogTooLarge, JUnitTooLarge) and issubclass(LogTooLarge, JUnitError)


def test_an_unknown_format_is_the_callers_mistake_not_the_logs() -> None:
    with pytest.raises(ValueError, match="unknown test log format 'tap'") as caught:
        parse_log("tap", b"ok 1")
    assert not isinstance(caught.value, JUnitError)


@pytest.mark.parametrize("format", LOG_FORMATS)
def test_a_log_without_results_gives_no_cases(format: str) -> None:
    assert parse_log(format, b"") == []
    assert parse_log(format, b"Traceback (most recent call last):\n  boom\nImportError: no\n") == []


# pytest ------------------------------------------------------------------------------------------------------

PYTEST_8_LOG = """\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.4, pluggy-1.5.0
rootdir: /testbed
configfile: pyproject.toml
collected 11 items

tests/test_io.py ..F.sxX..                                               [ 81%]
tests/test_core.py .E                                                    [100%]

==================================== ERRORS ====================================
_______________________ ERROR at setup of test_with_db _________________________
E   ConnectionError: refused
=========================== short test summary info ============================
PASSED tests/test_io.py::test_read
PASSED tests/test_io.py::TestWriter::test_write[utf-8]
PASSED tests/test_io.py::test_names[a b - c]
PASSED tests/test_io.py::test_names['fixt, b']
PASSED tests/test_core.py::test_ok
SKIPPED [1] tests/test_io.py:40: no network
SKIPPED tests/test_io.py::test_unfolded - Skipped: needs a disk
XFAIL tests/test_io.py::test_legacy - old format
XFAIL at setup of tests/test_io.py::test_fixture_xfail - not yet
XPASS tests/test_io.py::test_flaky - sometimes passes
ERROR tests/test_core.py::test_with_db - ConnectionError: refused
FAILED tests/test_io.py::test_parse[x::y] - AssertionError: assert 1 == 2
FAILED tests/test_io.py::test_parse[a [1] - b] - ValueError: [1] - [2]
==== 2 failed, 5 passed, 2 skipped, 2 xfailed, 1 xpassed, 1 error in 0.52s =====
"""


def test_pytest_8_summary() -> None:
    m, c = "tests/test_io.py", "tests/test_core.py"
    assert _rows(parse_log("pytest-log", PYTEST_8_LOG.encode())) == [
        ("tests.test_io", "test_read", m, "passed", ""),
        ("tests.test_io.TestWriter", "test_write[utf-8]", m, "passed", ""),
        ("tests.test_io", "test_names[a b - c]", m, "passed", ""),
        ("tests.test_io", "test_names['fixt, b']", m, "passed", ""),  # SWE-bench cuts this at the space
        ("tests.test_core", "test_ok", c, "passed", ""),
        ("tests.test_io", "test_unfolded", m, "skipped", "needs a disk"),
        ("tests.test_io", "test_legacy", m, "xfailed", "old format"),
        ("tests.test_io", "test_fixture_xfail", m, "xfailed", "not yet"),
        ("tests.test_io", "test_flaky", m, "passed", "sometimes passes"),
        ("tests.test_core", "test_with_db", c, "error", "ConnectionError: refused"),
        ("tests.test_io", "test_parse[x::y]", m, "failed", "AssertionError: assert 1 == 2"),
        ("tests.test_io", "test_parse[a [1] - b]", m, "failed", "ValueError: [1] - [2]"),
    ]


PYTEST_5_LOG = """\
=========================== short test summary info ============================
PASSED tests/test_io.py::test_read
FAILED tests/test_io.py::test_parse[x::y] - AssertionError: assert 1 == 2
FAILED tests/test_io.py::TestWriter::test_write[utf-8]
SKIPPED [2] tests/test_io.py:40: no network
XFAIL tests/test_io.py::test_legacy
  reason: old format
XFAIL tests/test_io.py::test_bare
XPASS tests/test_io.py::test_flaky sometimes passes
ERROR tests/test_core.py::test_with_db - ConnectionError: refused
ERROR tests/test_broken.py - ModuleNotFoundError: No module named 'yaml::x'
========= 2 failed, 1 passed, 2 skipped, 2 xfailed, 1 xpassed, 2 error in 0.61s =========
"""


def test_pytest_4_to_7_summary_reasons_below_and_after_a_space() -> None:
    m = "tests/test_io.py"
    assert _rows(parse_log("pytest-log", PYTEST_5_LOG.encode())) == [
        ("tests.test_io", "test_read", m, "passed", ""),
        ("tests.test_io", "test_parse[x::y]", m, "failed", "AssertionError: assert 1 == 2"),
        ("tests.test_io.TestWriter", "test_write[utf-8]", m, "failed", ""),
        ("tests.test_io", "test_legacy", m, "xfailed", "reason: old format"),
        ("tests.test_io", "test_bare", m, "xfailed", ""),
        ("tests.test_io", "test_flaky", m, "passed", "sometimes passes"),
        ("tests.test_core", "test_with_db", "tests/test_core.py", "error", "ConnectionError: refused"),
        # A module that failed to import: pytest's JUnit names it by the dotted module.
        ("", "tests.test_broken", "tests/test_broken.py", "error", "ModuleNotFoundError: No module named 'yaml::x'"),
    ]


PYTEST_3_LOG = """\
=========================== short test summary info ============================
FAIL tests/test_io.py::TestWriter::()::test_write
SKIP [1] tests/test_io.py:40: no network
XFAIL tests/test_io.py::test_legacy
  old format
PASSED tests/test_io.py::TestWriter::()::test_flush
ERROR tests/test_core.py::test_with_db
"""


def test_pytest_3_summary_words_and_instance_nodes() -> None:
    m = "tests/test_io.py"
    assert _rows(parse_log("pytest-log", PYTEST_3_LOG.encode())) == [
        ("tests.test_io.TestWriter", "test_write", m, "failed", ""),
        ("tests.test_io", "test_legacy", m, "xfailed", "old format"),
        ("tests.test_io.TestWriter", "test_flush", m, "passed", ""),
        ("tests.test_core", "test_with_db", "tests/test_core.py", "error", ""),
    ]


@pytest.mark.parametrize(
    ("line", "name", "message"),
    [
        ("FAILED t.py::test[a] - boom", "test[a]", "boom"),
        ("FAILED t.py::test[a - b] - boom", "test[a - b]", "boom"),
        ("FAILED t.py::test[br[ack]et] - x] - y", "test[br[ack]et]", "x] - y"),
        ("FAILED t.py::test[[] - boom", "test[[]", "boom"),  # never balanced: the first "] - " ends it
        ("FAILED t.py::test[a]b] - boom", "test[a]b]", "boom"),
        ("FAILED t.py::test[a]b]", "test[a]b]", ""),
        ("FAILED t.py::test_plain - a - b", "test_plain", "a - b"),
        ("FAILED t.py::test_plain", "test_plain", ""),
        ("FAILED t.py::test[x] -", "test[x]", ""),
        # The line cannot tell "] - " inside an id from the one before the message: the first one wins.
        ("FAILED t.py::test[q] - r] - boom", "test[q]", "r] - boom"),
    ],
)
def test_where_a_node_id_ends(line: str, name: str, message: str) -> None:
    (case,) = parse_log("pytest-log", line.encode())
    assert (case.classname, case.name, case.message) == ("t", name, message)


@pytest.mark.parametrize(
    ("line", "name", "message"),
    [
        ("XPASS t.py::test[p q] ", "test[p q]", ""),  # pytest 3-7 with no reason: a space, then nothing
        ("XPASS t.py::test[p q] lucky", "test[p q]", "lucky"),
        ("XPASS t.py::test[p q] - lucky", "test[p q]", "lucky"),
        ("XPASS t.py::test_x lucky day", "test_x", "lucky day"),
    ],
)
def test_an_unexpected_pass_and_its_reason(line: str, name: str, message: str) -> None:
    (case,) = parse_log("pytest-log", line.encode())
    assert (case.name, case.outcome, case.message) == (name, "passed", message)


def test_a_pass_line_is_all_node_id() -> None:
    (case,) = parse_log("pytest-log", b"PASSED t.py::test[q] - r]")
    assert case.name == "test[q] - r]"


def test_not_summary_lines_are_ignored() -> None:
    log = "\n".join(
        [
            "tests/t.py::test_a PASSED                                  [ 50%]",  # -v progress, not the summary
            "SUBFAILED[m] (i=1) tests/t.py::test_sub - assert 1 == 0",
            "RERUN tests/t.py::test_b",
            " PASSED tests/t.py::test_c",
            "PASSED",
            "PASSED ",
            "FAILED  tests/t.py::test_d",
            "_____ test_e _____",
        ]
    )
    assert parse_log("pytest-log", log.encode()) == []


def test_a_long_message_is_cut_and_only_its_first_line_kept() -> None:
    log = f"FAILED t.py::test_x - {'m' * 500}\nsecond line of a CI message\nPASSED t.py::test_y"
    first, second = parse_log("pytest-log", log.encode())
    assert first.message == "m" * MESSAGE_CHARS and second.name == "test_y"


# unittest / Django -------------------------------------------------------------------------------------------

DJANGO_LOG = """\
Testing against Django installed in '/testbed/django' with up to 4 processes
Importing application queries
Skipping setup of unused database(s): other.
Operations to perform:
  Synchronize unmigrated apps: auth, contenttypes, messages, queries, sessions, staticfiles
  Apply all migrations: admin, sites
Running migrations:
  Applying admin.0001_initial... OK
  Applying sites.0001_initial... OK
System check identified no issues (1 silenced).
test_combine_and (queries.tests.Queries1Tests) ... ok
test_exclude (queries.tests.Queries1Tests) ... FAIL
test_ticket_7098 (queries.tests.Queries1Tests)
Make sure semi-deprecated ordering ... still works. ... ok
test_values_in_subquery (queries.tests.ValuesSubqueryTests) ... skipped "Database doesn't support feature(s): x"
test_slicing (queries.tests.ValuesSubqueryTests) ... skipped 'Slow'
test_null_join (queries.tests.NullJoinPromotionOrTest) ... expected failure
test_raises (queries.tests.Queries2Tests) ... ERROR
test_admin_page (queries.tests.Queries2Tests) ... Internal Server Error: /admin/
Traceback (most recent call last):
  File "/testbed/django/core/handlers/exception.py", line 34, in inner
ValueError: logged, not raised
ok
test_run_checks (queries.tests.Queries2Tests) ... Testing against Django installed in '/testbed/django'
System check identified no issues (0 silenced).
ok
Applying sites.0002_alter_domain_unique...test_no_migrations (queries.tests.LoaderTests) ... ok
test_docstring_fails (queries.tests.Queries2Tests)
A test with a docstring. ... FAIL

======================================================================
ERROR: test_raises (queries.tests.Queries2Tests)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/queries/tests.py", line 120, in test_raises
    Note.objects.get(pk=1)
queries.models.Note.DoesNotExist: Note matching query does not exist.

======================================================================
FAIL: test_exclude (queries.tests.Queries1Tests)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/queries/tests.py", line 88, in test_exclude
    self.assertQuerysetEqual(qs, ['<Item: one>'])
AssertionError: Lists differ: [] != ['<Item: one>']

Second list contains 1 additional elements.

======================================================================
FAIL: test_docstring_fails (queries.tests.Queries2Tests)
A test with a docstring.
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/queries/tests.py", line 140, in test_docstring_fails
    self.assertIs(x, None)
AssertionError: 1 is not None

----------------------------------------------------------------------
Ran 12 tests in 0.312s

FAILED (failures=2, errors=1, skipped=2, expected failures=1)
Destroying test database for alias 'default' ('file:memorydb_default?mode=memory&cache=shared')...
"""


def test_django_verbosity_2() -> None:
    q1, q2, q = "queries.tests.Queries1Tests", "queries.tests.Queries2Tests", "queries.tests"
    assert _rows(parse_log("django-log", DJANGO_LOG.encode())) == [
        (q1, "test_combine_and", None, "passed", ""),
        (q1, "test_exclude", None, "failed", "AssertionError: Lists differ: [] != ['<Item: one>']"),
        (q1, "test_ticket_7098", None, "passed", ""),
        (
            f"{q}.ValuesSubqueryTests",
            "test_values_in_subquery",
            None,
            "skipped",
            "Database doesn't support feature(s): x",
        ),
        (f"{q}.ValuesSubqueryTests", "test_slicing", None, "skipped", "Slow"),
        (f"{q}.NullJoinPromotionOrTest", "test_null_join", None, "xfailed", ""),
        (q2, "test_raises", None, "error", "queries.models.Note.DoesNotExist: Note matching query does not exist."),
        (q2, "test_admin_page", None, "passed", ""),
        (q2, "test_run_checks", None, "passed", ""),
        (f"{q}.LoaderTests", "test_no_migrations", None, "passed", ""),
        (q2, "test_docstring_fails", None, "failed", "AssertionError: 1 is not None"),
    ]


PY311_LOG = """\
test_add (utils_tests.test_numberformat.Tests.test_add) ... ok
test_decimal_subclass (utils_tests.test_numberformat.Tests.test_decimal_subclass)
Decimal subclasses ... are formatted. ... ok
test_format (utils_tests.test_numberformat.Tests.test_format) ...
  test_format (utils_tests.test_numberformat.Tests.test_format) (value=1.5) ... FAIL
  test_format (utils_tests.test_numberformat.Tests.test_format) [ok ... really] (value=' ... ') ... ERROR
test_large (utils_tests.test_numberformat.Tests.test_large) ... unexpected success
setUpClass (utils_tests.test_numberformat.Other) ... ERROR

======================================================================
ERROR: setUpClass (utils_tests.test_numberformat.Other)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/utils_tests/test_numberformat.py", line 90, in setUpClass
    raise RuntimeError("class boom")
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: class boom

======================================================================
ERROR: test_format (utils_tests.test_numberformat.Tests.test_format) [ok ... really] (value=' ... ')
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/utils_tests/test_numberformat.py", line 40, in test_format
KeyError: 'x'

======================================================================
FAIL: test_format (utils_tests.test_numberformat.Tests.test_format) (value=1.5)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/utils_tests/test_numberformat.py", line 40, in test_format
AssertionError: '1.5' != '1,5'

======================================================================
UNEXPECTED SUCCESS: test_large (utils_tests.test_numberformat.Tests.test_large)
----------------------------------------------------------------------
Ran 4 tests in 0.004s

FAILED (failures=1, errors=2, unexpected successes=1)
"""


def test_python_3_11_spelling_subtests_and_unexpected_success() -> None:
    t = "utils_tests.test_numberformat.Tests"
    assert _rows(parse_log("django-log", PY311_LOG.encode())) == [
        (t, "test_add", None, "passed", ""),
        (t, "test_decimal_subclass", None, "passed", ""),
        (t, "test_format", None, "failed", "AssertionError: '1.5' != '1,5'"),
        (t, "test_format", None, "error", "KeyError: 'x'"),
        (t, "test_large", None, "failed", "unexpected success"),
        ("utils_tests.test_numberformat.Other", "setUpClass", None, "error", "RuntimeError: class boom"),
    ]


PY38_SUBTESTS_LOG = """\
test_sub (m.Tests) ... test_next (m.Tests) ... ok
test_sub_ok (m.Tests) ... ok
test_split (m.Tests) ... partial output
ok
test_gone (m.Tests) ...

======================================================================
FAIL: test_sub (m.Tests) (i=1)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/m.py", line 9, in test_sub
AssertionError: 1 not less than 1

======================================================================
FAIL: test_sub (m.Tests) (i=2)
----------------------------------------------------------------------
AssertionError: no traceback line above this one

----------------------------------------------------------------------
Ran 4 tests in 0.001s
"""


def test_before_python_3_11_a_test_with_failed_subtests_prints_no_status() -> None:
    # test_sub's line is left open, so test_next's description follows on it; the blocks give test_sub's outcome.
    # test_gone printed no status before the run ended: it has no case.
    assert _rows(parse_log("django-log", PY38_SUBTESTS_LOG.encode())) == [
        ("m.Tests", "test_next", None, "passed", ""),
        ("m.Tests", "test_sub_ok", None, "passed", ""),
        ("m.Tests", "test_split", None, "passed", ""),
        ("m.Tests", "test_sub", None, "failed", "AssertionError: 1 not less than 1"),
        ("m.Tests", "test_sub", None, "failed", "AssertionError: no traceback line above this one"),
    ]


def test_a_status_line_only_resolves_a_test_still_waiting_for_one() -> None:
    log = "test_a (m.T) ... ok\nok\nFAIL\ntest_b (m.T) ... printed\nlevel=ERROR\nsome ok\nskipped 'late'\nok\n"
    assert _rows(parse_log("django-log", log.encode())) == [
        ("m.T", "test_a", None, "passed", ""),
        ("m.T", "test_b", None, "skipped", "late"),
    ]


def test_a_log_that_lost_its_trailing_spaces() -> None:
    log = (
        "test_a (m.T) ...\nSystem check identified no issues (0 silenced).\nok\ntest_b (m.T)\nDoc line ...\nout\nFAIL\n"
    )
    assert _rows(parse_log("django-log", log.encode())) == [
        ("m.T", "test_a", None, "passed", ""),
        ("m.T", "test_b", None, "failed", ""),
    ]


def test_a_docstring_line_belongs_only_to_the_description_right_above_it() -> None:
    log = "test_a (m.T)\n\nNot the docstring ... ok\ntest_b (m.T)\ntest_c (m.T) ... FAIL\n"
    assert _rows(parse_log("django-log", log.encode())) == [("m.T", "test_c", None, "failed", "")]


def test_before_python_3_11_a_docstring_test_with_failed_subtests_runs_into_the_next_test() -> None:
    # Python 3.9's shape (django 3.x): the docstring line is left open, the next test's description follows on it,
    # with its own docstring line below or its status on the same line; a docstring may hold " ... " itself.
    log = (
        "test_sub (m.T)\nSubtests with a docstring. ... test_next (m.T)\nThe next test. ... expected failure\n"
        "test_sub2 (m.T)\nDots ... in a docstring. ... test_plain (m.T) ... ok\n"
        "test_last (m.T)\nThe last test. ... printed\nok\n"
    )
    assert _rows(parse_log("django-log", log.encode())) == [
        ("m.T", "test_next", None, "xfailed", ""),
        ("m.T", "test_plain", None, "passed", ""),
        ("m.T", "test_last", None, "passed", ""),
    ]


# sympy -------------------------------------------------------------------------------------------------------

SYMPY_LOG = """\
============================= test process starts ==============================
executable:         /usr/bin/python  (3.9.19-final-0) [CPython]
architecture:       64-bit
cache:              no
ground types:       python
numpy:              None
random seed:        53912867
hash randomization: on (PYTHONHASHSEED=2399735716)

sympy/core/tests/test_basic.py[5]
test__aresame ok
test_structure F
test_equality E
test_printing hello
world
ok
test_literal_evalf_is_number_is_zero_is_comparable ok                       [FAIL]

sympy/printing/tests/test_latex.py[7]
test_printmethod ok
test_latex_basic f
test_latex_vector Skipped: needs numpy s
test_latex_unreasoned  - s
test_latex_slow Slow w
test_latex_timeout T
test_issue_x X
                                                                            [OK]

sympy/utilities/tests/test_broken.py[?]   Failed to import                  [FAIL]

________________________________ xpassed tests _________________________________
sympy/printing/tests/test_latex.py: test_issue_x

________________________________________________________________________________
______________ sympy/core/tests/test_basic.py:test_equality ____________________
Traceback (most recent call last):
  File "/testbed/sympy/core/tests/test_basic.py", line 40, in test_equality
    raise TypeError("cannot compare")
TypeError: cannot compare
________________________________________________________________________________
_____________ sympy/core/tests/test_basic.py::test_structure ___________________
Traceback (most recent call last):
  File "/testbed/sympy/core/tests/test_basic.py", line 30, in test_structure
    assert b21.args == (b2, b1)
AssertionError

 tests finished: 4 passed, 1 failed, 3 skipped, 1 expected to fail,
1 expected to fail but passed, 3 exceptions, in 0.35 seconds
DO *NOT* COMMIT!
"""


def test_sympy_verbose() -> None:
    b, la = "sympy/core/tests/test_basic.py", "sympy/printing/tests/test_latex.py"
    broken = "sympy/utilities/tests/test_broken.py"
    assert _rows(parse_log("sympy-log", SYMPY_LOG.encode())) == [
        ("", "test__aresame", b, "passed", ""),
        ("", "test_structure", b, "failed", "AssertionError"),
        ("", "test_equality", b, "error", "TypeError: cannot compare"),
        ("", "test_printing", b, "passed", ""),
        ("", "test_literal_evalf_is_number_is_zero_is_comparable", b, "passed", ""),
        ("", "test_printmethod", la, "passed", ""),
        ("", "test_latex_basic", la, "xfailed", ""),
        ("", "test_latex_vector", la, "skipped", "Skipped: needs numpy"),
        ("", "test_latex_unreasoned", la, "skipped", ""),
        ("", "test_latex_slow", la, "skipped", "Slow"),
        ("", "test_latex_timeout", la, "error", ""),
        ("", "test_issue_x", la, "passed", ""),
        ("", broken, broken, "error", "Failed to import"),
    ]


def test_a_sympy_traceback_without_a_status_line_is_a_case_of_its_own() -> None:
    log = "sympy/a/tests/test_a.py[1] \ntest_lost printedF\n____ sympy/a/tests/test_a.py::test_lost ____\nE: x\n"
    assert _rows(parse_log("sympy-log", log.encode())) == [
        ("", "test_lost", "sympy/a/tests/test_a.py", "failed", "E: x")
    ]


# Through outcomes_for, with the ids gradeflow holds ---------------------------------------------------------


def test_end_to_end_the_ids_gradeflow_holds_find_their_outcomes() -> None:
    pytest_ids = [
        "tests/test_io.py::test_names['fixt, b']",
        "tests/test_io.py::TestWriter::test_write[utf-8]",
        "tests/test_io.py::test_parse[a [1] - b]",
        "tests/test_io.py::test_legacy",
        "tests/test_io.py::test_flaky",
        "tests/test_io.py::test_network",  # skipped in a folded line: unknown
    ]
    assert outcomes_for(pytest_ids, parse_log("pytest-log", PYTEST_8_LOG.encode())) == dict(
        zip(pytest_ids, ["passed", "passed", "failed", "xfailed", "passed", "missing"], strict=True)
    )
    swebench_names = [
        "test_exclude (queries.tests.Queries1Tests)",
        "test_ticket_7098 (queries.tests.Queries1Tests)",
        "test_no_migrations (queries.tests.LoaderTests)",
        "test_format (utils_tests.test_numberformat.Tests.test_format)",
        "test_add (utils_tests.test_numberformat.Tests.test_add)",
    ]
    django_ids = [map_test_name(name) or "" for name in swebench_names]
    cases = parse_log("django-log", (DJANGO_LOG + PY311_LOG).encode())
    assert list(outcomes_for(django_ids, cases).values()) == ["failed", "passed", "passed", "error", "passed"]
    sympy_ids = ["test_structure", "test_latex_basic", "sympy/core/tests/test_basic.py::test__aresame", "test_nope"]
    assert list(outcomes_for(sympy_ids, parse_log("sympy-log", SYMPY_LOG.encode())).values()) == [
        "failed",
        "xfailed",
        "passed",
        "missing",
    ]


@pytest.mark.parametrize(
    ("format", "forged", "real", "test_id"),
    [
        ("pytest-log", "PASSED t.py::test_x", "FAILED t.py::test_x - boom", "t.py::test_x"),
        ("django-log", "test_x (m.T) ... ok", "test_x (m.T) ... FAIL", "m.T::test_x"),
        ("sympy-log", "test_x ok", "test_x F", "test_x"),
    ],
)
def test_a_forged_passing_line_never_hides_the_real_failure(format: str, forged: str, real: str, test_id: str) -> None:
    for log in (f"{forged}\n{real}\n", f"{real}\n{forged}\n", f"{forged}\n{forged}\n{real}\n"):
        cases = parse_log(format, log.encode())
        assert len(cases) == log.count("\n")  # every report is a case of its own
        assert outcomes_for([test_id], cases) == {test_id: "failed"}


def test_a_status_the_test_printed_itself_hides_no_failure() -> None:
    log = "test_x (m.T) ... \nok\nFAIL\n" + "=" * 70 + "\nFAIL: test_x (m.T)\n" + "-" * 70 + "\nAssertionError: no\n"
    cases = parse_log("django-log", log.encode())
    assert [(c.outcome, c.message) for c in cases] == [("passed", ""), ("failed", "AssertionError: no")]
    assert outcomes_for(["m.T::test_x"], cases) == {"m.T::test_x": "failed"}


# Hostile and malformed input ---------------------------------------------------------------------------------


def test_an_oversize_log_is_refused_unread() -> None:
    with pytest.raises(LogTooLarge, match=f"over the {MAX_LOG_BYTES}-byte limit"):
        parse_log("pytest-log", b"PASSED t.py::t\n" + b" " * MAX_LOG_BYTES)


@pytest.mark.parametrize(
    ("format", "line"),
    [("pytest-log", "PASSED t.py::t"), ("django-log", "test_a (m.T) ... ok"), ("sympy-log", "test_a ok")],
)
def test_a_log_over_the_case_cap_is_refused(format: str, line: str) -> None:
    assert len(parse_log(format, f"{line}\n".encode() * 3, max_cases=3)) == 3
    with pytest.raises(LogTooLarge, match="more than 3 test results"):
        parse_log(format, f"{line}\n".encode() * 4, max_cases=3)


def test_the_default_case_cap() -> None:
    assert MAX_LOG_CASES == 500_000
    with pytest.raises(LogTooLarge, match=f"more than {MAX_LOG_CASES} test results"):
        parse_log("pytest-log", b"PASSED t.py::t\n" * (MAX_LOG_CASES + 1))


def test_colours_line_ends_control_characters_and_bad_utf8() -> None:
    log = (
        b"\xef\xbb\xbfPASSED t.py::test_bom\r\n"
        b"\x1b[32mPASSED\x1b[0m t.py::\x1b[1mtest_green\x1b[0m\r\n"
        b"progress 10%\rFAILED t.py::test_cr - bad\x07bell\r"
        b"PASSED t.py::test[a\x00b\x7f]\n"
        b"PASSED t.py::test_\xff\xfe\n"
    )
    assert [(c.name, c.outcome, c.message) for c in parse_log("pytest-log", log)] == [
        ("test_bom", "passed", ""),
        ("test_green", "passed", ""),
        ("test_cr", "failed", "bad#x07bell"),
        ("test[a#x00b#x7F]", "passed", ""),  # spelled as pytest's JUnit writer spells them
        ("test_\ufffd\ufffd", "passed", ""),
    ]
    (case,) = parse_log("django-log", b"test_a\x00 (m.T) ... ok\ntest_b (m.T) ... ok\x1b[0m\n")
    assert case.name == "test_b"


ADVERSARIAL = {
    "pytest-log": [
        "FAILED t.py::test[" + "] x" * 400_000,
        "FAILED t.py::test[" + "[" * 1_000_000 + " - x",
        "PASSED " + "a" * 2_000_000,
        "XPASS t.py::" + "x" * 2_000_000,
        "\x1b[" + "0" * 2_000_000,
    ],
    "django-log": [
        "test_a (m.T) ... " * 200_000,
        "a" * 2_000_000 + " ... ok",
        "..." * 700_000 + " ... ok",
        " " * 2_000_000 + "x",
        "skipped" + " " * 2_000_000 + "x",
        "t (" + "m" * 2_000_000 + " ... ok",
        "FAIL: t (m.T)\n" * 200_000,
    ],
    "sympy-log": [
        "test" + "_" * 2_000_000 + "x ok",
        "a" * 2_000_000 + ".py",
        "ok" + " " * 2_000_000 + "x",
        "_" * 2_000_000,
        "____ p.py:test_x ____\n" * 200_000,
    ],
}


@pytest.mark.parametrize(("format", "line"), [(f, line) for f, lines in ADVERSARIAL.items() for line in lines])
def test_adversarial_lines_take_linear_time(format: str, line: str) -> None:
    # Each is about 2 MB; anything quadratic in a line's length, or per block, would take hours.
    started = time.perf_counter()
    parse_log(format, line.encode())
    assert time.perf_counter() - started < 20


@pytest.mark.parametrize("format", LOG_FORMATS)
def test_millions_of_short_lines(format: str) -> None:
    lines = {"pytest-log": "PASSED", "django-log": "ok", "sympy-log": "ok"}[format]
    started = time.perf_counter()
    assert parse_log(format, f"{lines}\nx\n".encode() * 2_000_000) == []
    assert time.perf_counter() - started < 30


# Real runs ---------------------------------------------------------------------------------------------------

GENERATED_TESTS = '''
import unittest
import pytest

@pytest.mark.parametrize("v", ["a b", "x - y", "k::z", "br[ack]et", "ünï", "fixt, b", "[1] - [2]"], ids=lambda v: v)
def test_p(v):
    assert v not in ("x - y", "[1] - [2]"), "bad value\\nsecond line"

class TestX:
    def test_y(self):
        pass

    class TestInner:
        def test_nested(self):
            pass

@pytest.fixture
def broken():
    raise RuntimeError("fixture boom")

def test_fixture_error(broken):
    pass

@pytest.fixture
def bad_teardown():
    yield
    raise ValueError("teardown boom")

def test_pass_and_teardown_error(bad_teardown):
    pass

def test_skip():
    pytest.skip("not here")

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert 0

@pytest.mark.xfail(reason="lucky")
def test_xpass():
    pass

class TestUnit(unittest.TestCase):
    def test_ok(self):
        """A docstring."""

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.fail("expected")
'''


def _run(command: list[str], cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    run = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    return run.stdout + run.stderr


@pytest.fixture(scope="module")
def pytest_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, bytes]:
    """A real pytest run over GENERATED_TESTS: its ``-rA`` log folded, unfolded, and its JUnit report."""
    root = tmp_path_factory.mktemp("pytest-log")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_gen.py").write_text(GENERATED_TESTS, encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--tb=short", "tests"]
    folded = _run(command, root)
    xml = root / "report.xml"
    unfolded = _run([*command, "--no-fold-skipped", f"--junitxml={xml}", "-o", "junit_family=xunit1"], root)
    return folded, unfolded, xml.read_bytes()


PYTEST_9 = int(pytest.__version__.split(".")[0]) >= 9


@pytest.mark.slow
@pytest.mark.skipif(not PYTEST_9, reason="--no-fold-skipped needs pytest 8.3")
def test_a_real_pytest_log_reads_as_its_junit_report(pytest_run: tuple[str, str, bytes]) -> None:
    _, unfolded, report = pytest_run
    from_log, from_junit = parse_log("pytest-log", unfolded.encode()), parse_junit(report)
    assert {(c.classname, c.name, c.file) for c in from_log} == {(c.classname, c.name, c.file) for c in from_junit}
    ids = [f"{c.classname}::{c.name}" for c in from_junit]
    ids += [
        "tests/test_gen.py::test_p[\\xfcn\\xef]",
        "tests/test_gen.py::test_p[x - y]",
        "tests/test_gen.py::test_p[k::z]",
    ]
    assert outcomes_for(ids, from_log) == outcomes_for(ids, from_junit)
    assert outcomes_for(["tests/test_gen.py::test_p[[1] - [2]]"], from_log) == {
        "tests/test_gen.py::test_p[[1] - [2]]": "failed"
    }


@pytest.mark.slow
def test_a_real_folded_pytest_log(pytest_run: tuple[str, str, bytes]) -> None:
    folded, _, _ = pytest_run
    ids = [
        "tests/test_gen.py::test_p[a b]",
        "tests/test_gen.py::test_p[fixt, b]",
        "tests/test_gen.py::TestX::TestInner::test_nested",
        "tests/test_gen.py::test_fixture_error",
        "tests/test_gen.py::test_pass_and_teardown_error",
        "tests/test_gen.py::test_skip",
        "tests/test_gen.py::test_xfail",
        "tests/test_gen.py::test_xpass",
        "tests/test_gen.py::TestUnit::test_expected_failure",
    ]
    outcomes = outcomes_for(ids, parse_log("pytest-log", folded.encode()))
    assert list(outcomes.values()) == [
        "passed",
        "passed",
        "passed",
        "error",
        "error",
        "missing",  # a folded skip names no test
        "xfailed",
        "passed",
        "xfailed",
    ]


UNITTEST_MODULE = '''
import sys
import unittest

class T(unittest.TestCase):
    def test_ok(self):
        pass

    def test_doc(self):
        """First line ... of a docstring.

        More.
        """

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise KeyError("k")

    @unittest.skip("no 'way'")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.fail()

    @unittest.expectedFailure
    def test_unexpected_success(self):
        pass

    def test_prints(self):
        print("System check identified no issues (0 silenced).")

    def test_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 1)

class E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("class boom")

    def test_never(self):
        pass
'''


@pytest.mark.slow
def test_a_real_unittest_verbose_log(tmp_path: Path) -> None:
    (tmp_path / "test_unit.py").write_text(UNITTEST_MODULE, encoding="utf-8")
    log = _run([sys.executable, "-m", "unittest", "-v", "test_unit"], tmp_path)
    cases = parse_log("django-log", log.encode())
    names = ["ok", "doc", "fail", "error", "skip", "expected_failure", "unexpected_success", "prints", "subtests"]
    ids = [f"test_unit.T::test_{name}" for name in names] + ["test_unit.E::test_never"]
    assert list(outcomes_for(ids, cases).values()) == [
        "passed",
        "passed",
        "failed",
        "error",
        "skipped",
        "xfailed",
        "failed",
        "passed",
        "failed",
        "missing",  # setUpClass failed, so it never ran
    ]
    messages = {(c.name, c.message) for c in cases if c.message}
    assert {("test_fail", "AssertionError: 1 != 2"), ("test_skip", "no 'way'")} <= messages
    assert ("setUpClass", "RuntimeError: class boom") in messages


DOCSTRING_MODULE = '''
import sys
import unittest


class Base(unittest.TestCase):
    def test_inherited(self):
        """Inherited docstring."""


class T(Base):
    def test_plain(self):
        pass

    def test_doc(self):
        """A docstring line."""

    def test_doc_prints(self):
        """A docstring whose test prints."""
        print("some output")
        print("more output ... with dots")

    def test_doc_stderr(self):
        """A docstring whose test writes to stderr."""
        sys.stderr.write("warning: thing\\n")

    def test_doc_fails(self):
        """A failing docstring test."""
        self.assertEqual(1, 2)

    def test_doc_errors(self):
        """An erroring docstring test."""
        raise KeyError("k")

    @unittest.skip("why")
    def test_doc_skipped(self):
        """A skipped docstring test."""

    def test_doc_multiline(self):
        """
        First line after a blank.

        More text.
        """

    def test_doc_dots(self):
        """Ends with dots..."""

    def test_doc_subtests(self):
        """Subtests with a docstring."""
        for i in range(2):
            with self.subTest(i=i):
                self.assertLess(i, 1)

    @unittest.expectedFailure
    def test_doc_xfail(self):
        """Expected to fail."""
        self.fail()
'''


def _pythons() -> list[str]:
    """This interpreter and, where pyenv has one, a Python before 3.11 (``test_x (module.Class)``)."""
    older = Path.home() / ".pyenv" / "versions"
    found = sorted(older.glob("3.9.*/bin/python")) + sorted(older.glob("3.8.*/bin/python"))
    return [sys.executable, *([str(found[0])] if found else [])]


@pytest.mark.slow
@pytest.mark.parametrize("python", _pythons(), ids=lambda p: "this" if p == sys.executable else "py39")
def test_a_real_unittest_log_with_docstrings_gives_each_outcome_to_the_tests_id(python: str, tmp_path: Path) -> None:
    # Each docstring test prints its description, then its docstring's first line carrying " ... ": the outcome
    # belongs to the test described above, whether it follows on that line or after the test's own output.
    (tmp_path / "test_doc.py").write_text(DOCSTRING_MODULE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")} | {"PYTHONUNBUFFERED": "1"}
    command = [python, "-m", "unittest", "-v", "test_doc"]
    run = subprocess.run(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    log = run.stdout.decode()  # one stream, as SWE-bench's harness reads it (2>&1)
    assert "\nA docstring whose test prints. ... some output\n" in log
    outcomes = {
        "test_doc.Base::test_inherited": "passed",
        "test_doc.T::test_inherited": "passed",
        "test_doc.T::test_plain": "passed",
        "test_doc.T::test_doc": "passed",
        "test_doc.T::test_doc_prints": "passed",
        "test_doc.T::test_doc_stderr": "passed",
        "test_doc.T::test_doc_fails": "failed",
        "test_doc.T::test_doc_errors": "error",
        "test_doc.T::test_doc_skipped": "skipped",
        "test_doc.T::test_doc_multiline": "passed",
        "test_doc.T::test_doc_dots": "passed",
        "test_doc.T::test_doc_subtests": "failed",
        "test_doc.T::test_doc_xfail": "xfailed",
    }
    cases = parse_log("django-log", log.encode())
    assert outcomes_for(list(outcomes), cases) == outcomes
    assert len(cases) == len(outcomes)  # no docstring line read as a test of its own


SYMPY_RUNNER = """
import sys
from sympy.testing.runtests import PyTestReporter, SymPyTests

reporter = PyTestReporter(verbose=True, tb="short", colors=False)
tests = SymPyTests(reporter, None, False, 1)
reporter.root_dir(sys.argv[1])
tests._testfiles = [sys.argv[1] + "/pkg/tests/test_gen.py"]
tests.test()
"""

SYMPY_TESTS = """
from sympy.testing.pytest import XFAIL, skip

def test_ok():
    pass

def test_fail():
    assert 1 == 2, "one is not two"

def test_error():
    raise ValueError("bad value")

@XFAIL
def test_xfail():
    assert False

def test_skip():
    skip("needs numpy")

def test_prints():
    print("hello")
"""


def _python_with_sympy() -> str | None:
    for python in (sys.executable, shutil.which("python3")):
        if (
            python
            and subprocess.run([python, "-c", "import sympy.testing.runtests"], capture_output=True).returncode == 0
        ):
            return python
    return None


@pytest.mark.slow
def test_a_real_sympy_verbose_log(tmp_path: Path) -> None:
    python = _python_with_sympy()
    if python is None:
        pytest.skip("no Python with sympy installed")
    (tmp_path / "pkg" / "tests").mkdir(parents=True)
    (tmp_path / "pkg" / "tests" / "test_gen.py").write_text(SYMPY_TESTS, encoding="utf-8")
    (tmp_path / "run.py").write_text(SYMPY_RUNNER, encoding="utf-8")
    log = _run([python, "run.py", str(tmp_path)], tmp_path)
    cases = parse_log("sympy-log", log.encode())
    assert {(c.name, c.file, c.outcome, c.message) for c in cases} == {
        ("test_ok", "pkg/tests/test_gen.py", "passed", ""),
        ("test_fail", "pkg/tests/test_gen.py", "failed", "AssertionError: one is not two"),
        ("test_error", "pkg/tests/test_gen.py", "error", "ValueError: bad value"),
        ("test_xfail", "pkg/tests/test_gen.py", "xfailed", ""),
        ("test_skip", "pkg/tests/test_gen.py", "skipped", "needs numpy"),
        ("test_prints", "pkg/tests/test_gen.py", "passed", ""),
    }
