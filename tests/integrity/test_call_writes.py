"""A write made during a test's call to what decides its verdict is noted, even one put back before the call ends.

Each attack below passes its test under plain pytest: pytest's ``raises``, ``approx``, unittest's assertions,
gradeflow's own compared-values probe or the builtins consulted as the test runs are swapped for lenient stand-ins
that put the originals back as they are called, so every check made after the call finds the originals. The
harness reads CPython's dict version counter as each call starts and those namespaces' version tags as it ends
(see ``_call_writes`` in the plugin). A builtin rebound through an alias of the builtins module
(``len.__self__``, ``sys.modules``, another module's ``__builtins__``) and put back in the next call is seen by the
check after each call; a swap made outside the call (a fixture's setup, a test module's import) that stays through
it, by the checks of values after each call and when collection ends, which take in every module that defines a
verdict helper. Honest runs that use pytest's and unittest's helpers in every way a test may (warnings, logs,
capture, subtests, fixtures asked for in the call, doctests) get no note.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from builders import make_task
from gradeflow.integrity.harness import Varied
from gradeflow.models import TaskSpec
from gradeflow.sandbox.local import LocalSandboxFactory
from gradeflow.tasks._testrun import run_test_command, start_harness
from integrity.plugin_run import install_plugin, read_record

LIBRARY = """
import builtins
import fractions
import numbers
import sys
import unittest

import pytest


def _swap(owner, name, make):
    # owner.name becomes make(original, put_back): a stand-in that puts the original back when it is called.
    missing = object()
    original = vars(owner).get(name, missing)

    def put_back():
        if original is missing:
            delattr(owner, name)
        else:
            setattr(owner, name, original)

    setattr(owner, name, make(original, put_back))


def raises():
    # What pytest.raises consults as its block exits: its module's ``fail`` and its class's ``matches`` (pytest
    # 8.4+), or ``issubclass`` and ``ExceptionInfo.match`` (earlier).
    kind = type(pytest.raises(ZeroDivisionError))
    home = sys.modules[kind.__module__]

    def quiet(original, put_back):
        def fail(*args, **kwargs):
            put_back()
        return fail

    def yes(answer):
        def make(original, put_back):
            def stand_in(*args, **kwargs):
                put_back()
                return answer
            return stand_in
        return make

    _swap(home, "fail", quiet)
    if "matches" in vars(kind):
        _swap(kind, "matches", yes(True))
    else:
        _swap(home, "issubclass", yes(True))
        _swap(home.ExceptionInfo, "match", yes(True))


def approx():
    # ApproxScalar.__eq__ asks its module's _as_numpy_array first: an "array" with no elements equals anything.
    home = sys.modules[type(pytest.approx(0)).__module__]

    class Empty:
        flat = ()

    def make(original, put_back):
        def stand_in(value):
            if value is not None:
                return original(value)
            put_back()
            return Empty()
        return stand_in

    _swap(home, "_as_numpy_array", make)


def assert_equal(owner=unittest.TestCase):
    def make(original, put_back):
        def stand_in(self, first, second):
            put_back()
            return lambda *args, **kwargs: None
        return stand_in

    _swap(owner, "_getAssertEqualityFunc", make)


def test_class():
    # The test's own class (looked up before TestCase) given an assertEqual that takes itself away when called.
    case = sys.modules["test_lib"].Case

    def make(original, put_back):
        def stand_in(self, *args, **kwargs):
            put_back()
        return stand_in

    _swap(case, "assertEqual", make)


def probe():
    # gradeflow's own compared-values probe, which hands back what an assert compares.
    rewrite = sys.modules["_pytest.assertion.rewrite"]

    def make(original, put_back):
        def stand_in(value, number):
            put_back()
            return 0 if value is None else value
        return stand_in

    _swap(rewrite, "_call_compared", make)


class _NoElements:
    flat = ()


def approx_armed():
    # Outside the call (a fixture's setup): approx's _as_numpy_array answers "no elements" for None until disarmed.
    home = sys.modules[type(pytest.approx(0)).__module__]
    original = home._as_numpy_array

    def stand_in(value):
        return _NoElements() if value is None else original(value)

    home._as_numpy_array = stand_in
    return lambda: setattr(home, "_as_numpy_array", original)


def quiet_assert_raises():
    # At import: assertRaises raises no failure, and "no exception" is not of the expected kind (passes through).
    case = sys.modules["unittest.case"]
    kind_of = issubclass
    case._AssertRaisesBaseContext._raiseFailure = lambda self, message: None
    case.issubclass = lambda value, kinds: False if value is None else kind_of(value, kinds)


def half():
    return fractions.Fraction(1, 2)


def _saying_yes(original, put_back):
    def stand_in(self, other):
        put_back()
        return True
    return stand_in


