"""The documentation's examples run as written (folders and ports parameterised) and print what the pages show.

Shell lines run in bash with ``.venv/bin`` first on ``PATH`` (as after ``. .venv/bin/activate``), on the
session's gradeflow home and its local Prefect server; Python blocks run as they are. Which fence each
test covers: ``tests/docs_fences.py``. The service's examples run in ``tests/service/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from docs_fences import (
    AGENTS,
    AUTHORING,
    DECISIONS,
    ENVIRONMENTS,
    EVALUATIONS,
    FIRST_GRADE,
    GRAPH,
    INSTALL,
    OWN_TASK,
    ROOT,
    SANDBOXES,
    TASK_SPEC,
    fence,
    matches,
    shown,
)
from gradeflow.models import TaskSpec
from gradeflow.models.spec import EnvironmentSpec
from gradeflow.profiles import available_profiles, load_profile

CALC = ROOT / "examples" / "calc"
BIN = Path(sys.executable).parent


def _sh(line: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``line`` run by bash as a user would type it, the venv's commands first on ``PATH``."""
    full = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **env}
    full.pop("PREFECT_API_URL", None)  # one-shot commands use the home's local server, as for a user
    for name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):  # a user's shell, not a recipe of CI's ``make test``
        full.pop(name, None)
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=full, capture_output=True, text=True, timeout=1200)


@pytest.fixture
def as_a_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """No server named, as for a user; whatever ``grade()`` sets (the local server's URL) is undone after."""
    monkeypatch.setenv("PREFECT_API_URL", "")
    monkeypatch.delenv("PREFECT_API_URL")


def _commands(text: str, prefix: str = "gradeflow ") -> list[str]:
    """The fence's command lines (continuations joined), comments after them kept for bash to drop."""
    joined = text.replace("\\\n", " ")
    return [line for line in joined.splitlines() if line.startswith(prefix)]


def _calc_copy(folder: Path) -> Path:
    """A copy of the calc example (task spec, repository, hidden tests, patches) in ``folder``."""
    shutil.copytree(CALC, folder)
    return folder


def _fixed_checkout(tmp_path: Path) -> Path:
    checkout = tmp_path / "checkout"
    shutil.copytree(CALC / "repo", checkout)
    subprocess.run(["git", "apply", str(CALC / "reference.diff")], cwd=checkout, check=True)
    return checkout


@pytest.mark.slow
def test_the_grade_examples_run_as_written(tmp_path: Path) -> None:
    block = fence(FIRST_GRADE, "gradeflow grade examples/calc/task.yaml --patch")
    lines = _commands(block.text)
    graded = _sh(lines[0], ROOT)
    assert graded.returncode == 0, graded.stderr
    assert graded.stdout.splitlines()[: len(shown(block.text, lines[0]))] == shown(block.text, lines[0])
    out = tmp_path / "result.json"
    workspace = lines[1].replace("path/to/agent/checkout", str(_fixed_checkout(tmp_path)))
    assert _sh(workspace.replace("result.json", str(out)), ROOT).returncode == 0
    assert json.loads(out.read_text())["passed"] is True
    assert _sh(lines[2], ROOT).returncode == 0
    schema = _sh(lines[3], ROOT)
    assert json.loads(schema.stdout)["title"] == "TaskSpec"
    profiles = _sh(lines[4], ROOT).stdout.splitlines()
    assert [line.split("\t")[0] for line in profiles] == available_profiles()


@pytest.mark.slow
@pytest.mark.usefixtures("as_a_user")
def test_the_python_api_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    block = fence(FIRST_GRADE, "from gradeflow import grade, load_task")
    folder = _calc_copy(tmp_path / "calc")
    shutil.copy(CALC / "reference.diff", folder / "agent.diff")
    monkeypatch.chdir(folder)
    names: dict[str, Any] = {}
    exec(compile(block.text, FIRST_GRADE, "exec"), names)
    result = names["result"]
    summary = re.search(r'result\.summary\(\)\s+# "(.+)"', block.text)
    assert summary and matches(summary.group(1), result.summary()), result.summary()
    assert set(result.component("tests").details["fail_to_pass"].values()) <= {"passed", "failed", "missing"}


