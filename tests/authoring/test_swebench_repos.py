"""gradeflow's table of SWE-bench's repositories and versions: coverage, validity, directives and commands."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from importlib import resources
from pathlib import Path

import pytest
from pydantic import ValidationError

from gradeflow.authoring.swebench_repos import (
    ROOT_PYTHON,
    TABLE_FILE,
    RepoVersion,
    command_for,
    directives,
    known,
    versions,
)
from gradeflow.errors import SpecError

# Every version SWE-bench's harness has a spec for (swebench/harness/constants/python.py): the harness
# cannot evaluate an instance without one, so these cover the full, Lite and Verified sets.
SWEBENCH_VERSIONS: dict[str, set[str]] = {
    "astropy/astropy": {"0.1", "0.2", "0.3", "0.4", "1.1", "1.2", "1.3", "3.0", "3.1", "3.2"}
    | {"4.1", "4.2", "4.3", "5.0", "5.1", "5.2", "v5.3"},
    "django/django": {"1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10", "1.11", "2.0", "2.1", "2.2"}
    | {"3.0", "3.1", "3.2", "4.0", "4.1", "4.2", "5.0", "5.1", "5.2"},
    "matplotlib/matplotlib": {"1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "2.0", "2.1", "2.2", "3.0"}
    | {"3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "3.8", "3.9"},
    "mwaskom/seaborn": {"0.11", "0.12", "0.13", "0.14"},
    "pallets/flask": {"2.0", "2.1", "2.2", "2.3", "3.0", "3.1"},
    "psf/requests": {"0.7", "0.8", "0.9", "0.11", "0.13", "0.14", "1.1", "1.2", "2.0", "2.2", "2.3", "2.4", "2.5"}
    | {"2.7", "2.8", "2.9", "2.10", "2.11", "2.12", "2.17", "2.18", "2.19", "2.22", "2.25", "2.26", "2.27"}
    | {"2.31", "3.0"},
    "pydata/xarray": {"0.12", "0.18", "0.19", "0.20", "2022.03", "2022.06", "2022.09", "2023.07", "2024.05"},
    "pylint-dev/pylint": {"2.8", "2.9", "2.10", "2.11", "2.13", "2.14", "2.15", "2.16", "2.17"}
    | {"3.0", "3.1", "3.2", "3.3", "4.0"},
    "pytest-dev/pytest": {"4.4", "4.5", "4.6", "5.0", "5.1", "5.2", "5.3", "5.4", "6.0", "6.2", "6.3", "7.0"}
    | {"7.1", "7.2", "7.4", "8.0", "8.1", "8.2", "8.3", "8.4"},
    "scikit-learn/scikit-learn": {"0.20", "0.21", "0.22", "1.3", "1.4", "1.5", "1.6"},
    "sphinx-doc/sphinx": {"1.5", "1.6", "1.7", "1.8", "2.0", "2.1", "2.2", "2.3", "2.4", "3.0", "3.1", "3.2"}
    | {"3.3", "3.4", "3.5", "4.0", "4.1", "4.2", "4.3", "4.4", "4.5", "5.0", "5.1", "5.2", "5.3", "6.0"}
    | {"6.2", "7.0", "7.1", "7.2", "7.3", "7.4", "8.0", "8.1"},
    "sympy/sympy": {"0.7", "1.0", "1.1", "1.2", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10", "1.11", "1.12"}
    | {"1.13", "1.14"},
}
# The versions the curated sets use (SWE-bench Lite and Verified), a sample checked on its own.
CURATED = [
    ("astropy/astropy", "1.3"),
    ("astropy/astropy", "4.3"),
    ("astropy/astropy", "5.2"),
    ("django/django", "3.0"),
    ("django/django", "4.2"),
    ("django/django", "5.0"),
    ("matplotlib/matplotlib", "3.5"),
    ("mwaskom/seaborn", "0.12"),
    ("pallets/flask", "2.3"),
    ("psf/requests", "2.26"),
    ("pydata/xarray", "2022.06"),
    ("pylint-dev/pylint", "2.15"),
    ("pytest-dev/pytest", "5.4"),
    ("scikit-learn/scikit-learn", "0.22"),
    ("sphinx-doc/sphinx", "3.5"),
    ("sympy/sympy", "1.12"),
]
ALL = [(repo, version) for repo, known_versions in SWEBENCH_VERSIONS.items() for version in sorted(known_versions)]

DJANGO_PATCH = """\
diff --git a/tests/admin_views/tests.py b/tests/admin_views/tests.py
index 1a2b3c4..5d6e7f8 100644
--- a/tests/admin_views/tests.py
+++ b/tests/admin_views/tests.py
@@ -10,4 +10,6 @@ class AdminViewBasicTest(TestCase):
     def test_add(self):
         pass
