"""The grade-submission flow end to end, on the fake sandbox and a real Prefect test server."""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fakes import BUG, FIX, diff, fake_pytest, junit
from gradeflow import grade, load_task
from gradeflow.errors import SandboxUnavailable
from gradeflow.models.evidence import TestCaseResult, TestRunEvidence
from gradeflow.sandbox import CommandResult, FakeCall, FakeSandboxFactory
from gradeflow.tasks.baseline import Baseline, pack_tests
from gradeflow.tasks.repo import BaseRef

pytestmark = pytest.mark.usefixtures("prefect")


def test_reference_fix_passes_with_every_result_field(repo_task: Callable[..., Path], fake: FakeSandboxFactory) -> None:
    result = grade(load_task(repo_task()), patch=diff(BUG, FIX), sandbox=fake, submission_id="s-1")
    assert (result.status, result.passed, result.score, result.decision) == (
        "graded",
        True,
        1.0,
        "merge-candidate",
    )
    assert [c.name for c in result.components] == ["constraints", "test_infrastructure", "tamper", "tests"]
    assert result.component("tests").details["fail_to_pass"] == {"tests/test_calc.py::test_div": "passed"}
    assert result.files_changed == ["src/calc.py"]
    assert (result.lines_added, result.lines_removed) == (3, 1)
    assert "+        raise ZeroDivisionError('no')" in result.patch
    assert (
        result.summary()
        == "PASS 1.000 (constraints=1.00✓(gate), test_infrastructure=1.00✓(gate), tamper=1.00✓(gate), tests=1.00✓)"
    )
    assert set(result.timings) >= {
        "baseline",
        "snapshot",
        "constraints",
        "tests",
        "quality",
        "perf",
        "combine",
    }
    assert result.environment is not None and result.environment.sandbox == "fake"
    payload = result.model_dump(mode="json")
    for key in (
        "task_id",
        "submission_id",
        "status",
        "score",
        "passed",
        "decision",
        "reason_codes",
        "components",
        "files_changed",
        "lines_added",
        "lines_removed",
        "patch",
        "summary",
        "gradeflow_version",
        "timings",
    ):
        assert key in payload


def test_empty_submission_scores_zero(repo_task: Callable[..., Path], fake: FakeSandboxFactory) -> None:
    result = grade(load_task(repo_task()), patch="", sandbox=fake)
    assert (result.score, result.passed, result.decision) == (0.0, False, "retry")
    assert result.reason_codes[:2] == ["empty-patch", "fail-to-pass-failing"]


def test_protected_test_edit_is_recorded_then_restored(repo_task: Callable[..., Path]) -> None:
    seen: list[str] = []

    def handler(call: FakeCall) -> CommandResult:
        seen.append(call.read("tests/test_calc.py"))
        call.write_output("junit.xml", junit({"test_div": "passed", "test_add": "passed"}))
        return call.result(0)

    tampered = diff("def test_div(): ...\ndef test_add(): ...", "def test_div(): pass", "tests/test_calc.py")
    result = grade(load_task(repo_task()), patch=tampered, sandbox=FakeSandboxFactory(handler))
    assert result.component("constraints").reason_codes == ["protected-file-modified"]
    assert (result.score, result.decision) == (0.0, "rejected")
    assert seen[-1] == "def test_div(): ...\ndef test_add(): ...\n"  # the run saw the base's file


def test_hidden_tests_are_present_for_the_run_only(
    repo_task: Callable[..., Path], tmp_path: Path, fake: FakeSandboxFactory
) -> None:
    hidden = tmp_path / "hidden" / "tests"
    hidden.mkdir(parents=True)
    (hidden / "test_hidden.py").write_text("def test_hidden(): ...\n")
    task = repo_task(
        tests={
            "command": "pytest --junitxml={junit}",
            "hidden": "./hidden",
            "fail_to_pass": ["tests/test_calc.py::test_div", "tests/test_hidden.py::test_hidden"],
        }
    )
    result = grade(load_task(task), patch=diff(BUG, FIX), sandbox=fake)
    assert result.component("tests").details["fail_to_pass"]["tests/test_hidden.py::test_hidden"] == "passed"
    assert "test_hidden" not in result.patch and result.files_changed == ["src/calc.py"]


