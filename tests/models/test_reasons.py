"""The reason-code registry: every code the grade path writes is registered, profiles are checked against it."""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pytest

import gradeflow
from gradeflow.errors import BaselineBroken, GitFailed, InfraError, SandboxBroken, SandboxUnavailable
from gradeflow.models import Decision
from gradeflow.models.evidence import TamperKind
from gradeflow.models.reasons import BUILTIN_REASON_CODES, unknown_reason_codes
from gradeflow.profiles import available_profiles, load_profile
from gradeflow.tasks._git import git
from gradeflow.tasks._retry import retry_on_infra

PACKAGE = Path(gradeflow.__file__).resolve().parent
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+$")
# Kebab-case strings in the grade path that are not reason codes: Prefect task and flow names, git
# subcommands, encodings, folder prefixes, docker options, decisions and tamper-finding kinds.
NOT_CODES = {
    "check-ignore",
    "set-aside",  # a value of tests.pass_to_pass_failing_on_base
    "site-packages",  # a folder name (the isolated sandbox's private environment on a root)
    "gradeflow-home",  # the source name of the docker sandbox's tmpfs under HOME's writes
    "upper-work",  # a folder name (that tmpfs's overlay work folder)
    "host-site-packages",  # folder names: the view of gradeflow's site folder a sandbox shows, and their store
    "host-packages",
    "pytest-log",  # tests.report's log formats
    "django-log",
    "sympy-log",
    "utf-8-sig",  # a codec name
    "rev-parse",
    "ls-files",
    "ls-tree",
    "docker-container-not-removed",
    "evaluate-suite",
    "grade-and-record",
    "grade-submission",
    "pin-base",
    "probe-sandbox",
    "repeat-tests",
    "validate-task",
    "task-strength",
    "warm-baseline",
    "gradeflow-docker-exec",
    "gradeflow-docker-put",
    "gradeflow-local-output",
    "gradeflow-local-input",
    "gradeflow-docker-input",
    "gradeflow-cgroup-removal",
    "gradeflow-artifacts",  # the thread that posts a RepoEnv reward's artifacts
    "gradeflow-disk-guard",
    "gradeflow-harness-site",  # the docker image layer the harness's boot file is added in
    "gradeflow-root",  # the docker images a debian root is imported as, and their tar stream's thread
    "gradeflow-root-tar",
    "validation-grade",  # a Prefect task name
    "child-pid",  # a key of slirp4netns's ready message
    "hidden-backup",
    "no-new-privileges",
    "test-evidence",
    "test-infrastructure",
    "security-scan",
    "compatibility-scan",
    "data-loss-scan",
    "test-removed",
    "file-removed",
    "data-removed",
    "scan-failed",
    "data-truncated",
    "latin-1",
    "utf-8",
    "utf-16",
    "utf-16-be",
    "utf-16-le",
    # the shaped (varied) run's terminal names and /dev entries (sandbox/shape.py)
    "xterm-256color",
    "screen-256color",
    "tmux-256color",
    "xterm-kitty",
    "btrfs-control",
    "vhost-net",
    "vhost-vsock",
    *typing.get_args(Decision),
    *typing.get_args(TamperKind),
}


def _kebab_literals() -> dict[str, str]:
    found: dict[str, str] = {}
    for part in ("graders", "tasks", "flows", "sandbox", "errors.py"):
        paths = (PACKAGE / part).rglob("*.py") if (PACKAGE / part).is_dir() else [PACKAGE / part]
        for path in paths:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and KEBAB.match(node.value):
                    found.setdefault(node.value, str(path.relative_to(PACKAGE)))
    return found


def test_every_code_the_grade_path_writes_is_registered() -> None:
    unregistered = {code: where for code, where in _kebab_literals().items() if code not in BUILTIN_REASON_CODES}
    unexplained = {code: where for code, where in unregistered.items() if code not in NOT_CODES}
    assert not unexplained, f"register these in models/reasons.py (or list them as NOT_CODES): {unexplained}"


def test_every_error_code_is_registered() -> None:
    classes = [SandboxUnavailable, SandboxBroken, BaselineBroken, GitFailed, InfraError]
    assert not unknown_reason_codes(c.reason_code for c in classes)


@pytest.mark.parametrize("name", available_profiles())
def test_shipped_profiles_name_only_known_codes(name: str) -> None:
    assert not unknown_reason_codes(load_profile(name).hard_gates)


class _State:
    def __init__(self, exc: BaseException | None) -> None:
        self.exc = exc

    def result(self) -> None:
        if self.exc is not None:
            raise self.exc


@pytest.mark.parametrize(
    ("exc", "retried"),
    [
        (SandboxUnavailable("engine gone"), True),
        (GitFailed("git index.lock"), True),
        (InfraError("the base wrote no report", reason_code="baseline-broken"), False),
        (SandboxBroken("fork bomb"), False),
        (BaselineBroken("base does not build"), False),
        (ValueError("a bug"), False),
        (None, False),
    ],
)
def test_the_retry_policy_follows_the_errors_contract(exc: BaseException | None, retried: bool) -> None:
    assert retry_on_infra(None, None, _State(exc)) is retried


def test_a_git_failure_has_its_own_reason_code(tmp_path: Path) -> None:
    with pytest.raises(GitFailed) as caught:
        git(tmp_path, "rev-parse", "--verify", "no-such-revision")
    assert caught.value.reason_code == "git-failed"
    assert "rev-parse" in str(caught.value) and "\n" not in str(caught.value)
