"""``gradeflow task import-swebench``: SWE-bench rows against a real local mirror become valid task specs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from gradeflow.authoring.patches import applied_tree
from gradeflow.authoring.swebench import map_test_name
from gradeflow.cli import main
from gradeflow.errors import SpecError
from gradeflow.spec import load_task
from gradeflow.tasks.repo import materialize, resolve_base

COMMAND = "python -m pytest -q -p no:cacheprovider --junitxml={junit}"
UNITS = """import unittest

from calc import sub


class SubTests(unittest.TestCase):
    def test_sub_unit(self):
        self.assertEqual(sub(3, 1), 2)
"""
ADD_UNIT = """

class AddTests(unittest.TestCase):
    def test_add_unit(self):
        '''add() adds.

        The first line is what Django's verbose runner prints under the test's name: SWE-bench's name for it.
        '''
        from calc import add

        self.assertEqual(add(2, 2), 4)
"""


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    env |= {"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def _diff(repo: Path, base: str, paths: list[str]) -> str:
    return _git(repo, "diff", base, "--", *paths)


@pytest.fixture
def dataset(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A mirror of acme/calc (add() subtracts) and three rows: pytest style, Django style, no commands entry."""
    repo = tmp_path / "repos" / "acme__calc"
    (repo / "tests" / "unit").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n")
    (repo / "tests" / "test_calc.py").write_text(
        "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n"
    )
    (repo / "tests" / "unit" / "test_units.py").write_text(UNITS)
    (repo / "tests" / "unit" / "test_old.py").write_text(
        "from calc import add\n\n\ndef test_old():\n    assert add(1, 2) == -1\n"
    )
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    gold = _diff(repo, base, ["calc.py"])
    with (repo / "tests" / "test_calc.py").open("a") as handle:
        handle.write("\n\ndef test_add():\n    from calc import add\n\n    assert add(1, 2) == 3\n")
    with (repo / "tests" / "unit" / "test_units.py").open("a") as handle:
        handle.write(ADD_UNIT)
    pytest_tests = _diff(repo, base, ["tests/test_calc.py"])
    (repo / "tests" / "unit" / "test_old.py").unlink()
    _git(repo, "add", "-A")
    django_tests = _git(repo, "diff", "--cached", base, "--", "tests/unit")
    _git(repo, "reset", "-q", "--hard", base)
    row = {"repo": "acme/calc", "base_commit": base, "patch": gold, "environment_setup_commit": base}
    rows = [
        row
        | {
            "instance_id": "acme__calc-1",
            "version": "1.0",
            "test_patch": pytest_tests,
            "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),
            "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_sub"]),
            "problem_statement": "add() subtracts.\n",
        },
        row
        | {
            "instance_id": "acme__calc-2",
            "version": "2.0",
            "test_patch": django_tests,
            "FAIL_TO_PASS": ["test_add_unit (unit.test_units.AddTests)"],
            "PASS_TO_PASS": ["test_sub_unit (unit.test_units.SubTests.test_sub_unit)"],
        },
        row
        | {
            "instance_id": "acme__calc-3",
            "version": "3.0",
            "test_patch": pytest_tests,
            "FAIL_TO_PASS": "[]",
            "PASS_TO_PASS": "[]",
        },
    ]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    commands = tmp_path / "commands.yaml"
    entry = {"setup": None, "test_command": COMMAND}
    commands.write_text(yaml.safe_dump({"acme/calc": {"1.0": entry, "2.0": entry}}))
    return instances, tmp_path / "repos", commands