def test_baseline_is_cached_across_flow_runs(repo_task: Callable[..., Path], fake: FakeSandboxFactory) -> None:
    task = load_task(repo_task(task_id="cached"))
    built = grade(task, patch=diff(BUG, FIX), sandbox=fake)
    first = len(fake.calls)
    cached = grade(task, patch=diff(BUG, FIX), sandbox=fake)
    assert first == 2 and len(fake.calls) == 3  # base + candidate, then the candidate only
    # The cached baseline (its base run kept as bytes) grades exactly as the one just built.
    assert cached.passed and _without_time(cached.components) == _without_time(built.components)


def _without_time(components: list[Any]) -> list[dict[str, Any]]:
    """The components as data, less the tests step's time breakdown (seconds differ from run to run)."""
    dumped = [c.model_dump() for c in components]
    for component in dumped:
        component["details"].pop("time", None)
    return dumped


def test_a_baseline_unpickles_its_base_run_once_and_only_when_read() -> None:
    evidence = TestRunEvidence(
        exit_code=1, cases=[TestCaseResult(classname="t", name=f"n{i}", outcome="passed") for i in range(50)]
    )
    ref = BaseRef(kind="folder", location="/base", revision="0" * 40)
    baseline = Baseline(base=ref, key="k", pristine=Path("/p"), tests_record=pack_tests(evidence))
    assert "tests" not in baseline.__dict__ and baseline.tests == evidence
    assert baseline.tests is baseline.tests  # unpickled once
    copy = pickle.loads(pickle.dumps(baseline))
    assert "tests" not in copy.__dict__  # the unpickled evidence is not pickled again beside its bytes
    assert copy.tests == evidence and copy == baseline


def test_sandbox_failure_is_retried_then_inconclusive(repo_task: Callable[..., Path]) -> None:
    attempts: list[str] = []

    def broken(call: FakeCall) -> CommandResult:
        attempts.append(call.command)
        raise SandboxUnavailable("the engine does not answer")

    result = grade(load_task(repo_task(task_id="noengine")), patch=diff(BUG, FIX), sandbox=FakeSandboxFactory(broken))
    assert (result.status, result.score, result.decision) == ("inconclusive", None, "inconclusive")
    assert result.reason_codes == ["sandbox-unavailable"] and result.exit_code == 3
    assert len(attempts) == 3  # the first try and two retries


