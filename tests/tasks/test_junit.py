"""Tests for gradeflow.tasks._junit: real pytest reports, other runners' reports, and hostile input."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from gradeflow.models.evidence import TestCaseResult
from gradeflow.tasks._junit import (
    MAX_JUNIT_BYTES,
    MAX_JUNIT_TESTCASES,
    MESSAGE_CHARS,
    JUnitError,
    JUnitTooLarge,
    _CaseCollector,
    junit_names,
    names_in,
    outcomes_for,
    parse_junit,
)

PYTEST_9 = int(pytest.__version__.split(".")[0]) >= 9

GENERATED_MODULE = """
import unittest
import pytest

@pytest.mark.parametrize(
    "v",
    ["a-1", "x::y", "path/with.dots", "ünïcode", " spaced ", "br[ack]et", "["],
    ids=lambda v: v,
)
def test_param(v):
    assert v != "x::y"

@pytest.mark.parametrize("v", [pytest.param(1, id="x::y/z.w")])
def test_z(v):
    pass

def test_ünï():
    pass

class TestOuter:
    class TestInner:
        def test_nested(self):
            pass

    def test_method(self):
        pass

@pytest.fixture
def broken():
    raise RuntimeError("fixture boom\\nsecond line")

def test_fixture_error(broken):
    pass

def test_fails():
    assert 1 == 2, "one is not two"

def test_skipped():
    pytest.skip("not today")

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False

def test_xfail_imperative():
    pytest.xfail("not done yet")

@pytest.mark.xfail(reason="fixed now")
def test_xpass():
    pass

@pytest.mark.xfail(reason="must fail", strict=True)
def test_xpass_strict():
    pass

@pytest.mark.xfail(raises=KeyError)
def test_xfail_wrong_exception():
    raise ValueError("other")

@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown boom")

def test_fail_and_teardown_error(bad_teardown):
    assert False

def test_pass_and_teardown_error(bad_teardown):
    pass