@pytest.mark.slow
@pytest.mark.usefixtures("as_a_user")
def test_the_custom_grader_loads_beside_the_task(tmp_path: Path) -> None:
    from gradeflow import grade, load_task

    folder = _calc_copy(tmp_path / "calc")
    (folder / "mypkg").mkdir()
    (folder / "mypkg" / "checks.py").write_text(fence(AUTHORING, "from gradeflow.graders import Grader").text)
    declared = re.search(r"Declare it in the task spec as `(graders: [^`]+)`", (ROOT / AUTHORING).read_text())
    assert declared, "the page's graders line"
    with (folder / "task.yaml").open("a") as spec:
        spec.write(declared.group(1) + "\n")
    checkout = _fixed_checkout(tmp_path)
    with (checkout / "src" / "calc.py").open("a") as source:
        source.write("# TODO: more operations\n")
    result = grade(load_task(folder / "task.yaml"), workspace=checkout)
    assert result.component("no_todo").messages == ["TODO in src/calc.py"]


def _git(cwd: Path, *args: str) -> str:
    run = subprocess.run(
        ["git", "-c", "user.name=d", "-c", "user.email=d@d", *args], cwd=cwd, check=True, text=True, capture_output=True
    )
    return run.stdout.strip()


@pytest.mark.slow
def test_your_own_task_runs_as_written(tmp_path: Path) -> None:
    """``task new`` on a repository, the agent's checkout, then (with the fix made there) its grade."""
    repo = tmp_path / "calc"
    shutil.copytree(CALC / "repo", repo)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    shutil.copy(CALC / "reference.diff", tmp_path / "fix.diff")
    derive, checkout, graded = _commands(fence(OWN_TASK, "gradeflow task new --repo").text)
    done = _sh(derive.replace("3f2a9c1", _git(repo, "rev-parse", "HEAD")), tmp_path)
    assert done.returncode == 0, done.stderr
    assert _sh("gradeflow validate tasks/calc-add/task.yaml", tmp_path).returncode == 0
    done = _sh(checkout, tmp_path)
    assert done.returncode == 0, done.stderr
    assert _git(tmp_path / "work", "rev-list", "--count", "HEAD") == "1"
    _git(tmp_path / "work", "apply", str(tmp_path / "fix.diff"))  # the agent's work
    done = _sh(graded, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PASS"), done.stdout


def test_the_spec_reference_is_a_valid_spec() -> None:
    spec = yaml.safe_load(fence(TASK_SPEC, "task_id: calc-divzero").text)
    TaskSpec.model_validate(spec)


def test_the_profile_example_loads(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(fence(DECISIONS, "name: mine").text)
    assert load_profile(str(tmp_path / "mine.yaml")).name == "mine"


def test_the_docker_environment_is_a_valid_spec() -> None:
    EnvironmentSpec.model_validate(
        yaml.safe_load(fence(SANDBOXES, "environment: {sandbox: docker").text)["environment"]
    )


def test_the_shared_setup_example_is_a_valid_spec() -> None:
    example = yaml.safe_load(fence(ENVIRONMENTS, "setup: pip install -e .").text)
    environment = EnvironmentSpec.model_validate(example["environment"])
    assert environment.shared_setup and environment.shared_inputs == ["tests/requirements/py3.txt"]
    assert example["setup"] == "pip install -e ."


def test_the_layout_names_the_package_folders() -> None:
    block = fence(GRAPH, "task.yaml + submission ──▶").text
    named = re.findall(r"^  ([a-z_]+(?:/|\.py))", block.split("src/gradeflow/")[1], re.M)
    package = ROOT / "src" / "gradeflow"
    assert named and all((package / name).exists() for name in named), named
    folders = {p.name + "/" for p in package.iterdir() if p.is_dir() and not p.name.startswith("_")}
    assert folders - {"__pycache__/"} <= set(named)


@pytest.mark.slow
def test_the_evaluation_examples_run_as_written(tmp_path: Path) -> None:
    """Every line but ``--dask-address``, which needs a Prefect server the cluster's workers reach:
    ``tests/service/test_dask.py::test_the_evaluations_dask_line_runs_as_written`` runs it on a local Dask cluster."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copytree(CALC, tmp_path / "tasks" / "calc")
    prediction = {"instance_id": "calc-divzero", "model_patch": (CALC / "reference.diff").read_text()}
    (tmp_path / "preds.jsonl").write_text(json.dumps({**prediction, "model_name_or_path": "agent-x"}) + "\n")
    lines = [line for line in _commands(fence(EVALUATIONS, "gradeflow evaluate examples/suite.yaml").text)]
    for line in lines:
        if "--dask-address" in line:
            continue
        done = _sh(line, tmp_path)
        assert done.returncode in (0, 1), (line, done.stderr)  # 1: some submission did not pass
        assert "Traceback" not in done.stderr, line
    assert json.loads((tmp_path / "summary.json").read_text())["resolved_ids"] == ["calc-divzero"]
    assert (tmp_path / "report.html").read_text().startswith("<!")


def _my_agent(folder: Path) -> Path:
    """An agent installed in ``folder`` (its ``bin/my-agent``) that makes the calc fix."""
    (folder / "bin").mkdir(parents=True)
    agent = folder / "bin" / "my-agent"
    agent.write_text(
        "#!/bin/sh\nsed -i 's/return None/raise ZeroDivisionError(\"division by zero is undefined\")/' src/calc.py\n"
    )
    agent.chmod(0o755)
    return folder


@pytest.mark.slow
def test_the_agent_example_runs_as_written(tmp_path: Path) -> None:
    shutil.copytree(CALC, tmp_path / "tasks" / "calc")
    installed = _my_agent(tmp_path / "opt" / "my-agent")
    block = fence(AGENTS, "gradeflow run tasks/*/task.yaml --agent 'my-agent")
    run, report = _commands(block.text)
    done = _sh(run.replace("/opt/my-agent", str(installed)), tmp_path, ANTHROPIC_API_KEY="not-a-key")
    assert done.returncode == 0, done.stderr
    compared = _sh(report, tmp_path)
    assert compared.returncode == 0 and "claude-x" in compared.stdout and "v7" in compared.stdout


@pytest.mark.slow
def test_oracle_and_nop_exit_as_shown(tmp_path: Path) -> None:
    shutil.copytree(CALC, tmp_path / "tasks" / "calc")
    for line in _commands(fence(AGENTS, "gradeflow run tasks/*/task.yaml --agent oracle").text):
        expected = int(re.search(r"# exit (\d)", line).group(1))  # type: ignore[union-attr]
        done = _sh(line, tmp_path)
        assert done.returncode == expected, (line, done.stderr)


@pytest.mark.slow
@pytest.mark.usefixtures("as_a_user")
def test_the_repo_env_example_runs_as_written(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)  # the example's paths are relative to the checkout
    names: dict[str, Any] = {}
    exec(compile(fence(AGENTS, "from gradeflow.agents import").text, AGENTS, "exec"), names)
    assert capsys.readouterr().out.splitlines()[-1] == "1.0 merge-candidate"


@pytest.mark.slow
@pytest.mark.docker
def test_the_docker_lines_run_as_written() -> None:
    if os.geteuid() != 0:
        pytest.skip("the page runs these lines as root")
    for line in fence(SANDBOXES, "# both as root").text.splitlines():
        if line and not line.startswith("#"):
            done = _sh(line, ROOT)
            assert done.returncode == 0, (line, done.stdout[-2000:], done.stderr[-2000:])


@pytest.mark.slow
def test_make_demo_runs_and_says_where_gradeflow_is() -> None:
    [line] = [x for x in fence(INSTALL, "make demo").text.splitlines() if x.startswith("make demo")]
    done = _sh(line, ROOT)
    assert done.returncode == 0, done.stdout[-3000:]
    assert ".venv/bin" in done.stdout.splitlines()[-1]
