"""Sealing a run's tree: test configuration, code loaders and test folders are the base's."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import make_task
from gradeflow.integrity import sealing
from gradeflow.integrity.files import list_files
from gradeflow.integrity.sealing import folders_to_seal, infrastructure_edits, kept_test_edits, seal_acceptance_tree
from gradeflow.integrity.sections import sections_differ, splice_sections
from gradeflow.models import ChangedFile, TaskSpec

PYPROJECT = """[project]
name = "calc"
dependencies = []

[tool.pytest.ini_options]
testpaths = ["tests"]

[tool.ruff]
line-length = 100
"""


def _task(**tests: object) -> TaskSpec:
    spec = make_task()
    spec["tests"] = {**spec["tests"], "fail_to_pass": ["tests/test_calc.py::test_div"], **tests}
    return TaskSpec.model_validate(spec)


def _trees(tmp_path: Path, base: dict[str, str], patch: dict[str, str | None]) -> tuple[Path, Path, list[ChangedFile]]:
    """A pristine tree and a candidate tree (the base with ``patch`` applied: ``None`` deletes)."""
    pristine, tree = tmp_path / "base", tmp_path / "tree"
    for root, files in ((pristine, base), (tree, {**base, **patch})):
        for path, text in files.items():
            if text is None:
                continue
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
    changes = [
        ChangedFile(path=p, status="removed" if t is None else "modified" if p in base else "added")
        for p, t in patch.items()
    ]
    return pristine, tree, changes


BASE = {
    "src/calc.py": "def div(a, b):\n    return a / b\n",
    "tests/test_calc.py": "from helpers import one\n\ndef test_div():\n    assert one() == 1\n",
    "tests/helpers.py": "def one():\n    return 1\n",
    "pyproject.toml": PYPROJECT,
    "setup.cfg": "[metadata]\nname = calc\n\n[tool:pytest]\naddopts = -q\n",
    "tox.ini": "[tox]\nenvlist = py311\n",
}


@pytest.mark.parametrize(
    ("path", "text", "expected"),
    [
        ("pytest.ini", "[pytest]\naddopts = -p evil\n", [("pytest.ini", "file")]),
        (".pytest.ini", "[pytest]\n", [(".pytest.ini", "file")]),
        ("pytest.toml", "[pytest]\n", [("pytest.toml", "file")]),
        ("tests/pytest.ini", "[pytest]\n", [("tests/pytest.ini", "file")]),
        (
            "src/evil-1.0.dist-info/entry_points.txt",
            "[pytest11]\nx = evil\n",
            [("src/evil-1.0.dist-info/entry_points.txt", "file")],
        ),
        ("evil.egg-info/entry_points.txt", "[pytest11]\nx = evil\n", [("evil.egg-info/entry_points.txt", "file")]),
        ("src/evil.pth", "import evil\n", [("src/evil.pth", "file")]),
        # Python finds metadata folders and .pth files whatever their case.
        (
            "src/Evil.DIST-INFO/entry_points.txt",
            "[pytest11]\nx = evil\n",
            [("src/Evil.DIST-INFO/entry_points.txt", "file")],
        ),
        ("src/EVIL.PTH", "import evil\n", [("src/EVIL.PTH", "file")]),
        ("src/sitecustomize.py", "import evil\n", [("src/sitecustomize.py", "file")]),
        ("usercustomize.py", "import evil\n", [("usercustomize.py", "file")]),
        # The package form loads at start-up just the same.
        ("src/sitecustomize/__init__.py", "import evil\n", [("src/sitecustomize/__init__.py", "file")]),
        ("jest.config.js", "module.exports = {}\n", [("jest.config.js", "file")]),
        (
            "pyproject.toml",
            PYPROJECT.replace('testpaths = ["tests"]', 'addopts = "-p evil"'),
            [("pyproject.toml", "[tool.pytest]")],
        ),
        (
            "pyproject.toml",
            PYPROJECT + '\n[project.entry-points.pytest11]\nevil = "calc.evil"\n',
            [("pyproject.toml", "[project.entry-points.pytest11]")],
        ),
        ("setup.cfg", BASE["setup.cfg"].replace("-q", "-p evil"), [("setup.cfg", "[tool:pytest]")]),
        ("tox.ini", BASE["tox.ini"] + "\n[pytest]\naddopts = -p evil\n", [("tox.ini", "[pytest]")]),
        ("pyproject.toml", "[tool.pytest\nbroken", [("pyproject.toml", "file")]),
        # The candidate's own tables in shared files are its to change.
        ("pyproject.toml", PYPROJECT.replace("dependencies = []", 'dependencies = ["attrs"]'), []),
        ("setup.cfg", BASE["setup.cfg"].replace("name = calc", "name = calc2"), []),
        ("src/calc.py", "def div(a, b):\n    return a // b\n", []),
    ],
)
def test_infrastructure_edits_name_the_file_and_section(
    tmp_path: Path, path: str, text: str, expected: list[tuple[str, str]]
) -> None:
    pristine, tree, changes = _trees(tmp_path, BASE, {path: text})
    edits = infrastructure_edits(_task(), changes, tree, pristine)
    assert [(e.path, e.what) for e in edits] == expected


def test_a_deleted_config_file_and_the_commands_own_script_count(tmp_path: Path) -> None:
    base = {**BASE, "pytest.ini": "[pytest]\n", "run_tests.sh": "pytest\n"}
    pristine, tree, changes = _trees(tmp_path, base, {"pytest.ini": None, "run_tests.sh": "exit 0\n"})
    task = _task(command="bash run_tests.sh --junitxml={junit}")
    assert [(e.path, e.what) for e in infrastructure_edits(task, changes, tree, pristine)] == [
        ("pytest.ini", "file"),
        ("run_tests.sh", "file"),
    ]


def test_editable_infrastructure_is_neither_an_edit_nor_sealed(tmp_path: Path) -> None:
    pristine, tree, changes = _trees(tmp_path, BASE, {"pytest.ini": "[pytest]\n"})
    task = _task(infrastructure_editable=["pytest.ini"])
    assert infrastructure_edits(task, changes, tree, pristine) == []
    assert seal_acceptance_tree(task, changes, tree, pristine, []) == {}
    assert (tree / "pytest.ini").exists()


def test_task_globs_extend_the_default_set(tmp_path: Path) -> None:
    pristine, tree, changes = _trees(tmp_path, BASE, {"ci/runner.cfg": "x\n"})
    assert infrastructure_edits(_task(), changes, tree, pristine) == []
    edits = infrastructure_edits(_task(infrastructure=["ci/**"]), changes, tree, pristine)
    assert [(e.path, e.what) for e in edits] == [("ci/runner.cfg", "file")]


def test_the_acceptance_tree_is_sealed_whole(tmp_path: Path) -> None:
    patch: dict[str, str | None] = {
        "src/calc.py": "def div(a, b):\n    return 0\n",  # the candidate's change: kept
        "tests/helpers.py": "def one():\n    return 2\n",  # a helper no test id names: reset
        "tests/__init__.py": "import evil\n",  # a new file in a test folder: removed
        "tests/test_calc.py": None,  # a deleted test file: restored
        "conftest.py": "import evil\n",  # a new conftest beside the source: removed
        "pytest.ini": "[pytest]\naddopts = -p evil\n",  # config: removed
        "pyproject.toml": PYPROJECT.replace('testpaths = ["tests"]', 'addopts = "-p evil"').replace(
            "line-length = 100", "line-length = 90"
        ),
    }
    pristine, tree, changes = _trees(tmp_path, BASE, patch)
    sealed = seal_acceptance_tree(_task(), changes, tree, pristine, [])
    assert sealed == {
        "conftest.py": "test file",
        "pyproject.toml": "test configuration sections",
        "pytest.ini": "test infrastructure",
        "tests/__init__.py": "test folder",
        "tests/helpers.py": "test folder",
        "tests/test_calc.py": "test folder",
    }
    assert not (tree / "conftest.py").exists() and not (tree / "pytest.ini").exists()
    assert not (tree / "tests/__init__.py").exists()
    assert (tree / "tests/helpers.py").read_text() == BASE["tests/helpers.py"]
    assert (tree / "tests/test_calc.py").read_text() == BASE["tests/test_calc.py"]
    assert (tree / "src/calc.py").read_text() == patch["src/calc.py"]
    spliced = (tree / "pyproject.toml").read_text()
    assert 'testpaths = ["tests"]' in spliced and "-p evil" not in spliced and "line-length = 90" in spliced


@pytest.mark.parametrize(
    ("ids", "files", "expected"),
    [
        (["tests/test_calc.py::test_div"], {"tests/test_calc.py": ""}, ["tests"]),
        (["tests/unit/test_a.py::test_x"], {"tests/unit/test_a.py": ""}, ["tests"]),
        (["src/pkg/tests/test_a.py::test_x"], {"src/pkg/tests/test_a.py": ""}, ["src/pkg/tests"]),
        (["test_calc.py::test_div"], {"test_calc.py": ""}, []),  # beside the source: reset file by file
        (["src/test_calc.py::test_div"], {"src/test_calc.py": ""}, []),
        (["testing/test_a.py::t", "tests/test_b.py::t"], {}, ["testing", "tests"]),
        # Every other folder named tests or test: support code the tests may import from it.
        (
            ["tests/test_calc.py::test_div"],
            {"tests/test_calc.py": "", "src/pkg/tests/__init__.py": "", "src/other/test/helpers.py": ""},
            ["src/other/test", "src/pkg/tests", "tests"],
        ),
        (["tests/test_calc.py::test_div"], {"src/pkg/tests/unit/tests/x.py": ""}, ["src/pkg/tests", "tests"]),
        # A library module named testing (numpy.testing) is not a tests folder unless the task's tests are in it.
        (["tests/test_calc.py::test_div"], {"src/pkg/testing/utils.py": ""}, ["tests"]),
    ],
)
def test_test_folders_are_the_folders_holding_the_tasks_tests(
    tmp_path: Path, ids: list[str], files: dict[str, str], expected: list[str]
) -> None:
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    task = TaskSpec.model_validate(
        make_task(tests={"command": "pytest --junitxml={junit}", "fail_to_pass": ids, "pass_to_pass": []})
    )
    assert folders_to_seal(task, tmp_path) == expected


@pytest.mark.parametrize(
    ("name", "base", "candidate", "differ"),
    [
        ("pyproject.toml", PYPROJECT, PYPROJECT.replace("100", "90"), []),
        ("pyproject.toml", PYPROJECT, PYPROJECT.replace('["tests"]', '["src"]'), ["[tool.pytest]"]),
        ("pyproject.toml", PYPROJECT, PYPROJECT + "\n[tool.pytest.other]\nx = 1\n", ["[tool.pytest]"]),
        (
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace("[tool.pytest.ini_options]", '[tool."pytest".ini_options]'),
            [],
        ),
        ("setup.cfg", "[tool:pytest]\naddopts = -q\n", "[tool:pytest]\naddopts = -q\n\n[flake8]\nx = 1\n", []),
        ("setup.cfg", "[tool:pytest]\naddopts = -q\n", "[tool:pytest]\naddopts = -x\n", ["[tool:pytest]"]),
        ("package.json", '{"scripts": {"test": "jest"}}', '{"scripts": {"test": "jest", "lint": "x"}}', []),
        ("package.json", '{"scripts": {"test": "jest"}}', '{"scripts": {"test": "true"}}', ["scripts.test"]),
        ("package.json", '{"scripts": {"test": "jest"}}', '{"scripts": {"test": "jest"}, "jest": {}}', ["jest"]),
        ("package.json", '{"scripts": {}}', "{not json", ["file"]),
        # Nesting deep enough for RecursionError in the parser: the candidate's file does not parse.
        ("package.json", '{"scripts": {}}', '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}", ["file"]),
        ("pyproject.toml", PYPROJECT, PYPROJECT + "\n[tool.x]\ny = " + "[" * 5_000 + "]" * 5_000 + "\n", ["file"]),
    ],
)
def test_sections_are_compared_parsed(tmp_path: Path, name: str, base: str, candidate: str, differ: list[str]) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    (tmp_path / "b" / name).write_text(base)
    (tmp_path / "c" / name).write_text(candidate)
    assert sections_differ(tmp_path / "c" / name, tmp_path / "b" / name) == differ


@pytest.mark.parametrize(
    ("name", "base", "candidate", "kept"),
    [
        (
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace('testpaths = ["tests"]', 'addopts = "-p evil"').replace("100", "90"),
            "line-length = 90",
        ),
        ("setup.cfg", "[metadata]\nname = a\n\n[tool:pytest]\naddopts = -q\n", "[metadata]\nname = b\n", "name = b"),
        ("tox.ini", "[tox]\nenvlist = a\n", "[tox]\nenvlist = b\n\n[pytest]\naddopts = -p evil\n", "envlist = b"),
        (
            "package.json",
            '{"name": "a", "scripts": {"test": "jest"}}',
            '{"name": "b", "scripts": {"test": "true", "build": "tsc"}, "jest": {"x": 1}}',
            '"build": "tsc"',
        ),
    ],
)
def test_splicing_puts_back_the_base_sections_and_keeps_the_rest(
    tmp_path: Path, name: str, base: str, candidate: str, kept: str
) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    (tmp_path / "b" / name).write_text(base)
    (tmp_path / "c" / name).write_text(candidate)
    assert splice_sections(tmp_path / "c" / name, tmp_path / "b" / name)
    assert sections_differ(tmp_path / "c" / name, tmp_path / "b" / name) == []
    assert kept in (tmp_path / "c" / name).read_text()


def test_a_header_line_of_a_million_spaces_is_read_in_linear_time(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    (tmp_path / "b" / "pyproject.toml").write_text(PYPROJECT)
    evil = PYPROJECT.replace("100", "90") + "\n[tool.pytest.x]\na = 1\n#\n[" + " " * 1_000_000 + "\n"
    (tmp_path / "c" / "pyproject.toml").write_text(evil)
    splice_sections(tmp_path / "c" / "pyproject.toml", tmp_path / "b" / "pyproject.toml")
    assert "line-length = 90" in (tmp_path / "c" / "pyproject.toml").read_text()


def test_the_base_is_walked_once_per_pristine_folder_and_again_when_it_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks: list[Path] = []

    def counted(root: Path, globs: list[str]) -> list[str]:
        walks.append(root)
        return list_files(root, globs)

    monkeypatch.setattr(sealing, "list_files", counted)
    pristine = tmp_path / "repo"
    (pristine / "checks").mkdir(parents=True)
    (pristine / "checks" / "test_a.py").write_text("")
    task = TaskSpec.model_validate(
        make_task(
            tests={"command": "pytest --junitxml={junit}", "fail_to_pass": ["x.py::t"], "test_files": ["**/test_*.py"]}
        )
    )
    assert folders_to_seal(task, pristine) == folders_to_seal(task, pristine) == []
    assert len(walks) == 1  # the tamper and tests steps of a grade, and later grades, share one walk
    pristine.rename(tmp_path / "old")  # rebuilt in place, as ensure_pristine does: a new folder
    (pristine / "tests").mkdir(parents=True)
    (pristine / "tests" / "test_b.py").write_text("")
    assert folders_to_seal(task, pristine) == ["tests"] and len(walks) == 2


def test_under_reset_only_the_hidden_tests_files_conftest_and_protected_files_are_reset(tmp_path: Path) -> None:
    base = {**BASE, "tests/conftest.py": "", "tests/app/models.py": "class A:\n    pass\n"}
    patch: dict[str, str | None] = {
        "src/calc.py": "def div(a, b):\n    return 0\n",
        "tests/helpers.py": "def one():\n    return 2\n",  # a helper the hidden tests do not replace: kept
        "tests/app/models.py": "class A:\n    x = 1\n",  # a test app's models: kept
        "tests/test_mine.py": "def test_mine():\n    pass\n",  # the candidate's own test module: kept
        "tests/test_calc.py": "def test_div():\n    pass\n",  # replaced by the hidden tests: reset
        "tests/conftest.py": "import evil\n",  # test infrastructure: reset in both readings
        "tests/pytest.ini": "[pytest]\naddopts = -p evil\n",  # test configuration: reset in both readings
    }
    pristine, tree, changes = _trees(tmp_path, base, patch)
    task = _task(hidden_edits="reset")
    kept = kept_test_edits(task, changes, tree, pristine, [], {"tests/test_calc.py"})
    assert kept == ["tests/app/models.py", "tests/helpers.py", "tests/test_mine.py"]
    sealed = seal_acceptance_tree(task, changes, tree, pristine, [], kept)
    assert sealed == {
        "tests/conftest.py": "test folder",
        "tests/pytest.ini": "test infrastructure",
        "tests/test_calc.py": "test folder",
    }
    for path in kept:
        assert (tree / path).read_text() == patch[path]
    # A protected file the hidden tests do not replace stays reset (its edit fails the constraints gate).
    assert kept_test_edits(task, changes, tree, pristine, ["tests/helpers.py"], {"tests/test_calc.py"}) == [
        "tests/app/models.py",
        "tests/test_mine.py",
    ]


def test_under_fail_no_test_edit_is_kept(tmp_path: Path) -> None:
    pristine, tree, changes = _trees(tmp_path, BASE, {"tests/helpers.py": "def one():\n    return 2\n"})
    assert kept_test_edits(_task(), changes, tree, pristine, [], {"tests/test_calc.py"}) == []
    assert seal_acceptance_tree(_task(), changes, tree, pristine, []) == {"tests/helpers.py": "test folder"}


def test_a_helper_in_another_tests_folder_is_reset_under_fail_and_kept_and_named_under_reset(tmp_path: Path) -> None:
    """The hidden tests import assertion helpers from a tests folder of the package, not their own folder."""
    base = {**BASE, "src/pkg/tests/__init__.py": "def assert_eq(a, b):\n    assert a == b\n"}
    patch: dict[str, str | None] = {"src/pkg/tests/__init__.py": "def assert_eq(a, b):\n    pass\n"}
    pristine, tree, changes = _trees(tmp_path, base, patch)
    assert seal_acceptance_tree(_task(), changes, tree, pristine, []) == {"src/pkg/tests/__init__.py": "test folder"}
    assert (tree / "src/pkg/tests/__init__.py").read_text() == base["src/pkg/tests/__init__.py"]
    pristine, tree, changes = _trees(tmp_path / "reset", base, patch)
    task = _task(hidden_edits="reset")
    assert kept_test_edits(task, changes, tree, pristine, [], {"tests/test_calc.py"}) == ["src/pkg/tests/__init__.py"]