class TestUnit(unittest.TestCase):
    def test_ok(self):
        self.assertTrue(True)

    @unittest.skip("unittest skip")
    def test_unit_skip(self):
        pass

    @unittest.expectedFailure
    def test_unit_expected_failure(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_unit_unexpected_success(self):
        pass

    def test_sub(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1)

    def test_sub_pass(self):
        for i in range(2):
            with self.subTest(i=i):
                pass
"""

SUBTESTS_FIXTURE_TEST = """
def test_subtests_fixture(subtests):
    for i in range(3):
        with subtests.test(msg="st", i=i):
            assert i != 2
"""

M = "tests/sub/test_gen.py"
C = "tests.sub.test_gen"
# (pytest node id, JUnit classname::name spelling, outcome)
PYTEST_CASES = [
    (f"{M}::test_param[a-1]", f"{C}::test_param[a-1]", "passed"),
    (f"{M}::test_param[x::y]", f"{C}::test_param[x::y]", "failed"),
    (f"{M}::test_param[path/with.dots]", f"{C}::test_param[path/with.dots]", "passed"),
    # pytest ascii-escapes non-ASCII parameter ids: the id holds a literal backslash-x.
    (f"{M}::test_param[\\xfcn\\xefcode]", f"{C}::test_param[\\xfcn\\xefcode]", "passed"),
    # ... yet an id spelled with the unicode itself still finds it.
    (f"{M}::test_param[ünïcode]", f"{C}::test_param[ünïcode]", "passed"),
    (f"{M}::test_param[ spaced ]", f"{C}::test_param[ spaced ]", "passed"),
    (f"{M}::test_param[br[ack]et]", f"{C}::test_param[br[ack]et]", "passed"),
    (f"{M}::test_param[[]", f"{C}::test_param[[]", "passed"),
    (f"{M}::test_z[x::y/z.w]", f"{C}::test_z[x::y/z.w]", "passed"),
    (f"{M}::test_ünï", f"{C}::test_ünï", "passed"),
    (f"{M}::TestOuter::TestInner::test_nested", f"{C}.TestOuter.TestInner::test_nested", "passed"),
    (f"{M}::TestOuter::test_method", f"{C}.TestOuter::test_method", "passed"),
    (f"{M}::test_fixture_error", f"{C}::test_fixture_error", "error"),
    (f"{M}::test_fails", f"{C}::test_fails", "failed"),
    (f"{M}::test_skipped", f"{C}::test_skipped", "skipped"),
    # Expected failures (pytest writes <skipped type="pytest.xfail">); an unexpected pass is a plain
    # pass, or a <failure> when strict; an xfail for another exception is a real failure.
    (f"{M}::test_xfail", f"{C}::test_xfail", "xfailed"),
    (f"{M}::test_xfail_imperative", f"{C}::test_xfail_imperative", "xfailed"),
    (f"{M}::test_xpass", f"{C}::test_xpass", "passed"),
    (f"{M}::test_xpass_strict", f"{C}::test_xpass_strict", "failed"),
    (f"{M}::test_xfail_wrong_exception", f"{C}::test_xfail_wrong_exception", "failed"),
    (f"{M}::TestUnit::test_unit_expected_failure", f"{C}.TestUnit::test_unit_expected_failure", "xfailed"),
    (f"{M}::TestUnit::test_unit_unexpected_success", f"{C}.TestUnit::test_unit_unexpected_success", "failed"),
    # pytest writes two testcases here: one <failure>, then one <error> for the teardown.
    (f"{M}::test_fail_and_teardown_error", f"{C}::test_fail_and_teardown_error", "error"),
    (f"{M}::test_pass_and_teardown_error", f"{C}::test_pass_and_teardown_error", "error"),
    (f"{M}::TestUnit::test_ok", f"{C}.TestUnit::test_ok", "passed"),
    (f"{M}::TestUnit::test_unit_skip", f"{C}.TestUnit::test_unit_skip", "skipped"),
    (f"{M}::TestUnit::test_sub", f"{C}.TestUnit::test_sub", "failed"),
    (f"{M}::TestUnit::test_sub_pass", f"{C}.TestUnit::test_sub_pass", "passed"),
    (f"{M}::test_not_there", f"{C}::test_not_there", "missing"),
    (f"{M}::TestOuter::test_nested", f"{C}.TestOuter::test_nested", "missing"),
]
if PYTEST_9:
    PYTEST_CASES.append((f"{M}::test_subtests_fixture", f"{C}::test_subtests_fixture", "failed"))


@pytest.fixture(scope="module", params=["xunit2", "xunit1"])
def pytest_report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A JUnit report written by a real pytest run over GENERATED_MODULE."""
    root = tmp_path_factory.mktemp(f"gen-{request.param}")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / "tests" / "sub").mkdir(parents=True)
    source = GENERATED_MODULE + (SUBTESTS_FIXTURE_TEST if PYTEST_9 else "")
    (root / M).write_text(source, encoding="utf-8")
    xml = root / "report.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={xml}"]
    command += ["-o", f"junit_family={request.param}", "tests"]
    run = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    return xml.read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize(("node_id", "junit_id", "outcome"), PYTEST_CASES)
def test_real_pytest_report_both_spellings(pytest_report: bytes, node_id: str, junit_id: str, outcome: str) -> None:
    cases = parse_junit(pytest_report)
    assert outcomes_for([node_id, junit_id], cases) == {node_id: outcome, junit_id: outcome}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "outcome", "message"),
    [
        ("test_fails", "failed", "AssertionError: one is not two"),
        ("test_fixture_error", "error", 'failed on setup with "RuntimeError: fixture boom'),
        ("test_skipped", "skipped", "not today"),
        ("test_xfail", "xfailed", "known"),
        ("test_xfail_imperative", "xfailed", "not done yet"),
        ("test_xpass_strict", "failed", "[XPASS(strict)] must fail"),
        ("test_param[a-1]", "passed", ""),
    ],
)
def test_real_pytest_report_messages(pytest_report: bytes, name: str, outcome: str, message: str) -> None:
    (case,) = [case for case in parse_junit(pytest_report) if case.name == name]
    assert (case.classname, case.outcome, case.message) == (C, outcome, message)


