"""Test ids read the way pytest reads them: one row per id form found in the wild."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gradeflow.models.testids import file_of_test_id, is_doctest_id, split_test_id
from gradeflow.tasks._junit import outcomes_for, parse_junit

# (id, the test file it names, is it a doctest)
IDS = [
    ("tests/test_calc.py::test_add", "tests/test_calc.py", False),
    ("tests/test_calc.py::TestMultiply::test_multiply", "tests/test_calc.py", False),
    ("tests/test_deep.py::A::B::C::D::test_x", "tests/test_deep.py", False),  # nested classes four deep
    ("tests/test_u.py::CalcCase::test_divide", "tests/test_u.py", False),  # unittest
    ("tests/test_p.py::test_add[1-2-3]", "tests/test_p.py", False),
    ("tests/test_p.py::test_url[http://[::1]:80/x]", "tests/test_p.py", False),  # '::' and ']' in params
    ("tests/test_p.py::test_odd[a]::b]", "tests/test_p.py", False),  # ']' before '::' inside the brackets
    ("tests/test_p.py::test_emoji[🎉-ünï]", "tests/test_p.py", False),
    ("tests/test_p.py::test_dotted[1.5-x.y]", "tests/test_p.py", False),  # dots inside params only
    ("test_version.py::test_version", "test_version.py", False),  # a test named like its file
    ("src/pkg/mod.py::pkg.mod.func", None, True),  # doctest of a function (src layout)
    ("pkg/mod.py::pkg.mod", None, True),  # doctest of a module docstring
    ("mod.py::mod", None, True),  # the same at the root
    ("pkg/mod.py::pkg.mod.Class.method", None, True),
    ("docs/versions.rst::versions.rst", None, True),  # text-file doctest in a subfolder
    ("README.md::README.md", None, True),
    ("tests.test_calc.TestMultiply::test_multiply", None, False),  # JUnit spelling
    ("src/calc.test.js::divide > by zero", None, False),  # another runner's id
    ("../escape.py::test_x", None, False),
]


@pytest.mark.parametrize(("test_id", "file", "doctest"), IDS, ids=[row[0] for row in IDS])
def test_each_id_form(test_id: str, file: str | None, doctest: bool) -> None:
    assert file_of_test_id(test_id) == file
    assert is_doctest_id(test_id) is doctest


@pytest.mark.parametrize(
    ("test_id", "parts"),
    [
        ("a.py::T::t[x::y]", ["a.py", "T", "t[x::y]"]),
        ("a.py::t[a]::b]", ["a.py", "t[a]::b]"]),
        ("a.py::t[[x]", ["a.py", "t[[x]"]),
        ("a.py::T::t", ["a.py", "T", "t"]),
    ],
)
def test_ids_split_at_the_first_bracket_like_pytest(test_id: str, parts: list[str]) -> None:
    assert split_test_id(test_id) == parts


def test_real_pytest_doctests_match_in_both_forms(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(
        'def double(x):\n    """\n    >>> double(2)\n    4\n    """\n    return 2 * x\n'
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.rst").write_text(">>> 1 + 1\n3\n")
    (tmp_path / "test_params.py").write_text(
        "import pytest\n@pytest.mark.parametrize('v', ['a]::b', 'x'])\ndef test_p(v):\n    assert v != 'x'\n"
    )
    report = tmp_path / "junit.xml"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--doctest-modules",
            "--doctest-glob=*.rst",
            f"--junitxml={report}",
            "pkg",
            "docs",
            "test_params.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    cases = parse_junit(report.read_bytes())
    ids = [
        "pkg/mod.py::pkg.mod.double",
        "docs/guide.rst::guide.rst",
        "docs.guide.rst::guide.rst",
        "test_params.py::test_p[a]::b]",
        "test_params.py::test_p[x]",
    ]
    assert outcomes_for(ids, cases) == dict(zip(ids, ["passed", "failed", "failed", "passed", "failed"], strict=True))


def test_validate_warns_about_fail_to_pass_doctests() -> None:
    from builders import make_task
    from gradeflow.flows.validate import doctest_warnings
    from gradeflow.models import TaskSpec

    tests = {"command": "pytest --junitxml={junit}", "fail_to_pass": ["pkg/mod.py::pkg.mod.f", "tests/test_a.py::t"]}
    warnings = doctest_warnings(TaskSpec.model_validate(make_task(tests=tests)))
    assert len(warnings) == 1 and warnings[0].startswith("fail_to_pass pkg/mod.py::pkg.mod.f is a doctest")
