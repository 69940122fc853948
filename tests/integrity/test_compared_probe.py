"""The harness's compared-values probe, in a real pytest run: what each assertion compared, and where its
equality comes from, with pytest's failure messages unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from integrity.plugin_run import install_plugin, read_record

LIBRARY = """
import dataclasses
import fractions
import functools
import operator


class Anything:
    def __eq__(self, other):
        return True

    __hash__ = None


# a class object whose metaclass, made by type() under a borrowed name, equals anything
Blank = type("ABCMeta", (type,), {"__eq__": lambda cls, other: True, "__hash__": type.__hash__, "__module__": "abc"})(
    "Blank", (), {"__module__": "builtins"}
)
# a class that says it is the standard library's Fraction, its __eq__ no function of the repository
Borrowed = type("Fraction", (int,), {"__eq__": functools.partialmethod(operator.is_not), "__hash__": int.__hash__,
                                     "__module__": "fractions"})


class Yes:
    def __bool__(self):
        return True


@dataclasses.dataclass
class Point:
    x: int


def value(kind):
    return {"int": 0, "anything": Anything(), "blank": Blank, "borrowed": Borrowed(5), "yes": Yes(),
            "point": Point(0), "fraction": fractions.Fraction(0), "none": None}[kind]
"""

TESTS = """
import unittest

from lib import Point, value


def test_int():
    assert value("int") == 0


def test_anything():
    assert value("anything") == 0


def test_reflected():
    assert 0 == value("blank")


def test_borrowed():
    assert value("borrowed") == 1


def test_fraction():
    assert value("fraction") == 0


def test_point():
    assert value("point") == Point(0)


def test_bare():
    assert value("yes")


def test_in():
    assert 3 in [value("anything")]


def test_generator():
    assert all(value("anything") == n for n in (1, 2))


def test_fails():
    assert value("none") == 0


class Case(unittest.TestCase):
    def test_assert_equal(self):
        self.assertEqual(value("anything"), 7)


def test_multiline():
    assert all(
        value("anything") == n
        for n in (1, 2)
    )


def test_one_nested():
    assert any([value("anything") == 1])


class Truth(unittest.TestCase):
    def test_assert_true(self):
        self.assertTrue(value("anything") == 7)


def test_container():
    assert [1, [value("anything")]] == [1, [2]]