@pytest.mark.slow
def test_real_pytest_report_file_attribute(pytest_report: bytes) -> None:
    files = {case.file for case in parse_junit(pytest_report)}
    assert files in ({None}, {M})  # only the xunit1 family writes file=


# What pytest 8.4.2 wrote (`pytest --junitxml`, the default xunit2 family) for expected failures and
# unexpected passes; time, timestamp and hostname attributes dropped, a newline put before each
# testcase. pytest 9.2.0 writes the same bytes.
PYTEST_8_XFAIL = b"""<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite
 name="pytest" errors="0" failures="3" skipped="5" tests="10">
<testcase classname="test_xf" name="test_marked_fails"><skipped type="pytest.xfail" message="known bug" /></testcase>
<testcase classname="test_xf" name="test_marked_no_reason"><skipped type="pytest.xfail" message="" /></testcase>
<testcase classname="test_xf" name="test_imperative"><skipped type="pytest.xfail" message="not done yet" /></testcase>
<testcase classname="test_xf" name="test_xpass" />
<testcase classname="test_xf" name="test_xpass_strict"><failure message="[XPASS(strict)] must fail">\
[XPASS(strict)] must fail</failure></testcase>
<testcase classname="test_xf" name="test_wrong_raises"><failure message="ValueError: other">\
@pytest.mark.xfail(raises=KeyError, reason="wrong error")
    def test_wrong_raises():
&gt;       raise ValueError("other")
E       ValueError: other

test_xf.py:32: ValueError</failure></testcase>
<testcase classname="test_xf" name="test_skip"><skipped type="pytest.skip" message="no network">\
test_xf.py:36: no network</skipped></testcase>
<testcase classname="test_xf" name="test_pass" />
<testcase classname="test_xf.Legacy" name="test_expected"><skipped type="pytest.xfail" message="" /></testcase>
<testcase classname="test_xf.Legacy" name="test_unexpected_success"><failure message="Failed: Unexpected success">\
Unexpected success</failure></testcase>
</testsuite></testsuites>"""


@pytest.mark.parametrize(
    ("test_id", "outcome", "message"),
    [
        ("test_xf.py::test_marked_fails", "xfailed", "known bug"),  # @pytest.mark.xfail, failing
        ("test_xf.py::test_marked_no_reason", "xfailed", ""),
        ("test_xf.py::test_imperative", "xfailed", "not done yet"),  # pytest.xfail() in the test
        ("test_xf.py::test_xpass", "passed", ""),  # an unexpected pass, not strict
        ("test_xf.py::test_xpass_strict", "failed", "[XPASS(strict)] must fail"),
        ("test_xf.py::test_wrong_raises", "failed", "ValueError: other"),  # xfail(raises=...) for another error
        ("test_xf.py::test_skip", "skipped", "no network"),
        ("test_xf.py::test_pass", "passed", ""),
        ("test_xf.py::Legacy::test_expected", "xfailed", ""),  # unittest's expectedFailure
        ("test_xf.py::Legacy::test_unexpected_success", "failed", "Failed: Unexpected success"),
    ],
)
def test_pytest_8_expected_failures(test_id: str, outcome: str, message: str) -> None:
    cases = parse_junit(PYTEST_8_XFAIL)
    assert outcomes_for([test_id], cases) == {test_id: outcome}
    (case,) = [c for c in cases if c.name == test_id.rpartition("::")[2]]
    assert (case.outcome, case.message) == (outcome, message)


SUREFIRE = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xsi:noNamespaceSchemaLocation="https://maven.apache.org/surefire/maven-surefire-plugin/xsd/surefire-test-report.xsd"
    name="com.acme.CalcTest" time="0.05" tests="5" errors="1" skipped="1" failures="1">
  <properties><property name="java.version" value="17"/></properties>
  <testcase name="testAdd" classname="com.acme.CalcTest" time="0.001"/>
  <testcase name="testDivide" classname="com.acme.CalcTest" time="0.002">
    <failure message="expected: &lt;2&gt; but was: &lt;3&gt;"
        type="org.opentest4j.AssertionFailedError"><![CDATA[
org.opentest4j.AssertionFailedError: expected: <2> but was: <3>
<!DOCTYPE html> <!ENTITY quoted in output>
]]></failure>
  </testcase>
  <testcase name="testBoom" classname="com.acme.CalcTest"><error type="java.lang.IllegalStateException">
