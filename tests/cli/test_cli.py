"""The gradeflow command on the bundled examples and on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from builders import EXAMPLES
from gradeflow.cli import main

GOOD = {
    "task_id": "t",
    "type": "bugfix",
    "repo": "./repo",
    "tests": {"command": "pytest --junitxml={junit}", "fail_to_pass": ["tests/test_a.py::test_a"]},
}


def _task(tmp_path: Path, text: str | None = None, **changes: object) -> Path:
    (tmp_path / "repo").mkdir(exist_ok=True)
    path = tmp_path / "task.yaml"
    path.write_text(text if text is not None else yaml.safe_dump({**GOOD, **changes}))
    return path


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gradeflow.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    ("text", "changes", "expected"),
    [
        (None, {"colour": "red"}, "unknown key 'colour'"),
        (None, {"type": "rewrite"}, "type: Input should be 'bugfix', 'feature', 'refactor' or 'perf'"),
        (
            None,
            {"tests": {"command": "pytest"}},
            "tests.command: tests.command must contain the placeholder {junit}",
        ),
        (
            None,
            {"tests": {"command": "pytest {junit}", "timeout": "soon"}},
            "tests.timeout: Input should be a valid number",
        ),
        ("task_id: [unclosed\n", {}, "YAML syntax error"),
        ("- just\n- a list\n", {}, "a task spec is a YAML mapping"),
        (None, {"repo": "./nowhere"}, "repo: "),
        (None, {"grading": {"profile": "no-such-profile"}}, "no such profile"),
        (None, {"repo": "./task.yaml"}, "repo: "),
        (None, {"repo": "https://github.com/acme/calc.git"}, "is a URL"),
        (None, {"repo": "git@github.com:acme/calc.git"}, "is a URL"),
        (None, {"environment": {"cpus": 1e9}}, "environment.cpus: Input should be less than or equal to 1024"),
        (None, {"environment": {"cpus": 0.001}}, "environment.cpus: Input should be greater than or equal to 0.01"),
        (None, {"environment": {"memory": "99999999g"}}, "environment.memory: '99999999g' is outside 6m..1024g"),
        (None, {"environment": {"memory": "1m"}}, "environment.memory: '1m' is outside 6m..1024g"),
        (None, {"environment": {"memory": "lots"}}, "environment.memory: 'lots' is not a size"),
        (None, {"environment": {"pids": 10**12}}, "environment.pids: Input should be less than or equal to 4194304"),
        (
            None,
            {"tests": {"command": "pytest {junit}", "timeout": 1e12}},
            "tests.timeout: Input should be less than or equal to 86400",
        ),
        (None, {"grading": {"weights": {"tests": float("inf")}}}, "grading.weights.tests: Input should be a finite"),
        (None, {"grading": {"weights": {"tests": float("nan")}}}, "grading.weights.tests: Input should be a finite"),
        (None, {"grading": {"weights": {"tests": -1}}}, "grading.weights.tests: Input should be greater than or equal"),
        (None, {"grading": {"weights": {"tests": 0}}}, "grading.weights: the weights sum to 0"),
        (None, {"graders": [{"use": "m:G", "weight": float("inf")}]}, "graders.0.weight: Input should be a finite"),
        (None, {"graders": [{"use": "no_such_module_x:Grader"}]}, "graders: cannot load 'no_such_module_x:Grader'"),
        (None, {"graders": [{"use": "json:JSONDecoder"}]}, "is not a subclass of gradeflow.graders.Grader"),
        (
            "task_id: t\ntype: bugfix\nrepo: ./repo\ntests: {command: 'pytest {junit}'}\ntype: feature\n",
            {},
            "task.yaml:5:1: duplicate key 'type' (first on line 2)",
        ),
        (
            "task_id: t\ntype: bugfix\nrepo: ./repo\ntests:\n  command: 'pytest {junit}'\n  timeout: 5\n  timeout: 9\n",
            {},
            "task.yaml:7:3: duplicate key 'timeout' (first on line 6)",
        ),
    ],
)
def test_bad_task_specs_exit_2_with_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str | None,
    changes: dict[str, object],
    expected: str,
) -> None:
    task = _task(tmp_path, text, **changes)
    assert main(["grade", str(task), "--patch", str(task)]) == 2
    err = capsys.readouterr().err.strip()
    assert (expected in err and str(task.name) in err) or expected in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def _no_flow_run(*args: object, **kwargs: object) -> None:
    raise AssertionError("a flow run was started")


@pytest.fixture
def no_flow_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a grade or a validation reaches its flow: bad input is caught before."""
    import gradeflow.flows.grade
    import gradeflow.flows.validate

    monkeypatch.setattr(gradeflow.flows.grade, "grade_submission", _no_flow_run)
    monkeypatch.setattr(gradeflow.flows.validate, "validate_task", _no_flow_run)


