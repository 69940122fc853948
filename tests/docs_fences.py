"""The code fences of README.md and docs/operations.md, and how the tests handle each one.

Every fence is listed in :data:`HANDLING` by its document and the start of its first line: run by a named
test, checked by one (a YAML file loaded by gradeflow, a drawn layout compared with the tree), or not code
(a drawing). ``tests/test_docs_fences.py`` fails on a fence nobody listed, and on a listed one that is gone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("README.md", "docs/operations.md")


@dataclass(frozen=True)
class Fence:
    """One fenced block of a document."""

    doc: str
    line: int
    """The line of the opening fence (1-based)."""
    lang: str
    text: str

    @property
    def first(self) -> str:
        return self.text.lstrip("\n").splitlines()[0] if self.text.strip() else ""


def fences(doc: str) -> list[Fence]:
    """The fenced blocks of ``doc`` (a path relative to the checkout), indented ones included."""
    found: list[Fence] = []
    lines = (ROOT / doc).read_text().splitlines()
    start: tuple[int, str, str] | None = None
    body: list[str] = []
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if start is None and stripped.startswith("```"):
            start, body = (number, stripped[3:].strip(), line[: len(line) - len(line.lstrip())]), []
        elif start is not None and stripped == "```":
            found.append(Fence(doc, start[0], start[1], "\n".join(body) + "\n"))
            start = None
        elif start is not None:
            body.append(line[len(start[2]) :] if line.startswith(start[2]) else line)
    return found


def fence(doc: str, first: str) -> Fence:
    """The one fence of ``doc`` whose first line starts with ``first``."""
    [chosen] = [f for f in fences(doc) if f.first.startswith(first)]
    return chosen


def shown(text: str, command: str) -> list[str]:
    """The output lines a fence shows under ``command``: the ``# `` lines right after it."""
    lines = text.splitlines()
    at = lines.index(command) + 1
    out = []
    while at < len(lines) and lines[at].startswith("# "):
        out.append(lines[at][2:])
        at += 1
    return out


def matches(pattern: str, printed: str) -> bool:
    """Whether ``printed`` is what ``pattern`` shows, ``…`` and ``...`` standing for any text."""
    parts = re.split(r"…|\.\.\.", pattern)
    return re.fullmatch(".*?".join(re.escape(p) for p in parts), printed, re.S) is not None


README = "tests/test_docs_readme.py::"
STEPS = "tests/service/test_docs_steps.py::"
SERVICE = "tests/service/test_docs_service.py::"
EXCEPTED = "excepted"

HANDLING: dict[tuple[str, str], tuple[str, str]] = {
    ("README.md", "pin base ─▶ baseline"): ("not code", "the grading steps drawn"),
    ("README.md", "make demo"): ("run", README + "test_make_demo_runs_and_says_where_gradeflow_is"),
    ("README.md", "gradeflow grade examples/calc/task.yaml --patch"): (
        "run",
        README + "test_the_grade_examples_run_as_written",
    ),
    ("README.md", "from gradeflow import grade, load_task"): (
        "run",
        README + "test_the_python_api_example_runs_as_written",
    ),
    ("README.md", "from gradeflow.graders import Grader"): (
        "run",
        README + "test_the_custom_grader_loads_beside_the_task",
    ),
    ("README.md", "gradeflow task new --repo"): ("run", README + "test_task_new_runs_as_written"),
    ("README.md", "task_id: calc-divzero"): ("checked", README + "test_the_spec_reference_is_a_valid_spec"),
    ("README.md", "name: mine"): ("checked", README + "test_the_profile_example_loads"),
    ("README.md", "gradeflow evaluate examples/suite.yaml"): (
        "run",
        README + "test_the_evaluation_examples_run_as_written",
    ),
    ("README.md", "gradeflow task import-swebench"): (
        EXCEPTED,
        "SWE-bench rows and repository mirrors: tests/cli/test_import_swebench.py runs both commands on its own",
    ),
    ("README.md", "gradeflow run tasks/*/task.yaml --agent 'my-agent"): (
        "run",
        README + "test_the_agent_example_runs_as_written",
    ),
    ("README.md", "gradeflow run tasks/*/task.yaml --agent oracle"): (
        "run",
        README + "test_oracle_and_nop_exit_as_shown",
    ),
    ("README.md", "from gradeflow.agents import"): ("run", README + "test_the_repo_env_example_runs_as_written"),
    ("README.md", "# both as root"): ("run", README + "test_the_docker_lines_run_as_written"),
    ("README.md", "environment: {sandbox: docker"): ("checked", README + "test_the_docker_environment_is_a_valid_spec"),
    ("README.md", " tests   raw"): (
        EXCEPTED,
        "bench/cli_overhead.py's printed figures (the bench scripts are excepted)",
    ),
    ("README.md", "in-process: mean"): (EXCEPTED, "bench/overhead.py's printed figures (make bench, two runs)"),
    ("README.md", "calc:"): (EXCEPTED, "bench/varied_run.py's printed figures"),
    ("README.md", "export PREFECT_SERVER_ANALYTICS_ENABLED=false"): (
        "run",
        SERVICE + "test_the_readme_service_runs_as_written",
    ),
    ("README.md", "body=$(python -c"): ("run", SERVICE + "test_the_readme_service_runs_as_written"),
    ("README.md", "task.yaml + submission ──▶"): ("checked", README + "test_the_layout_names_the_package_folders"),
    ("docs/operations.md", " GitHub / your harness"): ("not code", "the service drawn"),
    ("docs/operations.md", "# 1. PostgreSQL behind Prefect"): (
        "run",
        STEPS + "test_the_steps_run_as_written",
    ),
    ("docs/operations.md", '{"crashed_after_s"'): (EXCEPTED, "bench/worker_kill.py's printed lines (two runs)"),
    ("docs/operations.md", "body=$(python -c"): ("run", SERVICE + "test_the_operations_delivery_runs_as_written"),
}
"""(document, start of the fence's first line) -> (how: run, checked, not code, excepted; the test or why)."""
