"""Spec errors found when a session opens name the task file and the key, on one line with exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gradeflow.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "calc"
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "grading.profile": ({"grading": {"profile": "nosuch"}}, "grading.profile: nosuch: no such profile"),
    "base_revision": ({"base_revision": "deadbeef"}, "base_revision: deadbeef not found"),
    "repo": ({"repo": "https://github.com/acme/calc"}, "repo: https://github.com/acme/calc is a URL"),
    "graders": ({"graders": [{"use": "nope.mod:X"}]}, "graders: cannot load 'nope.mod:X'"),
}


@pytest.mark.parametrize("command", ["grade", "validate"])
@pytest.mark.parametrize("key", sorted(CASES))
def test_the_error_names_the_file_and_the_key(
    key: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change, message = CASES[key]
    spec = yaml.safe_load((EXAMPLE / "task.yaml").read_text())
    spec.update({"repo": str(EXAMPLE / "repo"), **change})
    spec["tests"]["hidden"] = str(EXAMPLE / "hidden_tests")
    task = tmp_path / "task.yaml"
    task.write_text(yaml.safe_dump(spec))
    extra = ["--patch", str(EXAMPLE / "reference.diff")] if command == "grade" else []
    assert main([command, str(task), *extra, "--sandbox", "local"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"gradeflow: error: {task}: {message}"), err
