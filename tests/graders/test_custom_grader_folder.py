"""A custom grader loads from the task file's folder as well as from installed packages: the ``NoTodoGrader`` of
docs/how-to/task-authoring.md, copied from the page as written into ``mypkg/checks.py`` beside a task file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from builders import make_task
from gradeflow.errors import SpecError
from gradeflow.graders.composite import load_custom_grader
from gradeflow.spec import load_task

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "task-authoring.md"
USE = "mypkg_docs.checks:NoTodoGrader"


def _page_grader() -> str:
    text = PAGE.read_text()
    return text[text.index("## Custom graders") :].split("```python\n", 1)[1].split("```", 1)[0]


def _task(home: Path, **grader: object) -> Path:
    (home / "repo").mkdir(parents=True, exist_ok=True)
    tests = {"command": "pytest --junitxml={junit}", "fail_to_pass": ["t.py::f"]}
    spec = make_task(repo="./repo", tests=tests, graders=[{"use": USE, "weight": 0.2, "role": "objective", **grader}])
    (home / "task.yaml").write_text(yaml.safe_dump(spec))
    return home / "task.yaml"


@pytest.fixture(autouse=True)
def _forget_the_module() -> None:
    for name in [n for n in sys.modules if n.startswith("mypkg_docs")]:
        del sys.modules[name]


def test_the_page_grader_loads_from_beside_the_task_file(tmp_path: Path) -> None:
    package = tmp_path / "mypkg_docs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "checks.py").write_text(_page_grader())
    task = load_task(_task(tmp_path))
    assert task.graders[0].folder == str(tmp_path.resolve())
    grader = load_custom_grader(task.graders[0])
    assert (grader.name, grader.role) == ("no_todo", "objective")
    assert str(tmp_path.resolve()) not in sys.path  # looked in for the import only


def test_a_grader_found_nowhere_names_where_it_was_looked_for(tmp_path: Path) -> None:
    task = load_task(_task(tmp_path))
    with pytest.raises(SpecError, match=r"No module named 'mypkg_docs' \(looked in .* and the installed packages\)"):
        load_custom_grader(task.graders[0])


def test_folder_null_means_installed_packages_only(tmp_path: Path) -> None:
    package = tmp_path / "mypkg_docs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "checks.py").write_text(_page_grader())
    task = load_task(_task(tmp_path, folder=None))
    with pytest.raises(SpecError, match="No module named 'mypkg_docs'"):
        load_custom_grader(task.graders[0])
