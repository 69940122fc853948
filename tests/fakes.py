"""A tiny buggy repository with its task spec, its fix, JUnit writing and a fake pytest, shared by the tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gradeflow.errors import SandboxUnavailable
from gradeflow.sandbox import CommandResult, FakeCall

FIX = "def divide(a, b):\n    if b == 0:\n        raise ZeroDivisionError('no')\n    return a / b\n"
BUG = "def divide(a, b):\n    return a / b if b else None\n"


def junit(cases: dict[str, str]) -> str:
    """A JUnit report with one testcase per ``[classname::]name -> outcome`` (classname tests.test_calc)."""
    body = []
    for key, outcome in cases.items():
        classname, _, name = key.rpartition("::")
        inner = {"failed": "<failure message='boom'/>", "skipped": "<skipped/>", "error": "<error/>"}.get(outcome, "")
        body.append(f'<testcase classname="{classname or "tests.test_calc"}" name="{name}">{inner}</testcase>')
    return f'<testsuites><testsuite name="t">{"".join(body)}</testsuite></testsuites>'


def fake_pytest(call: FakeCall) -> CommandResult:
    """Pass test_div when the source raises ZeroDivisionError; test_add always passes.

    ``BROKEN`` in the source makes the sandbox unavailable (an infrastructure failure).
    """
    source = call.read("src/calc.py")
    if "BROKEN" in source:
        raise SandboxUnavailable("fake sandbox: the engine went away")
    fixed = "ZeroDivisionError" in source
    hidden = bool(call.read("tests/test_hidden.py"))
    cases = {"test_div": "passed" if fixed else "failed", "test_add": "passed"}
    if hidden:
        cases["tests.test_hidden::test_hidden"] = "passed" if fixed else "failed"
    call.write_output("junit.xml", junit(cases))
    return call.result(exit_code=0 if all(v == "passed" for v in cases.values()) else 1)


def diff(old: str, new: str, path: str = "src/calc.py") -> str:
    """A git-style unified diff replacing the whole of ``path``."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    hunk = [f"-{line}" for line in old_lines] + [f"+{line}" for line in new_lines]
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -1,{len(old_lines)} +1,{len(new_lines)} @@\n" + "\n".join(hunk) + "\n"
    )


def write_task(folder: Path, task_id: str = "calc", **overrides: Any) -> Path:
    """The buggy repository at ``folder/repo`` and its task spec at ``folder/task.yaml`` (returned)."""
    repo = folder / "repo"
    (repo / "src").mkdir(parents=True, exist_ok=True)
    (repo / "tests").mkdir(exist_ok=True)
    (repo / "src" / "calc.py").write_text(BUG)
    (repo / "tests" / "test_calc.py").write_text("def test_div(): ...\ndef test_add(): ...\n")
    (repo / ".gitignore").write_text("*.log\n")
    spec: dict[str, Any] = {
        "task_id": task_id,
        "type": "bugfix",
        "repo": "./repo",
        "tests": {
            "command": "pytest --junitxml={junit}",
            "fail_to_pass": ["tests/test_calc.py::test_div"],
            "pass_to_pass": ["tests/test_calc.py::test_add"],
        },
        "constraints": {"protected": ["tests/**"]},
        **overrides,
    }
    (folder / "task.yaml").write_text(yaml.safe_dump(spec))
    return folder / "task.yaml"