def test_workspaces_are_discarded_even_when_a_step_fails(
    repo_task: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspaces: list[Path] = []

    def flaky_engine(call: FakeCall) -> CommandResult:
        workspaces.append(call.workspace)
        if "ZeroDivisionError" in call.read("src/calc.py"):
            raise SandboxUnavailable("the engine went away")
        return fake_pytest(call)

    # A private temp folder: other processes' grades (served deployments, workers) may use the shared one.
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    result = grade(
        load_task(repo_task(task_id="midway")), patch=diff(BUG, FIX), sandbox=FakeSandboxFactory(flaky_engine)
    )
    assert (result.status, result.reason_codes, result.files_changed) == (
        "inconclusive",
        ["sandbox-unavailable"],
        ["src/calc.py"],
    )
    assert workspaces and all(w.is_relative_to(private) for w in workspaces)  # the grade used the private folder
    assert not any(w.exists() for w in workspaces)  # each removed with its folder


def test_an_internal_bug_is_an_inconclusive_outcome_not_a_crash(repo_task: Callable[..., Path]) -> None:
    def buggy(call: FakeCall) -> CommandResult:
        raise KeyError("oops")

    result = grade(load_task(repo_task(task_id="bug")), patch="", sandbox=FakeSandboxFactory(buggy))
    assert (result.status, result.reason_codes) == ("inconclusive", ["internal-error"])
    assert "KeyError" in result.messages[0]


def test_broken_baseline_is_inconclusive_and_never_cached(repo_task: Callable[..., Path]) -> None:
    calls: list[str] = []

    def no_report(call: FakeCall) -> CommandResult:
        calls.append(call.command)
        return call.result(2, stderr="ImportError")

    task = load_task(repo_task(task_id="broken-base"))
    for _ in range(2):
        result = grade(task, patch=diff(BUG, FIX), sandbox=FakeSandboxFactory(no_report))
        assert (result.status, result.reason_codes) == ("inconclusive", ["baseline-broken"])
    assert len(calls) == 2  # not retried (not the sandbox's fault), not cached


def test_failing_setup_on_base_is_inconclusive(repo_task: Callable[..., Path]) -> None:
    def handler(call: FakeCall) -> CommandResult:
        return call.result(1) if call.command == "make setup" else call.result(0)

    result = grade(
        load_task(repo_task(task_id="setup", setup="make setup")),
        patch="",
        sandbox=FakeSandboxFactory(handler),
    )
    assert (result.status, result.reason_codes) == ("inconclusive", ["setup-failed"])


def test_candidate_timeout_is_a_real_zero(repo_task: Callable[..., Path]) -> None:
    def handler(call: FakeCall) -> CommandResult:
        if "ZeroDivisionError" in call.read("src/calc.py"):
            return call.result(None, timed_out=True, duration=600.0)
        call.write_output("junit.xml", junit({"test_div": "failed", "test_add": "passed"}))
        return call.result(1)

    result = grade(load_task(repo_task(task_id="timeout")), patch=diff(BUG, FIX), sandbox=FakeSandboxFactory(handler))
    assert (result.status, result.score, result.passed) == ("graded", 0.0, False)
    assert result.component("tests").reason_codes == ["test-timeout"]


@pytest.mark.parametrize(
    ("patch", "code"),
    [
        (
            "diff --git a/../x b/../x\nnew file mode 100644\n--- /dev/null\n+++ b/../x\n@@ -0,0 +1 @@\n+pwned\n",
            "path-escape",
        ),
        ("diff --git a//tmp/x b//tmp/x\n--- /dev/null\n+++ b//tmp/x\n@@ -0,0 +1 @@\n+pwned\n", "path-escape"),
        (
            "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,1 +1,1 @@\n"
            "-def nothing_like_this():\n+def other():\n",
            "patch-does-not-apply",
        ),
        ("this is not a diff at all\n", "patch-does-not-apply"),
    ],
)
def test_bad_patches_are_graded_not_crashed(
    repo_task: Callable[..., Path], fake: FakeSandboxFactory, patch: str, code: str
) -> None:
    result = grade(load_task(repo_task()), patch=patch, sandbox=fake)
    assert (result.status, result.passed, result.score, result.reason_codes) == ("graded", False, 0.0, [code])
    escaped = Path("/tmp/x")
    assert not escaped.is_file() or escaped.read_text() != "pwned\n"


def test_a_symlink_pointing_out_is_a_path_escape(repo_task: Callable[..., Path], fake: FakeSandboxFactory) -> None:
    patch = (
        "diff --git a/src/leak b/src/leak\nnew file mode 120000\n--- /dev/null\n+++ b/src/leak\n"
        "@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n"
    )
    result = grade(load_task(repo_task()), patch=patch, sandbox=fake)
    assert result.reason_codes == ["path-escape"]


def test_workspace_submission_diffs_against_base(
    repo_task: Callable[..., Path], tmp_path: Path, fake: FakeSandboxFactory
) -> None:
    task = repo_task()
    checkout = tmp_path / "checkout"
    import shutil

    shutil.copytree(tmp_path / "repo", checkout)
    (checkout / "src" / "calc.py").write_text(FIX)
    (checkout / "src" / "new_helper.py").write_text("X = 1\n")  # untracked new file: included
    (checkout / "debug.log").write_text("noise\n")  # git-ignored: excluded
    (checkout / ".git").mkdir()
    (checkout / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # VCS folder: excluded
    (checkout / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")  # binary: changed, not read
    result = grade(load_task(task), workspace=checkout, sandbox=fake)
    assert result.passed
    assert sorted(result.files_changed) == ["logo.png", "src/calc.py", "src/new_helper.py"]
    assert "debug.log" not in result.patch and "refs/heads" not in result.patch


def test_a_symlink_out_of_a_checkout_is_refused(
    repo_task: Callable[..., Path], tmp_path: Path, fake: FakeSandboxFactory
) -> None:
    task = repo_task()
    checkout = tmp_path / "checkout2"
    import shutil

    shutil.copytree(tmp_path / "repo", checkout)
    (checkout / "secrets").symlink_to("/etc")
    result = grade(load_task(task), workspace=checkout, sandbox=fake)
    assert result.reason_codes == ["path-escape"]