class _Later(numbers.Rational):
    # Written against the probe: asked whether its marker (a class of its own, named Nothing) is a Rational, as
    # Fraction's __eq__ asks when the probe looks whether a Fraction equals anything, this arms a stand-in for
    # Fraction's __eq__ once the probe has seen the original decide the comparison.
    @classmethod
    def __subclasshook__(cls, other):
        if cls is _Later and other.__name__ == "Nothing" and "__eq__" in vars(fractions.Fraction):
            _swap(fractions.Fraction, "__eq__", _saying_yes)
        return NotImplemented


def builtin(how):
    # ZeroDivisionError bound to another standard class, in the builtins module however reached.
    if how == "len-self":
        len.__self__.ZeroDivisionError = ArithmeticError
    elif how == "sys-modules":
        loaded = sys.modules
        setattr(loaded["built" + "ins"], "ZeroDivisionError", ArithmeticError)
    elif how == "vars":
        vars(fractions)["__builtins__"]["ZeroDivisionError"] = ArithmeticError
    return True


def divide():
    raise ArithmeticError("division by zero")


_zero = ZeroDivisionError


def put_back():
    builtins.ZeroDivisionError = _zero
    return True


def builtin_in_call():
    # The builtins' isinstance and issubclass made to say yes to ZeroDivisionError once, then put back.
    def make(original, put_back):
        def stand_in(value, kinds):
            if kinds is ZeroDivisionError or kinds == (ZeroDivisionError,):
                put_back()
                return True
            return original(value, kinds)
        return stand_in

    _swap(len.__self__, "isinstance", make)
    _swap(len.__self__, "issubclass", make)
    raise ArithmeticError("division by zero")
"""

TESTS = {
    "raises": """
import pytest
import lib


def test_attack():
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        lib.raises()
""",
    "approx": """
import pytest
import lib


def test_attack():
    assert lib.approx() == pytest.approx(0)
""",
    "assert-equal": """
import unittest
import lib


class Case(unittest.TestCase):
    def test_attack(self):
        self.assertEqual(lib.assert_equal(), 0)
""",
    "test-class": """
import unittest
import lib


class Case(unittest.TestCase):
    def test_attack(self):
        value = lib.test_class()
        self.assertEqual(value, 0)
""",
    "probe": """
import lib


def test_attack():
    assert lib.probe() == 0
""",
    "comparison-class": """
import lib


def test_attack():
    assert lib.half() == 1
""",
    "builtin-in-call": """
import pytest
import lib


def test_attack():
    with pytest.raises(ZeroDivisionError):
        lib.builtin_in_call()
""",
}
TESTS["setup"] = """
import pytest
import lib


@pytest.fixture
def armed():
    disarm = lib.approx_armed()
    yield
    disarm()


def test_attack(armed):
    assert None == pytest.approx(0)  # noqa: E711
"""
TESTS["import"] = """
import unittest
import lib

lib.quiet_assert_raises()


class Case(unittest.TestCase):
    def test_attack(self):
        with self.assertRaises(ZeroDivisionError):
            pass
"""
for how in ("len-self", "sys-modules", "vars"):
    TESTS[f"builtin-{how}"] = f"""
import pytest
import lib


def test_rebinds():
    assert lib.builtin({how!r})


def test_attack():
    with pytest.raises(ZeroDivisionError):
        lib.divide()


def test_after():
    assert lib.put_back()
"""

EXPECTED = {
    "raises": "_pytest.raises (written during a test's call)",
    "approx": "_pytest.approx (written during a test's call)",
    "assert-equal": "unittest.case.TestCase (written during a test's call)",
    "test-class": "test_lib.Case (written during a test's call)",
    "probe": "_pytest.assertion.rewrite (written during a test's call)",
    "comparison-class": "fractions.Fraction (written during a test's call)",
    "builtin-in-call": "builtins (written during a test's call)",
    "builtin-len-self": "builtins.ZeroDivisionError",
    "builtin-sys-modules": "builtins.ZeroDivisionError",
    "builtin-vars": "builtins.ZeroDivisionError",
    "setup": "_pytest.approx._as_numpy_array",
    "import": "unittest.case._AssertRaisesBaseContext._raiseFailure (added)",
}


def run(tmp_path: Path, tests: str, *arguments: str, library: str = LIBRARY) -> tuple[dict[str, Any], str]:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "lib.py").write_text(library)
    (root / "tests" / "test_lib.py").write_text(tests)
    plugin = install_plugin(tmp_path, root) if "--plain" not in arguments else []
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONDONTWRITEBYTECODE"))}
    env["PYTHONPATH"] = f"{tmp_path}:src"
    extra = [a for a in arguments if a != "--plain"]
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, *extra, "tests", "src"]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False)
    return (read_record(tmp_path) if plugin else {}), done.stdout + done.stderr


@pytest.mark.parametrize("attack", sorted(TESTS))
def test_the_attack_passes_under_plain_pytest(tmp_path: Path, attack: str) -> None:
    if attack in ("probe", "comparison-class"):
        pytest.skip("written against gradeflow's compared-values probe, which exists only under gradeflow")
    _record, output = run(tmp_path, TESTS[attack], "--plain")
    assert " passed" in output and "failed" not in output, output


@pytest.mark.parametrize("attack", sorted(TESTS))
def test_a_write_during_the_call_is_noted(tmp_path: Path, attack: str) -> None:
    record, output = run(tmp_path, TESTS[attack])
    assert EXPECTED[attack] in record["patched"], (record["patched"], output)
    assert record["call_writes"].startswith("version tags")


HONEST_LIBRARY = '''
"""A small library with a doctest.