java.lang.IllegalStateException: boom
	at com.acme.CalcTest.testBoom(CalcTest.java:20)</error></testcase>
  <testcase name="testLater" classname="com.acme.CalcTest"><skipped message="disabled"/></testcase>
  <testcase name="testFlaky" classname="com.acme.CalcTest">
    <flakyFailure message="first try" type="X"/></testcase>
  <system-out><![CDATA[log line]]></system-out>
</testsuite>
"""

GO_JUNIT_REPORT = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="1">
\t<testsuite name="github.com/acme/calc" tests="3" failures="1" errors="0" id="0" time="0.010">
\t\t<properties><property name="go.version" value="go1.22.0"></property></properties>
\t\t<testcase name="TestAdd" classname="github.com/acme/calc" time="0.000"></testcase>
\t\t<testcase name="TestDivide/by_zero" classname="github.com/acme/calc" time="0.000">
\t\t\t<failure message="Failed"><![CDATA[    calc_test.go:20: want error]]></failure>
\t\t</testcase>
\t\t<testcase name="TestSkip" classname="github.com/acme/calc" time="0.000">
\t\t\t<skipped message="calc_test.go:30: later"></skipped>
\t\t</testcase>
\t</testsuite>
</testsuites>
"""

JEST_JUNIT = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="jest tests" tests="2" failures="1" errors="0" time="1.2">
  <testsuite name="Calc" errors="0" failures="1" skipped="0" time="0.5" tests="2">
    <testcase classname="Calc divides numbers" name="Calc divides numbers" time="0.002"></testcase>
    <testcase classname="Calc handles a::b [edge] case" name="Calc handles a::b [edge] case" time="0.001">
      <failure>Error: expect(received).toBe(expected)

Expected: 2</failure>
    </testcase>
  </testsuite>
</testsuites>
"""

NESTED = b"""<testsuites><testsuite name="outer">
  <testsuite name="inner">
    <testcase classname="a.b" name="t1"/>
    <testsuite name="deeper"><testcase classname="a.c" name="t2"><failure message="x"/></testcase></testsuite>
  </testsuite>
  <testcase classname="a.b" name="t0"/>
