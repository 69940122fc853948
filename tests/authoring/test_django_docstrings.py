"""SWE-bench's docstring-line names of Django tests, mapped to test ids by reading the test modules."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gradeflow.authoring.django_docstrings import (
    DocstringTests,
    docstring_tests,
    label_modules,
    read_docstring_tests,
)
from gradeflow.authoring.patches import applied_tree, split_diff

VIEWS = '''
import unittest

from django.test import SimpleTestCase, TestCase

from .base import BaseViewTests


class ViewMixin:
    def test_from_mixin(self):
        """A mixin's test, run by each test case that mixes it in."""


class PageTests(ViewMixin, SimpleTestCase):
    def test_plain(self):
        pass

    def test_page(self):
        """
        The page renders.

        With more after the first line.
        """

    def test_blank(self):
        """   """

    def helper(self):
        """Not a test: no test prefix."""

    async def test_async(self):
        """An async test."""

    def test_same_a(self):
        """Shared line."""

    def test_same_b(self):
        """Shared line."""


class FeedTests(ViewMixin, unittest.TestCase):
    def test_overridden(self):
        pass


class Inherits(BaseViewTests):
    def test_own(self):
        """Own line of a class whose base comes from another module."""


class NotATestCase:
    def test_never(self):
        """A class with no TestCase among its bases."""


def test_function():
    """A module-level function: not unittest's."""
'''
BASE = '''
from django.test import TestCase


class BaseViewTests(TestCase):
    def test_base(self):
        """Defined in the base module, run under each subclass."""

    def test_overridden(self):
        """Hidden where a subclass overrides it without a docstring."""
