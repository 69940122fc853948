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