</testsuite><testcase classname="a.d" name="loose"/></testsuites>"""


@pytest.mark.parametrize(
    ("report", "test_id", "outcome", "message"),
    [
        (SUREFIRE, "com.acme.CalcTest::testAdd", "passed", ""),
        (SUREFIRE, "com.acme.CalcTest::testDivide", "failed", "expected: <2> but was: <3>"),
        (SUREFIRE, "com.acme.CalcTest::testBoom", "error", "java.lang.IllegalStateException: boom"),
        (SUREFIRE, "com.acme.CalcTest::testLater", "skipped", "disabled"),
        (SUREFIRE, "com.acme.CalcTest::testFlaky", "passed", ""),
        (SUREFIRE, "com.acme.CalcTest::testMissing", "missing", None),
        (GO_JUNIT_REPORT, "github.com/acme/calc::TestAdd", "passed", ""),
        (GO_JUNIT_REPORT, "github.com/acme/calc::TestDivide/by_zero", "failed", "Failed"),
        (GO_JUNIT_REPORT, "github.com/acme/calc::TestSkip", "skipped", "calc_test.go:30: later"),
        (JEST_JUNIT, "Calc divides numbers::Calc divides numbers", "passed", ""),
        (
            JEST_JUNIT,
            "Calc handles a::b [edge] case::Calc handles a::b [edge] case",
            "failed",
            "Error: expect(received).toBe(expected)",
        ),
        (NESTED, "a.b::t0", "passed", ""),
        (NESTED, "a.b::t1", "passed", ""),
        (NESTED, "a.c::t2", "failed", "x"),
        (NESTED, "a.d::loose", "passed", ""),
        (NESTED, "a.b::t2", "missing", None),
    ],
)
def test_other_runners(report: bytes, test_id: str, outcome: str, message: str | None) -> None:
    cases = parse_junit(report)
    assert outcomes_for([test_id], cases) == {test_id: outcome}
    if message is not None:
        (case,) = [case for case in cases if f"{case.classname}::{case.name}" == test_id]
        assert case.message == message


def case(classname: str, name: str, outcome: str = "passed", file: str | None = None) -> TestCaseResult:
    return TestCaseResult.model_validate({"classname": classname, "name": name, "outcome": outcome, "file": file})


@pytest.mark.parametrize(
    ("cases", "test_id", "outcome"),
    [
        # rootdir added a prefix to the classname
        ([case("src.tests.test_x", "test_a")], "tests/test_x.py::test_a", "passed"),
        # pytest ran from inside tests/: the classname lost a prefix
        ([case("sub.test_gen", "test_a", "failed")], "tests/sub/test_gen.py::test_a", "failed"),
        ([case("sub.test_gen.TestK", "test_a")], "tests/sub/test_gen.py::TestK::test_a", "passed"),
        # a prefix fallback that is not unique matches nothing
        (
            [case("a.tests.test_x", "test_a"), case("b.tests.test_x", "test_a")],
            "tests/test_x.py::test_a",
            "missing",
        ),
        # an exact match beats a prefix match
        (
            [case("tests.test_x", "test_a"), case("src.tests.test_x", "test_a", "failed")],
            "tests/test_x.py::test_a",
            "passed",
        ),
        # suffixes are whole dotted parts
        ([case("atest_x", "test_a")], "test_x::test_a", "missing"),
        ([case("tests.test_x", "test_a")], "tests/test_x.py::test_b", "missing"),
        # the file attribute, for runners whose classname is not the module path
        ([case("weird", "test_a", "failed", "tests/test_x.py")], "tests/test_x.py::test_a", "failed"),
        (
            [case("Odd.TestK", "test_a", "error", "./tests/test_x.py")],
            "tests/test_x.py::TestK::test_a",
            "error",
        ),
        (
            [case("Odd.TestK", "test_a", "error", "tests/test_x.py")],
            "tests/test_x.py::TestJ::test_a",
            "missing",
        ),
        ([case("weird", "test_a", "passed", "tests/test_y.py")], "tests/test_x.py::test_a", "missing"),
        # Windows separators and ./ in the id's path
        ([case("tests.test_x", "test_a")], "tests\\test_x.py::test_a", "passed"),
        ([case("tests.test_x", "test_a")], "./tests/test_x.py::test_a", "passed"),
        # brackets: `::` and `.py` inside a parameter id belong to the name
        ([case("tests.test_x", "t[a.py::b]")], "tests/test_x.py::t[a.py::b]", "passed"),
        ([case("tests.test_x.TestK", "t[a::b]")], "tests.test_x.TestK::t[a::b]", "passed"),
        ([case("tests.test_x.TestK", "t[a::b]")], "tests.test_x::TestK::t[a::b]", "passed"),
        # a bare name matches only a testcase without classname
        ([case("", "TestAdd")], "TestAdd", "passed"),
        ([case("calc", "TestAdd")], "TestAdd", "missing"),
        ([], "tests/test_x.py::test_a", "missing"),
    ],
)
def test_matching(cases: list[TestCaseResult], test_id: str, outcome: str) -> None:
    assert outcomes_for([test_id], cases) == {test_id: outcome}
    # The cases whose names are not among the names the id could match are never needed.
    wanted = names_in([test_id])
    assert outcomes_for([test_id], [c for c in cases if c.name in wanted]) == {test_id: outcome}


@pytest.mark.parametrize(
    ("outcomes", "aggregate"),
    [
        (["passed", "passed"], "passed"),
        (["passed", "failed"], "failed"),
        (["failed", "error"], "error"),
        (["error", "passed"], "error"),
        (["passed", "skipped"], "passed"),
        (["skipped", "failed"], "failed"),
        (["skipped", "skipped"], "skipped"),
        # an expected failure is a failure that happened: above a pass, below a real failure
        (["passed", "xfailed"], "xfailed"),
        (["xfailed", "skipped"], "xfailed"),
        (["xfailed", "failed"], "failed"),
        (["error", "xfailed"], "error"),
    ],
)
def test_duplicates_aggregate_worst_outcome(outcomes: list[str], aggregate: str) -> None:
    cases = [case("tests.test_x.TestK", "test_sub", outcome) for outcome in outcomes]
    for test_id in ["tests/test_x.py::TestK::test_sub", "tests.test_x.TestK::test_sub"]:
        assert outcomes_for([test_id], cases) == {test_id: aggregate}


def test_outcomes_for_keeps_every_id() -> None:
    cases = [case("m", "a"), case("m", "b", "failed")]
    assert outcomes_for(["m::a", "m::b", "m::c", "m::a"], cases) == {
        "m::a": "passed",
        "m::b": "failed",
        "m::c": "missing",
    }


def billion_laughs(encoding: str = "utf-8") -> bytes:
    levels = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    text = f"""<?xml version="1.0" encoding="{encoding}"?>
