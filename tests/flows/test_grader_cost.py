"""The grader's own cost is bounded: huge JUnit reports, a full disk, large binary files in the patch.

Each test feeds the input that broke it (issue 10) through the whole grade-submission flow on the fake
sandbox.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from fakes import BUG, FIX, diff, fake_pytest
from gradeflow import grade, load_task
from gradeflow.sandbox import CommandResult, FakeCall, FakeSandboxFactory
from gradeflow.tasks._binary_patch import MAX_EMBEDDED_BINARY
from gradeflow.tasks._junit import MAX_JUNIT_TESTCASES

pytestmark = pytest.mark.usefixtures("prefect")


def many_cases(count: int, *, fixed: bool) -> bytes:
    """A report with ``test_div``/``test_add`` plus ``count`` more testcases spread over 100 modules."""
    div = "" if fixed else "<failure message='boom'/>"
    head = (
        f'<testsuites><testsuite name="t"><testcase classname="tests.test_calc" name="test_div">{div}</testcase>'
        '<testcase classname="tests.test_calc" name="test_add"/>'
    )
    body = "".join(f'<testcase classname="tests.test_m{i % 100}" name="test_{i // 100}"/>' for i in range(count))
    return (head + body + "</testsuite></testsuites>").encode()


def writes_report(count: Callable[[bool], int]) -> FakeSandboxFactory:
    """A fake pytest whose report holds ``count(fixed)`` extra testcases."""

    def handler(call: FakeCall) -> CommandResult:
        fixed = "ZeroDivisionError" in call.read("src/calc.py")
        call.write_output("junit.xml", many_cases(count(fixed), fixed=fixed))
        return call.result(0 if fixed else 1)

    return FakeSandboxFactory(handler)


def test_a_report_over_the_testcase_cap_is_junit_too_large_for_the_candidate(repo_task: Callable[..., Path]) -> None:
    sandbox = writes_report(lambda fixed: MAX_JUNIT_TESTCASES if fixed else 10)
    result = grade(load_task(repo_task(task_id="toolarge")), patch=diff(BUG, FIX), sandbox=sandbox)
    assert (result.status, result.score, result.passed) == ("graded", 0.0, False)
    tests = result.component("tests")
    assert tests.reason_codes == ["junit-too-large"]
    assert f"more than {MAX_JUNIT_TESTCASES} testcases" in tests.messages[0]


def test_a_base_report_over_the_cap_is_an_inconclusive_baseline_broken_with_that_reason(
    repo_task: Callable[..., Path],
) -> None:
    sandbox = writes_report(lambda fixed: MAX_JUNIT_TESTCASES)
    result = grade(load_task(repo_task(task_id="toolarge-base")), patch=diff(BUG, FIX), sandbox=sandbox)
    assert (result.status, result.reason_codes) == ("inconclusive", ["baseline-broken"])
    assert "junit-too-large" in result.messages[0]


def test_a_report_over_the_byte_cap_is_junit_too_large(repo_task: Callable[..., Path]) -> None:
    def handler(call: FakeCall) -> CommandResult:
        if "ZeroDivisionError" not in call.read("src/calc.py"):
            return fake_pytest(call)
        call.write_output("junit.xml", b"<testsuite>" + b" " * (33 * 1024 * 1024) + b"</testsuite>")
        return call.result(0)

    result = grade(load_task(repo_task(task_id="toobig")), patch=diff(BUG, FIX), sandbox=FakeSandboxFactory(handler))
    assert result.component("tests").reason_codes == ["junit-too-large"]


def test_a_100k_testcase_report_grades_correctly(repo_task: Callable[..., Path]) -> None:
    # Every module repeats the same 1,000 names: the matching once compared each id with all of them.
    ids = [f"tests/test_m{m}.py::test_{n}" for m in (0, 42, 99) for n in (0, 500, 999)]
    task = load_task(
        repo_task(
            task_id="scale",
            tests={
                "command": "pytest --junitxml={junit}",
                "fail_to_pass": ["tests/test_calc.py::test_div"],
                "pass_to_pass": ["tests/test_calc.py::test_add", *ids],
            },
        )
    )
    result = grade(task, patch=diff(BUG, FIX), sandbox=writes_report(lambda fixed: 100_000))
    tests = result.component("tests")
    assert (result.status, tests.score, tests.reason_codes) == ("graded", 1.0, [])
    assert tests.details["pass_to_pass"] == dict.fromkeys(["tests/test_calc.py::test_add", *ids], "passed")
    assert tests.details["counts"] == {"passed": 100_002}


def test_a_command_that_fills_the_disk_is_disk_limit_exceeded(repo_task: Callable[..., Path]) -> None:
    def handler(call: FakeCall) -> CommandResult:
        if "ZeroDivisionError" in call.read("src/calc.py"):
            return call.result(1, disk_full=True, stderr="No space left on device")
        return fake_pytest(call)

    result = grade(load_task(repo_task(task_id="diskfull")), patch=diff(BUG, FIX), sandbox=FakeSandboxFactory(handler))
    assert (result.status, result.score) == ("graded", 0.0)
    assert result.component("tests").reason_codes == ["disk-limit-exceeded"]


def _checkout(task_file: Path, tmp_path: Path, files: dict[str, bytes]) -> Path:
    checkout = tmp_path / "checkout"
    subprocess.run(["cp", "-r", str(task_file.parent / "repo"), str(checkout)], check=True)
    (checkout / "src" / "calc.py").write_text(FIX)
    for name, data in files.items():
        (checkout / name).write_bytes(data)
    return checkout


def test_a_large_binary_file_is_path_size_and_hash_in_the_result_patch(
    repo_task: Callable[..., Path], tmp_path: Path, fake: FakeSandboxFactory
) -> None:
    # A NUL byte makes it binary to git whatever else it holds (1,024 random bytes lack one about 2% of the time).
    big, small = os.urandom(5 * 1024 * 1024), b"\0" + os.urandom(1023)
    task_file = repo_task(task_id="binary")
    checkout = _checkout(task_file, tmp_path, {"data.bin": big, "icon.bin": small})
    result = grade(load_task(task_file), workspace=checkout, sandbox=fake)
    assert result.status == "graded" and {"data.bin", "icon.bin"} <= set(result.files_changed)
    digest = hashlib.sha256(big).hexdigest()
    assert f"# gradeflow: binary content left out: data.bin, {len(big)} bytes, sha256 {digest}" in result.patch
    assert "Binary files /dev/null and b/data.bin differ" in result.patch
    data_section = result.patch.split("diff --git a/data.bin")[1].split("diff --git")[0]
    assert "GIT binary patch" not in data_section
    icon_section = result.patch.split("diff --git a/icon.bin")[1].split("diff --git")[0]
    assert "GIT binary patch" in icon_section  # a small binary stays embedded (and the patch applicable)
    assert len(result.patch) < 2 * MAX_EMBEDDED_BINARY + 10_000
    assert len(json.dumps(result.model_dump(mode="json"))) < 200_000