>>> double(2)
4
>>> [double(x) for x in range(3)]
[0, 2, 4]
"""
import logging
import warnings
from fractions import Fraction


def double(x):
    return 2 * x


def old():
    warnings.warn("old", DeprecationWarning)
    return 1


def noisy():
    logging.getLogger("lib").warning("careful")
    return 2


def third():
    return Fraction(1, 3)
'''

HONEST_TESTS = """
import sys
import unittest
import warnings

import pytest

import lib


def test_raises():
    with pytest.raises(ZeroDivisionError, match="division"):
        1 / 0
    with pytest.raises((ValueError, KeyError)):
        {}["x"]
    with pytest.raises(pytest.fail.Exception):
        pytest.fail("boom")


def test_warns(recwarn):
    with pytest.warns(DeprecationWarning):
        lib.old()
    with pytest.deprecated_call():
        lib.old()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.old()
    assert caught
    lib.old()
    assert recwarn.pop(DeprecationWarning)


def test_approx():
    assert 0.1 + 0.2 == pytest.approx(0.3)
    assert [0.1 + 0.2, 1.0] == pytest.approx([0.3, 1.0])
    assert {"a": 0.1 + 0.2} == pytest.approx({"a": 0.3})
    assert lib.third() == pytest.approx(0.3333333, rel=1e-5)
    assert lib.third() * 3 == 1


def test_fixtures_in_the_call(caplog, capsys, monkeypatch, request):
    assert lib.noisy() == 2 and "careful" in caplog.text
    print("out")
    assert capsys.readouterr().out == "out\\n"
    with capsys.disabled():
        pass
    monkeypatch.setattr(lib, "double", lambda x: 3 * x)
    assert lib.double(2) == 6
    assert request.getfixturevalue("tmp_path").exists()


def test_outcomes():
    assert pytest.importorskip("json.tool")
    pytest.skip("not today")


def test_xfail():
    pytest.xfail("known")


def test_subtests(subtests):
    for i in range(3):
        with subtests.test(i=i):
            assert i < 3


def test_exception_info():
    try:
        raise ValueError
    except ValueError:
        assert sys.exc_info()[0] is ValueError


class TestUnittest(unittest.TestCase):
    seen = []

    def setUp(self):
        self.value = 2

    def test_asserts(self):
        self.assertEqual(lib.double(self.value), 4)
        self.assertAlmostEqual(0.1 + 0.2, 0.3)
        self.assertCountEqual([1, 2], [2, 1])
        self.assertMultiLineEqual("a\\nb", "a\\nb")
        with self.assertRaises(ZeroDivisionError):
            1 / 0
        with self.assertRaisesRegex(ValueError, "bad"):
            raise ValueError("bad")
        self.assertRaises(KeyError, {}.__getitem__, "x")
        self.seen.append(1)

    def test_logs_warnings_subtests(self):
        with self.assertLogs("lib", level="WARNING"):
            lib.noisy()
        with self.assertWarns(DeprecationWarning):
            lib.old()
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 3)
        self.addTypeEqualityFunc(complex, lambda a, b, msg=None: None)
        self.assertEqual(1j, 1j)

    def test_skip(self):
        self.skipTest("later")
"""


def test_honest_uses_of_the_helpers_get_no_note(tmp_path: Path) -> None:
    record, output = run(tmp_path, HONEST_TESTS, "--doctest-modules", library=HONEST_LIBRARY)
    assert " failed" not in output and " passed" in output, output
    assert record["patched"] == [], output


def test_a_write_during_a_varied_call_is_noted(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    (tree / "src").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "src" / "lib.py").write_text(LIBRARY)
    (tree / "tests" / "test_lib.py").write_text(TESTS["raises"])
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    ids = ["tests/test_lib.py::test_attack"]
    tests = {"command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}", "fail_to_pass": ids}
    task = TaskSpec.model_validate(make_task(tests=tests, env={"PYTHONPATH": "src"}))
    harness = start_harness(task, tree, None, None, select=ids, varied=Varied.drawn())
    assert harness is not None
    with LocalSandboxFactory().open(tree) as sandbox:
        evidence = run_test_command(task, sandbox, harness=harness, base=None)
    assert evidence.harness is not None, evidence.output_tail
    assert EXPECTED["raises"] in evidence.harness.patched, evidence.output_tail
