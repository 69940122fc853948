"""The code fences of README.md and every page of the documentation site (docs/), and how the tests handle each.

Every fence is listed in :data:`HANDLING` by its document and the start of its first line: run by a named
test, checked by one (a YAML file loaded by gradeflow, a drawn layout compared with the tree, a block that
repeats a page's), or not run (a drawing, a bench script's printed figures). A fence that is not run says so in
its page, in an HTML comment right above it (``<!-- not run: why -->``), so a reader of the source sees it too.
``tests/test_docs_fences.py`` fails on a fence nobody listed, on a listed one that is gone, and on a fence whose
comment and handling disagree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("README.md", *sorted(str(page.relative_to(ROOT)) for page in (ROOT / "docs").rglob("*.md")))
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*$", re.S)


@dataclass(frozen=True)
class Fence:
    """One fenced block of a document."""

    doc: str
    line: int
    """The line of the opening fence (1-based)."""
    lang: str
    text: str
    not_run: str | None = None
    """Why the page says the block is not run (its ``<!-- not run: ... -->`` comment), if it says so."""

    @property
    def first(self) -> str:
        return self.text.lstrip("\n").splitlines()[0] if self.text.strip() else ""


def _not_run(lines: list[str], opening: int) -> str | None:
    """The reason of a ``<!-- not run: ... -->`` comment ending on the line right above line ``opening``."""
    above = lines[: opening - 1]
    if not above or not above[-1].strip().endswith("-->"):
        return None
    start = max(i for i, line in enumerate(above) if "<!--" in line)
    found = NOT_RUN.search(" ".join(line.strip() for line in above[start:]))
    return found.group(1) if found else None


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
            text = "\n".join(body) + "\n"
            found.append(Fence(doc, start[0], start[1], text, _not_run(lines, start[0])))
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


# The pages, by where they are in the site.
INSTALL = "docs/getting-started/install.md"
FIRST_GRADE = "docs/getting-started/first-grade.md"
OWN_TASK = "docs/getting-started/own-task.md"
GRAPH = "docs/concepts/grade-graph.md"
DECISIONS = "docs/concepts/decisions.md"
SANDBOXES = "docs/concepts/sandboxes.md"
ENVIRONMENTS = "docs/concepts/environments.md"
AUTHORING = "docs/how-to/task-authoring.md"
SWEBENCH = "docs/how-to/swebench.md"
AGENTS = "docs/how-to/agents.md"
EVALUATIONS = "docs/how-to/evaluations.md"
SERVICE_PAGE = "docs/how-to/service.md"
OPERATIONS = "docs/operations.md"
TASK_SPEC = "docs/reference/task-spec.md"
COSTS = "docs/reference/costs.md"

EXAMPLES = "tests/test_docs_examples.py::"
SITE = "tests/test_docs_site.py::"
STEPS = "tests/service/test_docs_steps.py::"
SERVICE = "tests/service/test_docs_service.py::"
NOT_CODE = "not code"
EXCEPTED = "excepted"

HANDLING: dict[tuple[str, str], tuple[str, str]] = {
    ("README.md", "make demo"): ("checked", SITE + "test_the_readme_blocks_are_the_pages_blocks"),
    ("README.md", "gradeflow grade examples/calc/task.yaml --patch"): (
        "checked",
        SITE + "test_the_readme_blocks_are_the_pages_blocks",
    ),
    ("docs/index.md", "pin base ─▶ baseline"): (NOT_CODE, "the grading steps drawn"),
    (INSTALL, "make demo"): ("run", EXAMPLES + "test_make_demo_runs_and_says_where_gradeflow_is"),
    (FIRST_GRADE, "gradeflow grade examples/calc/task.yaml --patch"): (
        "run",
        EXAMPLES + "test_the_grade_examples_run_as_written",
    ),
    (FIRST_GRADE, "from gradeflow import grade, load_task"): (
        "run",
        EXAMPLES + "test_the_python_api_example_runs_as_written",
    ),
    (OWN_TASK, "gradeflow task new --repo"): ("run", EXAMPLES + "test_your_own_task_runs_as_written"),
    (GRAPH, "task.yaml + submission ──▶"): ("checked", EXAMPLES + "test_the_layout_names_the_package_folders"),
    (DECISIONS, "name: mine"): ("checked", EXAMPLES + "test_the_profile_example_loads"),
    (SANDBOXES, "# both as root"): ("run", EXAMPLES + "test_the_docker_lines_run_as_written"),
    (SANDBOXES, "environment: {sandbox: docker"): ("checked", EXAMPLES + "test_the_docker_environment_is_a_valid_spec"),
    (ENVIRONMENTS, "setup: pip install -e ."): ("checked", EXAMPLES + "test_the_shared_setup_example_is_a_valid_spec"),
    (AUTHORING, "from gradeflow.graders import Grader"): (
        "run",
        EXAMPLES + "test_the_custom_grader_loads_beside_the_task",
    ),
    (SWEBENCH, "gradeflow task import-swebench"): (
        EXCEPTED,
        "SWE-bench rows and repository mirrors: tests/cli/test_import_swebench.py runs both commands on its own",
    ),
    (SWEBENCH, "GRADEFLOW_ROOTS=/var/cache/gradeflow/roots python bench/swebench_run.py"): (
        EXCEPTED,
        "the snapshots of SWE-bench's rows, a released run and the repositories, and PyPI: a bench, not a test",
    ),
    (SWEBENCH, "tests:"): ("checked", "tests/tasks/test_last_run_names.py::test_the_swebench_pages_excerpt_loads"),
    (AGENTS, "gradeflow run tasks/*/task.yaml --agent 'my-agent"): (
        "run",
        EXAMPLES + "test_the_agent_example_runs_as_written",
    ),
    (AGENTS, "gradeflow run tasks/*/task.yaml --agent oracle"): ("run", EXAMPLES + "test_oracle_and_nop_exit_as_shown"),
    (AGENTS, "from gradeflow.agents import"): ("run", EXAMPLES + "test_the_repo_env_example_runs_as_written"),
    (EVALUATIONS, "gradeflow evaluate examples/suite.yaml"): (
        "run",
        EXAMPLES + "test_the_evaluation_examples_run_as_written",
    ),
    (SERVICE_PAGE, "export PREFECT_SERVER_ANALYTICS_ENABLED=false"): (
        "run",
        SERVICE + "test_the_service_page_runs_as_written",
    ),
    (SERVICE_PAGE, "body=$(python -c"): ("run", SERVICE + "test_the_service_page_runs_as_written"),
    (TASK_SPEC, "task_id: calc-divzero"): ("checked", EXAMPLES + "test_the_spec_reference_is_a_valid_spec"),
    (COSTS, " tests   raw"): (EXCEPTED, "bench/cli_overhead.py's printed figures (the bench scripts are excepted)"),
    (COSTS, " tests     raw"): (EXCEPTED, "bench/cli_overhead.py's figures with the warm runner"),
    (COSTS, "in-process: mean"): (EXCEPTED, "bench/overhead.py's printed figures (make bench, two runs)"),
    (COSTS, "calc:"): (EXCEPTED, "bench/varied_run.py's printed figures"),
    (COSTS, "2000 files, medians"): (EXCEPTED, "bench/tree_checks.py's printed figures"),
    (OPERATIONS, " GitHub / your harness"): (NOT_CODE, "the service drawn"),
    (OPERATIONS, "# 1. PostgreSQL behind Prefect"): ("run", STEPS + "test_the_steps_run_as_written"),
    (OPERATIONS, '{"crashed_after_s"'): (EXCEPTED, "bench/worker_kill.py's printed lines (two runs)"),
    (OPERATIONS, "body=$(python -c"): ("run", SERVICE + "test_the_operations_delivery_runs_as_written"),
}
"""(document, start of the fence's first line) -> (how: run, checked, not code, excepted; the test or why)."""