@pytest.mark.usefixtures("prefect")
def test_rows_become_valid_tasks_and_the_unconvertible_one_is_listed(
    dataset: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances, repos, commands = dataset
    out = tmp_path / "tasks"
    argv = ["task", "import-swebench", str(instances), "--repos", str(repos), "--commands", str(commands)]
    assert main([*argv, "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert "skipped acme__calc-3 (line 3): no commands entry for acme/calc version 3.0" in captured.err
    assert sorted(p.name for p in out.iterdir()) == ["acme__calc-1", "acme__calc-2"]

    first = yaml.safe_load((out / "acme__calc-1" / "task.yaml").read_text())
    assert first["tests"]["fail_to_pass"] == ["tests/test_calc.py::test_add"]
    assert first["tests"]["hidden"] == "hidden_tests"
    # SWE-bench's pass rule: a skipped pass-to-pass test is kept, an expected failure (XFAIL) is a pass
    assert (first["tests"]["skipped_pass_to_pass"], first["tests"]["xfail"]) == ("kept", "pass")
    assert first["tests"]["pass_to_pass_failing_on_base"] == "set-aside"
    assert first["issue"] == "add() subtracts.\n"
    assert (out / "acme__calc-1" / "hidden_tests" / "tests" / "test_calc.py").is_file()
    second = yaml.safe_load((out / "acme__calc-2" / "task.yaml").read_text())
    assert second["tests"]["fail_to_pass"] == ["unit.test_units.AddTests::test_add_unit"]
    assert second["tests"]["pass_to_pass"] == ["unit.test_units.SubTests::test_sub_unit"]
    assert second["tests"]["hidden_patch"] == "test.patch"  # the test patch deletes tests/unit/test_old.py

    for instance in ("acme__calc-1", "acme__calc-2"):
        task, gold = out / instance / "task.yaml", out / instance / "reference.diff"
        assert main(["validate", str(task), "--reference", str(gold)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    first_task = out / "acme__calc-1"
    assert main(["grade", str(first_task / "task.yaml"), "--patch", str(first_task / "reference.diff")]) == 0
    assert capsys.readouterr().out.startswith("PASS 1.000")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("tests/test_x.py::test_a", "tests/test_x.py::test_a"),
        ("tests/test_x.py::TestA::test_b[1-::2]", "tests/test_x.py::TestA::test_b[1-::2]"),
        ("test_a (model_fields.test_x.TestA)", "model_fields.test_x.TestA::test_a"),
        ("test_a (model_fields.test_x.TestA.test_a)", "model_fields.test_x.TestA::test_a"),
        ("test_a", None),  # a bare name: no file, no class
        ("Regression test for #12345", None),  # a docstring line: mapped by reading the test modules, not here
        ("tests/test_x.py::test_a[a b", None),  # a parametrized id cut short at a space
    ],
)
def test_swebench_names_map_to_gradeflow_ids_or_are_refused(name: str, expected: str | None) -> None:
    assert map_test_name(name) == expected


def test_a_row_with_only_unmappable_fail_to_pass_names_or_a_missing_commit_is_skipped(
    dataset: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances, repos, commands = dataset
    rows = [json.loads(line) for line in instances.read_text().splitlines()][:2]
    rows[0]["FAIL_TO_PASS"] = '["test_add"]'
    rows[1]["base_commit"] = "0" * 40
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["task", "import-swebench", str(instances), "--repos", str(repos), "--commands", str(commands)]
    assert main([*argv, "--out", str(tmp_path / "tasks")]) == 1
    err = capsys.readouterr().err
    assert "acme__calc-1 (line 1): no FAIL_TO_PASS name has a gradeflow id form: 'test_add'" in err
    assert f"acme__calc-2 (line 2): the mirror {repos / 'acme__calc'} does not hold base_commit" in err
    assert not (tmp_path / "tasks").exists() or not any((tmp_path / "tasks").iterdir())


def test_a_row_with_one_unmappable_name_is_imported_and_the_name_reported(
    dataset: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances, repos, commands = dataset
    row = json.loads(instances.read_text().splitlines()[0])
    # As in SWE-bench's own data: its log parser cut a parametrized name at a space.
    cut = "tests/test_calc.py::test_override_parametrized_fixture_issue_979['fixt,"
    row["PASS_TO_PASS"] = json.dumps(["tests/test_calc.py::test_sub", cut])
    instances.write_text(json.dumps(row) + "\n")
    out = tmp_path / "tasks"
    argv = ["task", "import-swebench", str(instances), "--repos", str(repos), "--commands", str(commands)]
    assert main([*argv, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f'acme__calc-1: PASS_TO_PASS name "{cut}" left out of scoring: a parametrized name cut short' in err
    text = (out / "acme__calc-1" / "task.yaml").read_text()
    spec = yaml.safe_load(text)
    assert spec["tests"]["pass_to_pass"] == ["tests/test_calc.py::test_sub"]
    assert "# Left out of scoring (PASS_TO_PASS):" in text and "fixt," in text.split("task_id:")[0]


def test_bad_input_exits_2_naming_the_line(
    dataset: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances, repos, commands = dataset
    argv = ["--repos", str(repos), "--commands", str(commands), "--out", str(tmp_path / "tasks")]
    assert main(["task", "import-swebench", str(tmp_path / "nope.jsonl"), *argv]) == 2
    assert "cannot read the instances file" in capsys.readouterr().err
    instances.write_text(instances.read_text().splitlines()[0] + "\n{not json\n")
    assert main(["task", "import-swebench", str(instances), *argv]) == 2
    assert f"{instances}:2: not JSON" in capsys.readouterr().err


@pytest.mark.usefixtures("prefect")
def test_a_fix_that_also_edits_the_test_file_is_resolved_and_the_strict_reading_reports_the_edit(
    dataset: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances, repos, commands = dataset
    instances.write_text(instances.read_text().splitlines()[0] + "\n")
    out = tmp_path / "tasks"
    argv = ["task", "import-swebench", str(instances), "--repos", str(repos), "--commands", str(commands)]
    assert main([*argv, "--out", str(out)]) == 0
    folder = out / "acme__calc-1"
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    spec["tests"]["command"] += " tests/test_calc.py"  # as SWE-bench names the test files: the command's own file
    (folder / "task.yaml").write_text(yaml.safe_dump(spec))
    # The agent's way: the fix, plus a regression test of its own in the test file the task's ids name.
    mirror = tmp_path / "agent"
    subprocess.run(["git", "clone", "-q", str(repos / "acme__calc"), str(mirror)], check=True)
    subprocess.run(["git", "-C", str(mirror), "apply", str(folder / "reference.diff")], check=True)
    with (mirror / "tests" / "test_calc.py").open("a") as handle:
        handle.write("\n\ndef test_add_agent():\n    from calc import add\n\n    assert add(2, 2) == 4\n")
    # ... and test configuration SWE-bench's image had edited (sphinx's -rA in tox.ini), carried in the diff.
    (mirror / "tox.ini").write_text("[pytest]\naddopts = -rA\n")
    subprocess.run(["git", "-C", str(mirror), "add", "-N", "tox.ini"], check=True)
    patch = tmp_path / "agent.diff"
    patch.write_text(_git(mirror, "diff"))
    capsys.readouterr()
    assert main(["grade", str(folder / "task.yaml"), "--patch", str(patch), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["passed"], result["decision"]) == (True, "merge-candidate")
    strict = result["strict_reading"]
    assert (strict["passed"], strict["decision"]) == (False, "rejected")
    assert {"protected-file-modified", "test-infrastructure-modified"} <= set(strict["reason_codes"])
    assert strict["messages"] == [
        "protected: tests/test_calc.py is protected and was modified",
        "tests/test_calc.py: the file is test infrastructure",
        "tox.ini: [pytest] is test infrastructure",
    ]
    constraints = next(c for c in result["components"] if c["name"] == "constraints")
    assert constraints["details"]["reset_by_hidden_tests"] == ["tests/test_calc.py"]
    # gradeflow's own reading, asked for in the task: the same patch is rejected for the edit.
    spec["tests"]["hidden_edits"] = "fail"
    (folder / "task.yaml").write_text(yaml.safe_dump(spec))
    assert main(["grade", str(folder / "task.yaml"), "--patch", str(patch), "--json"]) == 1
    strict_result = json.loads(capsys.readouterr().out)
    assert "protected-file-modified" in strict_result["reason_codes"] and strict_result["strict_reading"] is None
    # The reference alone: no edit set aside, no second reading.
    assert main(["grade", str(folder / "task.yaml"), "--patch", str(folder / "reference.diff"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["strict_reading"] is None


@pytest.mark.usefixtures("prefect")
def test_an_edit_to_a_file_of_the_test_patch_is_reported_where_the_test_ids_name_no_file(
    dataset: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances, repos, commands = dataset
    instances.write_text(instances.read_text().splitlines()[1] + "\n")  # Django's names: module.Class::test
    unittest = {"setup": None, "test_command": "cd tests && PYTHONPATH=.. python -m unittest -v unit.test_units"}
    commands.write_text(yaml.safe_dump({"acme/calc": {"2.0": unittest | {"report": "django-log"}}}))
    out = tmp_path / "tasks"
    argv = ["task", "import-swebench", str(instances), "--repos", str(repos), "--commands", str(commands)]
    assert main([*argv, "--out", str(out)]) == 0
    folder = out / "acme__calc-2"
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    assert spec["constraints"]["protected"] == ["tests/unit/test_old.py", "tests/unit/test_units.py"]
    # The fix, plus the agent's own test in a file the test patch replaces (as a model's patch of django-11999 does).
    mirror = tmp_path / "agent"
    subprocess.run(["git", "clone", "-q", str(repos / "acme__calc"), str(mirror)], check=True)
    subprocess.run(["git", "-C", str(mirror), "apply", str(folder / "reference.diff")], check=True)
    with (mirror / "tests" / "unit" / "test_units.py").open("a") as handle:
        handle.write(
            "\n\nclass AgentTests(unittest.TestCase):\n    def test_agent(self):\n        self.assertTrue(sub)\n"
        )
    patch = tmp_path / "agent.diff"
    patch.write_text(_git(mirror, "diff"))
    capsys.readouterr()
    assert main(["grade", str(folder / "task.yaml"), "--patch", str(patch), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["passed"], result["strict_reading"]["decision"]) == (True, "rejected")
    assert result["strict_reading"]["messages"] == ["protected: tests/unit/test_units.py is protected and was modified"]


@pytest.mark.usefixtures("prefect")
def test_a_docstring_line_becomes_the_id_of_the_test_it_describes_and_is_graded_by_it(
    dataset: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances, repos, commands = dataset
    row = json.loads(instances.read_text().splitlines()[1])
    # As SWE-bench's lists name a test with a docstring: by its first line (its log parser keeps that line).
    row["FAIL_TO_PASS"] = ["add() adds."]
    row["PASS_TO_PASS"] = ["test_sub_unit (unit.test_units.SubTests)", "Regression test for #1"]
    instances.write_text(json.dumps(row) + "\n")
    unittest = {"setup": None, "test_command": "cd tests && PYTHONPATH=.. python -m unittest -v unit.test_units"}
    commands.write_text(yaml.safe_dump({"acme/calc": {"2.0": unittest | {"report": "django-log"}}}))
    out = tmp_path / "tasks"
    argv = ["task", "import-swebench", str(instances), "--repos", str(repos), "--commands", str(commands)]
    assert main([*argv, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert (
        "PASS_TO_PASS name \"Regression test for #1\" left out of scoring: neither Django's 'test (module.Class)' "
        "nor a test's docstring line: not the docstring line of any test in the test labels' modules "
        "(unit.test_units)"
    ) in err
    folder = out / "acme__calc-2"
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    assert spec["tests"]["fail_to_pass"] == ["unit.test_units.AddTests::test_add_unit"]
    assert spec["tests"]["pass_to_pass"] == ["unit.test_units.SubTests::test_sub_unit"]
    # The id is the one the django-log reading gives the test: the gold patch passes by it, the empty patch fails.
    assert main(["grade", str(folder / "task.yaml"), "--patch", str(folder / "reference.diff")]) == 0
    assert capsys.readouterr().out.startswith("PASS")
    (tmp_path / "empty.diff").write_text("")
    assert main(["grade", str(folder / "task.yaml"), "--patch", str(tmp_path / "empty.diff"), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert (result["status"], result["passed"]) == ("graded", False)


def test_swebench_repositories_need_no_commands_file(
    dataset: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances, repos, _ = dataset
    rows = [json.loads(line) for line in instances.read_text().splitlines()][:2]
    for name in ("pylint-dev__pylint", "django__django"):
        subprocess.run(["git", "clone", "-q", "--mirror", str(repos / "acme__calc"), str(repos / name)], check=True)
    rows[0] |= {"repo": "pylint-dev/pylint", "version": "2.15"}
    rows[1] |= {"repo": "django/django", "version": "3.0"}
    rows.append(rows[0] | {"instance_id": "acme__calc-9", "repo": "acme/calc", "version": "1.0"})
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "tasks"
    assert main(["task", "import-swebench", str(instances), "--repos", str(repos), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "acme__calc-9 (line 3): no commands entry for acme/calc version 1.0, and gradeflow's SWE-bench table" in err
    pylint = yaml.safe_load((out / "acme__calc-1" / "task.yaml").read_text())
    assert (pylint["environment"]["root"], pylint["environment"]["setup_network"]) == ("debian:bullseye", True)
    assert pylint["tests"]["command"].endswith("--junitxml={junit} -p no:cacheprovider tests/test_calc.py")
    assert pylint["tests"]["report"] == "junit" and "pip install" in pylint["setup"]
    django = yaml.safe_load((out / "acme__calc-2" / "task.yaml").read_text())
    assert django["tests"]["report"] == "django-log"
    # Django's labels from the test patch's files (the deleted one left out), as SWE-bench derives them.
    assert (
        django["tests"]["command"]
        == "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 unit.test_units"
    )
    assert django["env"]["LC_ALL"] == "en_US.UTF-8" and django["environment"]["root"] == "debian:bullseye"
    # The environment's part is shared by every row of the version whose requirements agree (SWE-bench's env image).
    assert "pip install -r tests/requirements/py3.txt" in django["environment"]["shared_setup"]
    assert django["environment"]["shared_inputs"] == ["tests/requirements/py3.txt"]
    assert django["setup"] == "pip install -e ."
    loaded = load_task(out / "acme__calc-2" / "task.yaml")
    assert (loaded.tests.report, loaded.environment.setup_network, loaded.tests.hidden_edits) == (
        "django-log",
        True,
        "reset",
    )


def test_only_the_files_a_patch_touches_are_written_to_apply_it(tmp_path: Path) -> None:
    # A whole checkout of Django's 6,000 files, twice per row, made the import take half a minute a row.
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    for name in ("a.py", "b.py", "c[1].py", "old.py"):
        (repo / "pkg" / name).write_text(f"# {name}\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "pkg" / "c[1].py").write_text("# changed\n")
    (repo / "pkg" / "new.py").write_text("# new\n")
    (repo / "pkg" / "old.py").unlink()
    _git(repo, "add", "-A")
    patch = _git(repo, "diff", "--cached", base)
    with applied_tree(repo, base, patch, "the test patch", only_patched=True) as tree:
        written = sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() and ".git" not in p.parts)
        assert written == ["pkg/c[1].py", "pkg/new.py"]
        assert (tree / "pkg" / "c[1].py").read_text() == "# changed\n"
    _git(repo, "commit", "-qm", "patched")  # the patch no longer applies to the new head
    with (
        pytest.raises(SpecError, match="the gold patch: does not apply"),
        applied_tree(repo, "HEAD", patch, "the gold patch", only_patched=True),
    ):
        pass


def test_a_bare_name_is_an_id_where_the_log_names_tests_by_function_only() -> None:
    assert map_test_name("test_issue_1234", "sympy-log") == "test_issue_1234"
    assert map_test_name("test_issue_1234") is None  # a JUnit report names the file: a bare name has no match
    assert map_test_name("Regression test for #1", "sympy-log") is None


SHARED_LINE_TESTS = '''import unittest

from calc import add


class AddTests(unittest.TestCase):
    def test_add(self):
        """add() adds."""
        self.assertEqual(add(2, 2), 4)


class NegativeTests(unittest.TestCase):  # after AddTests: unittest loads a module's classes by name
    def test_add(self):
        """add() adds."""
        self.assertEqual(add(-3, 1), -2)
'''


def _calc_patch(repo: Path, base: str, add: str) -> str:
    (repo / "calc.py").write_text(f"def add(a, b):\n    return {add}\n\n\ndef sub(a, b):\n    return a - b\n")
    patch = _diff(repo, base, ["calc.py"])
    _git(repo, "checkout", "-q", base, "--", "calc.py")
    return patch


@pytest.mark.usefixtures("prefect")
def test_a_docstring_line_of_several_tests_is_listed_with_their_ids_and_graded_by_the_last_to_run(
    dataset: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances, repos, commands = dataset
    row = json.loads(instances.read_text().splitlines()[1])
    mirror, base = repos / "acme__calc", row["base_commit"]
    (mirror / "tests" / "unit" / "test_shared.py").write_text(SHARED_LINE_TESTS)
    _git(mirror, "add", "tests/unit/test_shared.py")
    row["test_patch"] = _git(mirror, "diff", "--cached", base, "--", "tests/unit/test_shared.py")
    _git(mirror, "rm", "-q", "-f", "tests/unit/test_shared.py")
    row |= {"FAIL_TO_PASS": ["add() adds."], "PASS_TO_PASS": []}
    instances.write_text(json.dumps(row) + "\n")
    unittest = {"setup": None, "test_command": "cd tests && PYTHONPATH=.. python -m unittest -v unit.test_shared"}
    commands.write_text(yaml.safe_dump({"acme/calc": {"2.0": unittest | {"report": "django-log"}}}))
    out = tmp_path / "tasks"
    argv = ["task", "import-swebench", str(instances), "--repos", str(repos), "--commands", str(commands)]
    assert main([*argv, "--out", str(out)]) == 0
    assert "1 names several tests print (a docstring's first line) are scored as the one" in capsys.readouterr().err
    folder = out / "acme__calc-2"
    text = (folder / "task.yaml").read_text()
    tests = yaml.safe_load(text)["tests"]
    assert tests["fail_to_pass"] == ["add() adds."]
    assert tests["last_run_of"] == {
        "add() adds.": ["unit.test_shared.AddTests::test_add", "unit.test_shared.NegativeTests::test_add"]
    }
    assert "such a name passes or fails as whichever of those tests runs last" in text.split("task_id:")[0]
    # SWE-bench's verdicts: the name is the status printed last, NegativeTests', whatever AddTests' was.
    verdicts = {}
    for label, add in (("gold", "a + b"), ("last fails", "abs(a + b)"), ("last passes", "a + b if a < 0 else a - b")):
        (tmp_path / "candidate.diff").write_text(_calc_patch(mirror, base, add))
        code = main(["grade", str(folder / "task.yaml"), "--patch", str(tmp_path / "candidate.diff"), "--json"])
        result = json.loads(capsys.readouterr().out)
        details = next(c for c in result["components"] if c["name"] == "tests")["details"]
        verdicts[label] = (code, result["passed"], details["fail_to_pass"], details["report"]["confirmed_by"])
    assert verdicts == {
        "gold": (0, True, {"add() adds.": "passed"}, "recorder"),
        "last fails": (1, False, {"add() adds.": "failed"}, "recorder"),
        "last passes": (0, True, {"add() adds.": "passed"}, "recorder"),
    }


def test_a_base_with_submodules_gets_them_from_the_mirrors_folder(
    dataset: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances, repos, commands = dataset
    helpers = repos / "acme__helpers"
    helpers.mkdir()
    (helpers / "helper.py").write_text("HELPS = True\n")
    _git(helpers, "init", "-q")
    _git(helpers, "add", "-A")
    _git(helpers, "commit", "-qm", "helpers")
    repo = repos / "acme__calc"
    for path, url in (("helpers", "https://github.com/acme/helpers.git"), ("gone", "../gone.git")):
        _git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(helpers), path)
        _git(repo, "config", "-f", ".gitmodules", f"submodule.{path}.url", url)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "submodules")
    row = json.loads(instances.read_text().splitlines()[0])
    row["base_commit"] = _git(repo, "rev-parse", "HEAD").strip()
    instances.write_text(json.dumps(row) + "\n")
    out = tmp_path / "tasks"
    argv = ["task", "import-swebench", str(instances), "--repos", str(repos), "--commands", str(commands)]
    assert main([*argv, "--out", str(out)]) == 0
    text = (out / "acme__calc-1" / "task.yaml").read_text()
    assert yaml.safe_load(text)["submodules"] == {"helpers": "../../repos/acme__helpers"}
    assert f"Submodule gone (../gone.git): no mirror in {repos} holds" in text.split("task_id:")[0]

    materialize(resolve_base(load_task(out / "acme__calc-1" / "task.yaml")), tmp_path / "ws")
    assert (tmp_path / "ws" / "helpers" / "helper.py").read_text() == "HELPS = True\n"
    assert list((tmp_path / "ws" / "gone").iterdir()) == []