<!DOCTYPE lolz [<!ENTITY l0 "lol">{levels}]>
<testsuites><testsuite><testcase name="&l9;" classname="x"/></testsuite></testsuites>"""
    return text.encode(encoding)


BEFORE_PARSING = "DOCTYPE or ENTITY declaration; refused before parsing"
CASE = b'<testsuite><testcase classname="c" name="n"/></testsuite>'


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (billion_laughs(), BEFORE_PARSING),
        (billion_laughs("utf-16"), BEFORE_PARSING),
        (billion_laughs("utf-16-le"), BEFORE_PARSING),
        (billion_laughs("utf-16-be"), BEFORE_PARSING),
        # expat takes a NUL in the first two bytes for UTF-16 without a BOM
        ((" " + billion_laughs("utf-8").decode().split("?>", 1)[1]).encode("utf-16-le"), BEFORE_PARSING),
        (("\n" + billion_laughs("utf-8").decode().split("?>", 1)[1]).encode("utf-16-be"), BEFORE_PARSING),
        (b"\xef\xbb\xbf" + billion_laughs(), BEFORE_PARSING),
        (b'<!-- <a> --><?pi <b>?>\n<!DOCTYPE x [<!ENTITY e "e">]>' + CASE, BEFORE_PARSING),
        (
            b'<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><testsuite><testcase name="&e;"/></testsuite>',
            BEFORE_PARSING,
        ),
        (b'<!DOCTYPE x [<!ENTITY % p SYSTEM "http://127.0.0.1:9/p.dtd"> %p;]>' + CASE, BEFORE_PARSING),
        (b'<!DOCTYPE testsuite SYSTEM "http://127.0.0.1:9/junit.dtd">' + CASE, BEFORE_PARSING),
        (b"<!doctype testsuite>" + CASE, BEFORE_PARSING),
        (b'<!ENTITY e "e">' + CASE, BEFORE_PARSING),
        (b"", "empty"),
        (b" \n\t ", "empty"),
        (b"<testsuites><testsuite><testcase name='x'>", "not well-formed"),
        (CASE[:-5], "not well-formed"),
        (CASE + b"<junk/>", "not well-formed"),
        (b"\x00\xffgarbage\x00", "not well-formed"),
        (b"not xml at all", "not well-formed"),
        (b'<?xml version="1.0" encoding="x-unknown"?>' + CASE, "not well-formed"),
        (b'<?xml version="1.0" encoding="utf-7"?>' + CASE, "not well-formed"),
        (b'<?xml version="1.0" encoding="cp037"?>' + CASE, "not well-formed"),
        (b"<html><body>502 Bad Gateway</body></html>", "root element is <html>"),
        (b'<testsuites xmlns="urn:x"><testsuite/></testsuites>', "root element is <{urn:x}testsuites>"),
        (b"<testcase classname='c' name='n'/>", "root element is <testcase>"),
    ],
)
def test_refuses_hostile_or_broken_reports(data: bytes, problem: str) -> None:
    with pytest.raises(JUnitError) as raised:
        parse_junit(data)
    assert problem in str(raised.value)
    assert "\n" not in str(raised.value)


def test_builder_refuses_a_doctype_the_prefilter_missed() -> None:
    parser = ET.XMLParser(target=_CaseCollector(MAX_JUNIT_TESTCASES))
    with pytest.raises(JUnitError, match="DOCTYPE declaration; refused while parsing"):
        parser.feed(billion_laughs())


def test_refuses_oversize_report() -> None:
    data = b"<testsuite>" + b" " * MAX_JUNIT_BYTES + b"</testsuite>"
    with pytest.raises(JUnitError, match="limit"):
        parse_junit(data)


@pytest.mark.parametrize(
    "data",
    [
        b"<testsuites/>",
        b'<?xml version="1.0"?><testsuites name="t"><testsuite name="pytest" tests="0"/></testsuites>',
        b'<testsuite name="x" tests="0"><properties/><system-out>nothing</system-out></testsuite>',
    ],
)
def test_report_without_testcases_is_empty(data: bytes) -> None:
    assert parse_junit(data) == []


ONE_UNICODE_CASE = '<testsuite><testcase classname="ç" name="ünï"/></testsuite>'


@pytest.mark.parametrize(
    "data",
    [
        ('<?xml version="1.0" encoding="utf-16"?>' + ONE_UNICODE_CASE).encode("utf-16"),
        ('<?xml version="1.0" encoding="iso-8859-1"?>' + ONE_UNICODE_CASE).encode("latin-1"),
        ('<?xml version="1.0" encoding="windows-1252"?>' + ONE_UNICODE_CASE).encode("cp1252"),
        ("\ufeff" + ONE_UNICODE_CASE).encode(),
    ],
)
def test_reads_other_encodings(data: bytes) -> None:
    assert [(c.classname, c.name) for c in parse_junit(data)] == [("ç", "ünï")]


def test_deeply_nested_suites_do_not_recurse() -> None:
    depth = 50_000
    data = b"<testsuites>" + b"<testsuite>" * depth + CASE + b"</testsuite>" * depth + b"</testsuites>"
    assert [(c.classname, c.name) for c in parse_junit(data)] == [("c", "n")]


@pytest.mark.parametrize(
    ("result", "outcome", "message"),
    [
        ('<failure message="&#10;&#10;  first  &#10;second"/>', "failed", "first"),
        ('<failure message="raw\nnewlines are spaces"/>', "failed", "raw newlines are spaces"),
        ('<failure message="">  \ntext line\nmore</failure>', "failed", "text line"),
        ("<error>" + "x" * 500 + "</error>", "error", "x" * MESSAGE_CHARS),
        ('<skipped/><failure message="f"/>', "failed", "f"),
        ('<skipped type="pytest.xfail" message="known bug"/>', "xfailed", "known bug"),
        ('<skipped type="pytest.skip" message="no network">t.py:3: no network</skipped>', "skipped", "no network"),
        ('<skipped type="xfail" message="another runner"/>', "skipped", "another runner"),
        ('<skipped type="pytest.xfail" message="x"/><error message="teardown"/>', "error", "teardown"),
        ('<failure message="f"/><error message="e"/>', "error", "e"),
        ("<system-out>out</system-out><system-err>err</system-err>", "passed", ""),
        ('<rerunFailure message="r"/>', "passed", ""),
    ],
)
def test_testcase_outcome_and_message(result: str, outcome: str, message: str) -> None:
    data = f'<testsuite><testcase classname="c" name="n" file="t.py">{result}</testcase></testsuite>'
    (parsed,) = parse_junit(data.encode())
    assert (parsed.outcome, parsed.message, parsed.file) == (outcome, message, "t.py")


def test_missing_attributes_become_empty() -> None:
    (parsed,) = parse_junit(b"<testsuite><testcase/></testsuite>")
    assert (parsed.classname, parsed.name, parsed.file, parsed.outcome) == ("", "", None, "passed")


def _report(count: int, *, hostile: bool = False) -> bytes:
    """``count`` testcases: 1,000 names over ``count/1000`` modules, or (``hostile``) one name in as many classes."""
    cases = "".join(
        f'<testcase classname="pkg{i}.test_x" name="test"/>'
        if hostile
        else f'<testcase classname="tests.test_m{i // 1000}" name="test_{i % 1000}"/>'
        for i in range(count)
    )
    return f"<testsuites><testsuite>{cases}</testsuite></testsuites>".encode()


def test_a_report_over_the_testcase_cap_is_refused_as_too_large() -> None:
    assert MAX_JUNIT_TESTCASES == 500_000
    assert len(parse_junit(_report(4), max_cases=4)) == 4
    with pytest.raises(JUnitTooLarge, match="more than 3 testcases"):
        parse_junit(_report(4), max_cases=3)
    with pytest.raises(JUnitTooLarge, match=f"more than {MAX_JUNIT_TESTCASES} testcases"):
        parse_junit(b"<testsuite>" + b"<testcase/>" * (MAX_JUNIT_TESTCASES + 1) + b"</testsuite>")


def test_reading_stops_at_the_first_testcase_over_the_cap() -> None:
    # The rest need not even be well-formed: nothing past the cap is read.
    with pytest.raises(JUnitTooLarge):
        parse_junit(b"<testsuite>" + b"<testcase/>" * 3 + b"<broken", max_cases=2)


def test_an_oversize_report_is_too_large_and_a_junit_error() -> None:
    with pytest.raises(JUnitTooLarge):
        parse_junit(b"<testsuite>" + b" " * MAX_JUNIT_BYTES + b"</testsuite>")
    assert issubclass(JUnitTooLarge, JUnitError)


def test_a_long_failure_text_keeps_only_its_first_line() -> None:
    trace = "\n\n  first line of a long trace  \n" + "frame\n" * 100_000
    data = f'<testsuite><testcase name="n"><failure>{trace}<nested>x</nested>tail</failure></testcase></testsuite>'
    (case,) = parse_junit(data.encode())
    assert (case.outcome, case.message) == ("failed", "first line of a long trace")


def test_nested_testcases_keep_document_order_and_the_inner_results() -> None:
    inner = b'<testcase name="inner"><error message="e"/></testcase>'
    data = b'<testsuite><testcase name="outer">' + inner + b"</testcase></testsuite>"
    assert [(c.name, c.outcome) for c in parse_junit(data)] == [("outer", "error"), ("inner", "error")]


def test_100k_testcases_with_repeated_names_match_correctly() -> None:
    # 100 modules with the same 1,000 names: matching used to compare each id with every same-named case.
    cases = parse_junit(_report(100_000))
    assert len(cases) == 100_000
    ids = [f"tests/test_m{m}.py::test_{n}" for m in range(100) for n in range(0, 1000, 10)]
    ids += ["tests/test_m3.py::test_1000", "pkg/tests/test_m5.py::test_7", "tests.test_m7::test_9"]
    outcomes = outcomes_for(ids, cases)
    assert outcomes.pop("tests/test_m3.py::test_1000") == "missing"
    assert outcomes.pop("pkg/tests/test_m5.py::test_7") == "passed"  # a package prefix the report lacks
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 10_001


def test_100k_testcases_of_one_name_in_distinct_classes_stay_linear() -> None:
    # The hostile shape for suffix matching: every case has the same name, and the ids are all missing.
    cases = parse_junit(_report(100_000, hostile=True))
    ids = [f"other/test_x{i}.py::test" for i in range(10_000)] + [f"test_x{i}::test" for i in range(10_000)]
    assert set(outcomes_for(ids, cases).values()) == {"missing"}


def test_junit_names_spell_each_id_as_its_report_does_whatever_spelling_the_id_uses() -> None:
    cases = [
        TestCaseResult(classname="unit.test_units.AddTests", name="test_add_unit", outcome="passed"),
        TestCaseResult(classname="src.pkg.tests.test_m.TestX", name="test_y[1]", outcome="failed"),
        TestCaseResult(classname="tests.test_other", name="test_z", outcome="passed"),
    ]
    ids = ["unit.test_units.AddTests::test_add_unit", "pkg/tests/test_m.py::TestX::test_y[1]", "tests/test_gone.py::t"]
    assert junit_names(ids, cases) == [
        "unit.test_units.AddTests::test_add_unit",
        "src.pkg.tests.test_m.TestX::test_y[1]",
    ]