'''


def _tests(sources: dict[str, str], modules: list[str]) -> DocstringTests:
    return docstring_tests(modules, sources.get)


def test_a_docstring_line_maps_to_the_one_test_it_describes() -> None:
    found = _tests({"views.tests": VIEWS, "views.base": BASE}, ["views.tests"])
    assert found.tests_of("The page renders.") == ("views.tests.PageTests::test_page",)
    assert found.tests_of("An async test.") == ("views.tests.PageTests::test_async",)
    assert found.tests_of("Own line of a class whose base comes from another module.") == (
        "views.tests.Inherits::test_own",
    )
    # Inherited from a base read from the module it is imported from: the subclass's id, as unittest prints it.
    assert found.tests_of("Defined in the base module, run under each subclass.") == (
        "views.tests.Inherits::test_base",
    )
    for never in (
        "With more after the first line.",  # not the first line
        "Not a test: no test prefix.",
        "A class with no TestCase among its bases.",
        "A module-level function: not unittest's.",
        "",  # a blank docstring prints no line
    ):
        assert found.tests_of(never) == (), never
    assert set(found.by_line) == {
        "The page renders.",
        "An async test.",
        "Shared line.",
        "A mixin's test, run by each test case that mixes it in.",
        "Own line of a class whose base comes from another module.",
        "Defined in the base module, run under each subclass.",
        "Hidden where a subclass overrides it without a docstring.",  # Inherits does not override it
    }


def test_an_override_without_a_docstring_hides_its_bases_line() -> None:
    base = (
        BASE
        + """

class Child(BaseViewTests):
    def test_overridden(self):
        pass
"""
    )
    found = _tests({"views.base": base}, ["views.base"])
    assert found.by_line["Hidden where a subclass overrides it without a docstring."] == (
        "views.base.BaseViewTests::test_overridden",
    )


def test_a_line_of_several_tests_names_them_all_and_a_line_of_none_says_what_was_read() -> None:
    found = _tests({"views.tests": VIEWS, "views.base": BASE}, ["views.tests"])
    assert found.tests_of("Shared line.") == (
        "views.tests.PageTests::test_same_a",
        "views.tests.PageTests::test_same_b",
    )
    mixin = "A mixin's test, run by each test case that mixes it in."
    assert found.tests_of(mixin) == ("views.tests.PageTests::test_from_mixin", "views.tests.FeedTests::test_from_mixin")
    assert found.tests_of("Regression for #1") == ()
    assert found.why_unknown() == "not the docstring line of any test in the test labels' modules (views.tests)"
    assert "no module" in _tests({}, []).why_unknown()


def test_bases_are_found_where_python_finds_them() -> None:
    package = {
        "app.tests": "from app import helpers\nfrom . import base as b\n\n"
        "class A(helpers.Base):\n    def test_a(self):\n        '''Line a.'''\n\n"
        "class B(b.Base):\n    def test_b(self):\n        '''Line b.'''\n\n"
        "class C(Missing):\n    def test_c(self):\n        '''Line c.'''\n",
        "app.helpers": "from .base import Base\n",  # a re-export
        "app.base": "import unittest\n\nclass Base(unittest.TestCase):\n    pass\n",
        "app.__init__": "",
    }
    found = _tests(package, ["app.tests"])
    assert (found.tests_of("Line a."), found.tests_of("Line b.")) == (
        ("app.tests.A::test_a",),
        ("app.tests.B::test_b",),
    )
    assert found.tests_of("Line c.") == ()  # a base nobody defines: not known to be a test case


def test_a_module_that_does_not_parse_gives_no_tests() -> None:
    found = _tests({"m.tests": "class T(TestCase):\n    def test_x(self)\n"}, ["m.tests"])
    assert found.by_line == {} and found.modules == ("m.tests",)


def test_labels_name_modules_or_packages_whose_test_files_django_discovers() -> None:
    files = [
        "tests/admin_views/tests.py",
        "tests/forms_tests/__init__.py",
        "tests/forms_tests/widget_tests/__init__.py",
        "tests/forms_tests/widget_tests/test_select.py",
        "tests/forms_tests/widget_tests/base.py",
        "tests/forms_tests/tests/test_forms.py",
        "tests/forms_tests/tests/deep/test_deep.py",
        "django/test/testcases.py",
    ]
    assert label_modules(["admin_views.tests", "forms_tests.widget_tests.test_select"], files) == {
        "tests/admin_views/tests.py": "admin_views.tests",
        "tests/forms_tests/widget_tests/test_select.py": "forms_tests.widget_tests.test_select",
    }
    assert label_modules(["forms_tests"], files) == {
        "tests/forms_tests/tests/deep/test_deep.py": "forms_tests.tests.deep.test_deep",
        "tests/forms_tests/tests/test_forms.py": "forms_tests.tests.test_forms",
        "tests/forms_tests/widget_tests/test_select.py": "forms_tests.widget_tests.test_select",
    }
    assert label_modules(["nowhere.tests"], files) == {}


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    env |= {"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def test_the_tests_are_read_from_the_base_with_the_test_patch_applied(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tests" / "views" / "nested").mkdir(parents=True)
    (repo / "tests" / "views" / "__init__.py").write_text("")
    (repo / "tests" / "views" / "base.py").write_text(BASE)  # read from the base: the patch does not touch it
    (repo / "tests" / "views" / "tests.py").write_text(VIEWS)
    (repo / "tests" / "views" / "nested" / "test_old.py").write_text(
        "from django.test import TestCase\n\nclass T(TestCase):\n    def test_old(self):\n        '''Old line.'''\n"
    )
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    with (repo / "tests" / "views" / "tests.py").open("a") as handle:
        handle.write(
            "\n\nclass Added(SimpleTestCase):\n    def test_new(self):\n        '''The test patch's line.'''\n"
        )
    (repo / "tests" / "views" / "nested" / "test_old.py").unlink()
    (repo / "tests" / "views" / "nested" / "test_new.py").write_text(
        "from ..base import BaseViewTests\n\nclass N(BaseViewTests):\n    def test_n(self):\n        '''New line.'''\n"
    )
    _git(repo, "add", "-A")
    patch = _git(repo, "diff", "--cached", base)
    with applied_tree(repo, base, patch, "the test patch", only_patched=True) as tree:
        found = read_docstring_tests(tree, ["views.tests", "views.nested"], split_diff(patch))
    assert found.modules == ("views.tests", "views.nested.test_new")
    assert found.tests_of("The test patch's line.") == ("views.tests.Added::test_new",)
    assert found.tests_of("New line.") == ("views.nested.test_new.N::test_n",)  # a package label, a relative base
    assert found.by_line["Defined in the base module, run under each subclass."] == (
        "views.tests.Inherits::test_base",
        "views.nested.test_new.N::test_base",
    )
    assert found.tests_of("Old line.") == ()  # the test patch deleted its module