+    def test_add_with_gfk(self):
+        self.assertTrue(True)
     def test_change(self):
         pass
diff --git a/tests/migrations/test_squashed/0001_initial.py b/tests/migrations/test_squashed/0001_initial.py
new file mode 100644
index 0000000..a1b2c3d
--- /dev/null
+++ b/tests/migrations/test_squashed/0001_initial.py
@@ -0,0 +1,2 @@
+from django.db import migrations
+operations = []
diff --git a/tests/fixtures/fixtures/fixture1.json b/tests/fixtures/fixtures/fixture1.json
index 1111111..2222222 100644
--- a/tests/fixtures/fixtures/fixture1.json
+++ b/tests/fixtures/fixtures/fixture1.json
@@ -1 +1 @@
-[]
+[{"pk": 1}]
diff --git a/tests/old_app/tests.py b/tests/old_app/tests.py
deleted file mode 100644
index 3333333..0000000
--- a/tests/old_app/tests.py
+++ /dev/null
@@ -1,2 +0,0 @@
-def test_gone():
-    pass
"""

SKLEARN_PATCH = """\
diff --git a/sklearn/linear_model/tests/test_ridge.py b/sklearn/linear_model/tests/test_ridge.py
index 0a1b2c3..4d5e6f7 100644
--- a/sklearn/linear_model/tests/test_ridge.py
+++ b/sklearn/linear_model/tests/test_ridge.py
@@ -1,2 +1,4 @@
 import numpy as np
+def test_ridge_cv_store_cv_values():
+    assert np.ones(1).sum() == 1
 from sklearn.linear_model import Ridge
diff --git a/sklearn/tests/test_old_helpers.py b/sklearn/tests/test_helpers.py
similarity index 100%
rename from sklearn/tests/test_old_helpers.py
rename to sklearn/tests/test_helpers.py
diff --git a/sklearn/datasets/tests/data/openml/1/data.txt b/sklearn/datasets/tests/data/openml/1/data.txt
new file mode 100644
index 0000000..1234567
--- /dev/null
+++ b/sklearn/datasets/tests/data/openml/1/data.txt
@@ -0,0 +1 @@
+1,2,3
diff --git a/sklearn/utils/tests/test_retired.py b/sklearn/utils/tests/test_retired.py
deleted file mode 100644
index 7654321..0000000
--- a/sklearn/utils/tests/test_retired.py
+++ /dev/null
@@ -1 +0,0 @@
-x = 1
"""

SYMPY_PATCH = """\
diff --git a/sympy/core/tests/test_basic.py b/sympy/core/tests/test_basic.py
index 1234567..89abcde 100644
--- a/sympy/core/tests/test_basic.py
+++ b/sympy/core/tests/test_basic.py
@@ -1,2 +1,3 @@
 from sympy import Symbol
+from sympy import S
 x = Symbol("x")
"""

SPHINX_PATCH = """\
diff --git a/tests/roots/test-ext-autodoc/target/typehints.py b/tests/roots/test-ext-autodoc/target/typehints.py
index 1111111..2222222 100644
--- a/tests/roots/test-ext-autodoc/target/typehints.py
+++ b/tests/roots/test-ext-autodoc/target/typehints.py
@@ -1 +1,2 @@
 def incr(a: int, b: int = 1) -> int: ...
+def decr(a: int, b: int = 1) -> int: ...
diff --git a/tests/test_ext_autodoc_configs.py b/tests/test_ext_autodoc_configs.py
index 3333333..4444444 100644
--- a/tests/test_ext_autodoc_configs.py
+++ b/tests/test_ext_autodoc_configs.py
@@ -1 +1,2 @@
 import pytest