"""


def _run(
    tmp_path: Path, harnessed: bool, root: Path | None = None, bytecode: bool = False
) -> tuple[str, dict[str, dict[str, str]]]:
    if root is None:
        root = tmp_path / ("harnessed" if harnessed else "plain")
        (root / "src").mkdir(parents=True)
        (root / "tests").mkdir()
        (root / "src" / "lib.py").write_text(LIBRARY)
        (root / "tests" / "test_values.py").write_text(TESTS)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
    env = {**os.environ, "PYTHONPATH": "src"}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    if harnessed:
        command += install_plugin(tmp_path, root)
        env["PYTHONPATH"] = f"{tmp_path}:src"
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False)
    if not harnessed:
        return done.stdout, {}
    record = read_record(tmp_path)
    prefix = f"{root}/tests/test_values.py:"
    compared = {
        nodeid.rpartition("::")[2]: {place.removeprefix(prefix): found for place, found in entries.items()}
        for nodeid, entries in record["compared"].items()
    }
    return done.stdout, compared


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, dict[str, dict[str, str]]]:
    plain, _ = _run(tmp_path_factory.mktemp("plain"), harnessed=False)
    output, compared = _run(tmp_path_factory.mktemp("harnessed"), harnessed=True)
    return plain, output, compared


@pytest.mark.parametrize(
    ("test", "place", "found"),
    [
        ("test_int", "8:0:__eq__", "e int"),
        ("test_anything", "12:0:__eq__", "r Anything (Anything.__eq__)"),
        ("test_reflected", "16:1:__eq__", "r ABCMeta (ABCMeta.__eq__)"),
        ("test_borrowed", "20:0:__eq__", "r Fraction (Fraction.__eq__)"),
        ("test_fraction", "24:0:__eq__", "e Fraction"),
        ("test_point", "28:0:__eq__", "r Point (Point.__eq__)"),
        ("test_bare", "32:0:__bool__/__len__", "r Yes (Yes.__bool__)"),
        ("test_in", "36:1:__contains__/__eq__", "r list of Anything (Anything.__eq__)"),  # its elements decide
        ("test_generator", "40:0:__eq__", "r Anything (Anything.__eq__)"),
        ("test_fails", "44:0:__eq__", "e NoneType"),
        ("test_assert_equal", "49:0:__eq__", "r Anything (Anything.__eq__)"),
        # an assert's text is counted for comparison operators whole, over all its lines
        ("test_multiline", "54:0:__eq__", "r Anything (Anything.__eq__)"),
        # one operator, not the assert's own comparison: still looked for
        ("test_one_nested", "60:0:__eq__", "r Anything (Anything.__eq__)"),
        # a comparison handed to a unittest assertion: its operands, not only its truth
        ("test_assert_true", "65:0:__eq__", "r Anything (Anything.__eq__)"),
        # a built-in container compares its elements by their own rules, nested ones too
        ("test_container", "69:0:__eq__", "r list of Anything (Anything.__eq__)"),
        ("test_container", "69:1:__eq__", "e list"),
    ],
)
def test_each_compared_value_is_traced_to_where_its_equality_is_defined(
    runs: tuple[str, str, dict[str, dict[str, str]]], test: str, place: str, found: str
) -> None:
    _plain, _output, compared = runs
    assert compared[test][place] == found


def test_a_literal_side_is_not_probed(runs: tuple[str, str, dict[str, dict[str, str]]]) -> None:
    # ``== 0`` and ``0 ==``: a literal's type is built-in in every run; the other side is probed as ever.
    _plain, _output, compared = runs
    assert sorted(compared["test_int"]) == ["8:0:__eq__"]
    assert sorted(compared["test_reflected"]) == ["16:1:__eq__"]
    assert sorted(compared["test_point"]) == ["28:0:__eq__", "28:1:__eq__"]  # Point(0) is no literal


def test_failure_messages_and_outcomes_are_pytests_own(runs: tuple[str, str, dict[str, dict[str, str]]]) -> None:
    plain, output, _compared = runs
    assert [line for line in output.splitlines() if line.startswith(("E ", ">"))] == [
        line for line in plain.splitlines() if line.startswith(("E ", ">"))
    ]
    assert "assert None == 0" in output and "where None = value('none')" in output  # pytest's explanation
    assert output.splitlines()[-1].split(" in ")[0] == plain.splitlines()[-1].split(" in ")[0] == "1 failed, 14 passed"


def _rewrite_cache(root: Path) -> list[str]:
    return sorted(path.name for path in root.rglob("*-pytest-*.pyc"))


def test_probed_code_never_reaches_pytests_rewrite_cache(tmp_path: Path) -> None:
    # A harnessed run with bytecode writing on leaves no rewritten module behind: a later plain pytest (here, or
    # of an installed package's pytest plugin in a shared environment) would otherwise run code that calls a
    # probe only the harness defines, and fail with an AttributeError.
    _output, compared = _run(tmp_path / "first", harnessed=True, bytecode=True)
    root = tmp_path / "first" / "harnessed"
    assert compared["test_anything"]["12:0:__eq__"] == "r Anything (Anything.__eq__)"
    assert _rewrite_cache(root) == []
    plain, _ = _run(tmp_path / "first", harnessed=False, root=root, bytecode=True)
    assert plain.splitlines()[-1].split(" in ")[0] == "1 failed, 14 passed", plain


def test_a_rewrite_cache_made_by_a_plain_run_is_not_read(tmp_path: Path) -> None:
    # The other way round: a plain run caches its rewritten test module; the harness compiles from source (a
    # cached module, or one planted by the candidate, would run unprobed).
    plain, _ = _run(tmp_path / "first", harnessed=False, bytecode=True)
    root = tmp_path / "first" / "plain"
    assert _rewrite_cache(root), plain
    _output, compared = _run(tmp_path / "first", harnessed=True, root=root, bytecode=True)
    assert compared["test_anything"]["12:0:__eq__"] == "r Anything (Anything.__eq__)"