@pytest.mark.usefixtures("no_flow_run")
@pytest.mark.parametrize("submission_id", ["../../x", "a/b", "", ".hidden", "x" * 129])
def test_a_bad_submission_id_is_exit_2_before_any_flow_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], submission_id: str
) -> None:
    task = _task(tmp_path)
    assert main(["grade", str(task), "--patch", str(task), "--submission-id", submission_id]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gradeflow: error: --submission-id: ") and len(err.splitlines()) == 1


@pytest.mark.usefixtures("no_flow_run")
@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("def broken(:\n", "SyntaxError"),
        (
            "from gradeflow.graders import Grader\nclass G(Grader):\n    def __init__(self, x): ...\n",
            "TypeError",
        ),
        ("raise ImportError('needs a missing wheel')\n", "needs a missing wheel"),
    ],
)
@pytest.mark.parametrize("command", ["grade", "validate"])
def test_a_custom_grader_that_cannot_load_is_exit_2_before_any_flow_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    module: str,
    expected: str,
    command: str,
) -> None:
    (tmp_path / "bad_grader_mod.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "bad_grader_mod", raising=False)
    task = _task(tmp_path, graders=[{"use": "bad_grader_mod:G"}])
    extra = ["--patch", str(task)] if command == "grade" else []
    assert main([command, str(task), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert "graders: cannot load 'bad_grader_mod:G'" in err and expected in err and len(err.splitlines()) == 1


@pytest.mark.usefixtures("no_flow_run")
def test_a_repo_that_is_a_broken_archive_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "repo.tar.gz").write_bytes(b"not a tarball")
    task = _task(tmp_path, repo="./repo.tar.gz")
    assert main(["grade", str(task), "--patch", str(task)]) == 2
    assert "is a file, not a git repository, a folder or a .tar.gz" in capsys.readouterr().err


class _Engine:
    def __init__(self, cpus: int) -> None:
        self.cpus = cpus

    def info(self) -> dict[str, int]:
        return {"NCPU": self.cpus}

    def close(self) -> None: ...


@pytest.mark.usefixtures("no_flow_run")
def test_more_cpus_than_the_engine_has_is_exit_2_at_preflight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import docker

    monkeypatch.setattr(docker, "from_env", lambda **_: _Engine(2))
    task = _task(tmp_path, environment={"sandbox": "docker", "cpus": 3})
    assert main(["grade", str(task), "--patch", str(task)]) == 2
    err = capsys.readouterr().err.strip()
    assert "environment.cpus: 3 is more than the 2 CPUs of the docker engine" in err and len(err.splitlines()) == 1
    assert main(["validate", str(task)]) == 2


def test_more_cpus_than_the_real_engine_has_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    import docker

    try:
        client = docker.from_env(timeout=10)
        available = int(client.info()["NCPU"])
    except docker.errors.DockerException as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI runs every docker test, but no docker engine answers ({exc})")
        pytest.skip(f"no docker engine answers ({exc})")
    task = _task(tmp_path, environment={"sandbox": "docker", "cpus": available + 1})
    assert main(["grade", str(task), "--patch", str(task)]) == 2
    assert f"more than the {available} CPUs of the docker engine" in capsys.readouterr().err


def test_missing_task_file_and_patch_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grade", str(tmp_path / "absent.yaml"), "--patch", "x.diff"]) == 2
    assert "absent.yaml: task spec not found" in capsys.readouterr().err
    task = _task(tmp_path)
    assert main(["grade", str(task), "--patch", str(tmp_path / "absent.diff")]) == 2
    assert "--patch: cannot read" in capsys.readouterr().err


def test_base_revision_not_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    task = _task(tmp_path, base_revision="deadbeef")
    assert main(["grade", str(task), "--patch", str(task)]) == 2
    err = capsys.readouterr().err.strip()
    assert "base_revision: deadbeef not found" in err and len(err.splitlines()) == 1


def test_usage_errors_exit_2() -> None:
    proc = _run_cli("grade", "task.yaml")  # neither --patch nor --workspace
    assert proc.returncode == 2 and "one of the arguments --workspace --patch is required" in proc.stderr


def test_schema_lists_the_task_spec_fields(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert {"task_id", "type", "repo", "tests", "constraints", "quality", "perf", "grading"} <= set(
        schema["properties"]
    )


def test_profiles_lists_the_shipped_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles"]) == 0
    assert {"default", "strict"} <= {line.split("\t")[0] for line in capsys.readouterr().out.splitlines()}


@pytest.mark.usefixtures("prefect")
@pytest.mark.parametrize("example", ["calc", "tidy", "perf"])
def test_examples_reference_passes_bad_fails(example: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    task = str(EXAMPLES / example / "task.yaml")
    out = tmp_path / "result.json"
    assert (
        main(
            [
                "grade",
                task,
                "--patch",
                str(EXAMPLES / example / "reference.diff"),
                "--json",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result == json.loads(out.read_text())
    assert (result["status"], result["passed"], result["decision"]) == ("graded", True, "merge-candidate")
    assert main(["grade", task, "--patch", str(EXAMPLES / example / "bad.diff")]) == 1
    text = capsys.readouterr().out
    assert text.startswith("FAIL 0.000") and "reasons: " in text


@pytest.mark.usefixtures("prefect")
@pytest.mark.parametrize("example", ["calc", "tidy", "perf"])
def test_validate_accepts_the_examples(example: str, capsys: pytest.CaptureFixture[str]) -> None:
    task = str(EXAMPLES / example / "task.yaml")
    assert main(["validate", task, "--reference", str(EXAMPLES / example / "reference.diff")]) == 0
    assert capsys.readouterr().out.startswith("VALID: ")


@pytest.mark.usefixtures("prefect")
def test_validate_lists_every_problem(capsys: pytest.CaptureFixture[str]) -> None:
    task = str(EXAMPLES / "calc" / "task.yaml")
    assert main(["validate", task, "--reference", str(EXAMPLES / "calc" / "bad.diff")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("INVALID (1 problems)") and "the reference patch does not pass" in out


def test_json_output_is_clean_json_on_stdout(tmp_path: Path) -> None:
    proc = _run_cli(
        "grade",
        str(EXAMPLES / "calc" / "task.yaml"),
        "--patch",
        str(EXAMPLES / "calc" / "reference.diff"),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["passed"] is True