+import sys
"""

ODD_NAME_PATCH = """\
diff --git a/testing/test it's $HOME.py b/testing/test it's $HOME.py
new file mode 100644
index 0000000..1111111
--- /dev/null
+++ b/testing/test it's $HOME.py
@@ -0,0 +1 @@
+def test_a(): pass
"""


def _entry(repo: str, version: str) -> RepoVersion:
    entry = known(repo, version)
    assert entry is not None, f"{repo} {version} is not in the table"
    return entry


@pytest.mark.parametrize("repo", sorted(SWEBENCH_VERSIONS))
def test_every_swebench_version_of_every_repository_is_known(repo: str) -> None:
    assert set(versions(repo)) == SWEBENCH_VERSIONS[repo]
    assert all(known(repo, version) is not None for version in SWEBENCH_VERSIONS[repo])


@pytest.mark.parametrize(("repo", "version"), CURATED)
def test_the_versions_of_lite_and_verified_are_known(repo: str, version: str) -> None:
    assert known(repo, version) is not None


def test_an_unknown_repository_or_version_is_none() -> None:
    assert known("django/django", "9.9") is None
    assert known("octo/cat", "1.0") is None
    assert versions("octo/cat") == []


@pytest.mark.parametrize(("repo", "version"), ALL)
def test_every_entry_validates_and_runs_on_an_available_root(repo: str, version: str) -> None:
    entry = _entry(repo, version)
    assert RepoVersion.model_validate(entry.model_dump()) == entry
    assert entry.root in {"debian:bullseye", "debian:bookworm", "debian:trixie"}
    assert entry.shared_setup.startswith(
        "python -m pip install 'pip==24.0' && python -m pip config --site set global.cert "
        "/etc/ssl/certs/ca-certificates.crt"
    )
    # The environment's part installs packages only; the instance's installs the repository, editable.
    assert "-e " not in entry.shared_setup and "sed " not in entry.shared_setup
    assert "pip install" in entry.setup and "-e " in entry.setup
    assert ("{junit}" in entry.test_command) == (entry.report == "junit")
    assert {"build-essential", "python3-dev", "git"} <= set(entry.packages)


@pytest.mark.parametrize(("repo", "version"), ALL)
def test_a_root_with_swebenchs_python_is_the_one_taken(repo: str, version: str) -> None:
    entry = _entry(repo, version)
    exact = [root for root, python in ROOT_PYTHON.items() if python == entry.python]
    if exact:
        assert entry.root == exact[0] and entry.python_note is None
    else:
        assert entry.python_note


def test_pytest_based_repositories_write_junit_with_swebenchs_flags() -> None:
    for repo in SWEBENCH_VERSIONS.keys() - {"django/django", "sympy/sympy"}:
        for version in versions(repo):
            command = _entry(repo, version).test_command
            assert "-rA" in command and "--junitxml={junit}" in command and "-p no:cacheprovider" in command


def test_the_shared_part_ends_where_the_repository_is_installed_or_edited() -> None:
    django = _entry("django/django", "3.2")
    assert django.setup == "pip install -e ."
    assert "pip install -r tests/requirements/py3.txt" in django.shared_setup
    assert django.shared_inputs == ["tests/requirements/py3.txt"]
    pytest_63 = _entry("pytest-dev/pytest", "6.3")  # its tree edit is the instance's: the shared build has no tree
    assert pytest_63.setup == "sed -i 's/>=>=/>=/' setup.cfg && python -m pip install -e ."
    assert "pluggy==0.13.1" in pytest_63.shared_setup and pytest_63.shared_inputs == []
    matplotlib = _entry("matplotlib/matplotlib", "3.5")
    assert matplotlib.shared_inputs == ["requirements/testing/all.txt", "requirements/testing/travis_all.txt"]


def test_the_model_refuses_an_inconsistent_entry() -> None:
    fields = {
        "shared_setup": "pip install pytest",
        "python": "3.9",
        "root": "debian:bullseye",
        "setup": "pip install -e .",
        "test_command": "pytest -rA --junitxml={junit}",
        "report": "junit",
        "directives": "paths",
    }
    RepoVersion.model_validate(fields)
    with pytest.raises(ValidationError, match="junit"):
        RepoVersion.model_validate(fields | {"test_command": "pytest -rA"})
    with pytest.raises(ValidationError, match="say why"):
        RepoVersion.model_validate(fields | {"python": "3.10"})
    with pytest.raises(ValidationError, match="python_note"):
        RepoVersion.model_validate(fields | {"python_note": "why not"})
    with pytest.raises(ValidationError):
        RepoVersion.model_validate(fields | {"root": "debian:buster"})


def test_swebench_version_fills_the_pretended_release() -> None:
    assert _entry("astropy/astropy", "v5.3").env["SETUPTOOLS_SCM_PRETEND_VERSION"] == "5.3.0"
    assert _entry("pytest-dev/pytest", "7.4").env["SETUPTOOLS_SCM_PRETEND_VERSION"] == "7.4.0"
    assert _entry("sympy/sympy", "1.12").env == {"PYTHONWARNINGS": "ignore::UserWarning,ignore::SyntaxWarning"}


def test_django_labels_drop_tests_and_py_and_skip_deleted_and_data_files() -> None:
    entry = _entry("django/django", "3.2")
    assert entry.directives == "django-labels"
    assert directives(entry, DJANGO_PATCH) == ["admin_views.tests", "migrations.test_squashed.0001_initial"]


def test_pytest_paths_keep_changed_and_renamed_test_files_only() -> None:
    entry = _entry("scikit-learn/scikit-learn", "0.22")
    assert directives(entry, SKLEARN_PATCH) == [
        "sklearn/linear_model/tests/test_ridge.py",
        "sklearn/tests/test_helpers.py",
    ]


def test_a_patch_that_is_not_a_diff_is_a_spec_error() -> None:
    broken = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n-a\n+b\n"
    with pytest.raises(SpecError, match="not a unified diff"):
        directives(_entry("psf/requests", "2.26"), broken)


@pytest.mark.parametrize(
    ("repo", "version", "patch", "expected"),
    [
        (
            "scikit-learn/scikit-learn",
            "1.3",
            SKLEARN_PATCH,
            "pytest -rA --junitxml={junit} -p no:cacheprovider sklearn/linear_model/tests/test_ridge.py "
            "sklearn/tests/test_helpers.py",
        ),
        (
            "astropy/astropy",
            "1.3",
            SKLEARN_PATCH,
            "pytest -rA -vv -o console_output_style=classic --tb=no --junitxml={junit} -p no:cacheprovider "
            "sklearn/linear_model/tests/test_ridge.py sklearn/tests/test_helpers.py",
        ),
        (
            "django/django",
            "4.0",
            DJANGO_PATCH,
            "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 admin_views.tests "
            "migrations.test_squashed.0001_initial",
        ),
        (
            "django/django",
            "1.9",
            DJANGO_PATCH.split("diff --git a/tests/migrations")[0],
            "./tests/runtests.py --verbosity 2 admin_views.tests",
        ),
        ("sympy/sympy", "1.11", SYMPY_PATCH, "bin/test -C --verbose sympy/core/tests/test_basic.py"),
        (
            "sphinx-doc/sphinx",
            "3.5",
            SPHINX_PATCH,
            "tox --current-env -epy39 -v -- -rA --junitxml={junit} -p no:cacheprovider "
            "tests/roots/test-ext-autodoc/target/typehints.py tests/test_ext_autodoc_configs.py",
        ),
        (
            "sphinx-doc/sphinx",
            "8.1",
            SPHINX_PATCH,
            "tox --current-env -epy311 -v -- -rA --junitxml={junit} -p no:cacheprovider "
            "tests/roots/test-ext-autodoc/target/typehints.py tests/test_ext_autodoc_configs.py",
        ),
        (
            "pytest-dev/pytest",
            "8.4",
            ODD_NAME_PATCH,
            "pytest -rA --junitxml={junit} -p no:cacheprovider 'testing/test it'\"'\"'s $HOME.py'",
        ),
    ],
)
def test_command_for_one_instance_per_family(repo: str, version: str, patch: str, expected: str) -> None:
    assert command_for(_entry(repo, version), patch) == expected


def test_a_patch_without_test_files_leaves_the_bare_command() -> None:
    entry = _entry("pallets/flask", "2.3")
    assert command_for(entry, "") == entry.test_command


def test_the_table_is_read_as_package_data_of_gradeflow_authoring() -> None:
    assert resources.files("gradeflow.authoring").joinpath(TABLE_FILE).is_file()
    assert known("django/django", "4.2") is not None


def test_pyproject_ships_the_table_in_the_wheel() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["setuptools"]["package-data"]["gradeflow"]
    assert any(fnmatch(f"authoring/{TABLE_FILE}", pattern) for pattern in shipped), (
        "pyproject.toml's [tool.setuptools.package-data] must ship authoring/*.yaml"
    )
