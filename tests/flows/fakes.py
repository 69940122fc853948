"""Helpers for flow tests: a buggy module, its fix, JUnit writing and a fake pytest."""

from __future__ import annotations

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
    """Pass test_div when the source raises ZeroDivisionError; test_add always passes."""
    fixed = "ZeroDivisionError" in call.read("src/calc.py")
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
