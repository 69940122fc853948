"""SWE-bench import on real Django instances, end to end, with no commands file.

For each instance: import the row (``gradeflow task import-swebench``, gradeflow's own table), then grade
the gold patch (must pass), the empty patch (must fail) and a released model's patch (must match
SWE-bench's verdict on it) through the ``grade-submission`` flow, as ``gradeflow grade`` does; then run
the imported task's test command alone in the environment the grades built (gradeflow's sandbox API: the
same ``environment.root``, setup and hidden tests, no recorder), and print the times side by side.

Nothing of the data is kept in this repository: it is read with git from three snapshots the search
tool's ``fetch`` brings (``/work/.mirror/<owner>+<name>/repo``):

- ``--django``: Django's history. ``github:django/django`` is over fetch's size limit, so its fork
  ``github:apprent1c3/django`` (every commit of django/django up to 2024-07-26) stands in; the row's
  ``base_commit`` is checked to be there.
- ``--rows``: ``github:mir/fiddle-test-cov``, whose ``evals/bench/test/<instance>.md`` are SWT-bench's
  pages of SWE-bench Verified rows (problem, gold patch, test patch, FAIL_TO_PASS, PASS_TO_PASS, version,
  base and setup commits), turned back into dataset rows here.
- ``--run``: ``github:gruckion/mini-swe-agent``, a released SWE-bench Verified run (Gemini 3 Pro with
  mini-swe-agent, 2025-11-18): ``trajs/<id>/<id>.traj.json`` holds the model's patch
  (``info.submission``), ``logs/<id>/report.json`` SWE-bench's harness verdict (``resolved``).

    GRADEFLOW_ROOTS=/var/cache/gradeflow/roots python bench/swebench_django.py [--instances ID ...]

The work folder is ``$GRADEFLOW_BENCH_WORK`` (default ``/tmp/gradeflow-swebench-django``): the mirror, the
rows, the patches, the imported tasks, each result's JSON, and ``home/`` (``GRADEFLOW_HOME``: the baselines
and a Prefect server of the bench's own, stopped at the end). Times: "grade" is one grade's wall time (the
first grade of an instance, gold, builds its baseline: "base" is that step), "tests" the grade's tests step
(the base's run is in the baseline), "raw" the test command alone in the built environment.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MIRRORS = Path("/work/.mirror")
RUN = "swebench_results/20251118_gemini-3-pro-74pct"
INSTANCES = (
    "django__django-11099",
    "django__django-11133",
    "django__django-11848",
    "django__django-11999",
    "django__django-16527",
)
GRADEFLOW = [sys.executable, "-m", "gradeflow.cli"]
WORK = Path(os.environ.get("GRADEFLOW_BENCH_WORK", "/tmp/gradeflow-swebench-django")).resolve()
os.environ.setdefault("GRADEFLOW_HOME", str(WORK / "home"))  # baselines and a Prefect server of the bench's own
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_LOG_LEVEL", "WARNING")  # each grade's step lines would bury the table

from gradeflow.api import make_submission  # noqa: E402
from gradeflow.engine.local_server import stop_server, use_local_server  # noqa: E402
from gradeflow.flows.grade import grade_submission  # noqa: E402
from gradeflow.flows.session import flow_runs_without_heartbeat, open_session  # noqa: E402
from gradeflow.logs import quiet_prefect  # noqa: E402
from gradeflow.models import GradeResult  # noqa: E402
from gradeflow.sandbox.base import remove_tree  # noqa: E402
from gradeflow.spec import load_task  # noqa: E402
from gradeflow.tasks.baseline import (  # noqa: E402
    baseline_key,
    build_environment,
    ensure_pristine,
    inject_hidden,
    open_sandbox,
    working_copy,
)
from gradeflow.tasks.environment import describe_environment  # noqa: E402


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _section(page: str, title: str) -> str:
    """The fenced block under ``## title``: a patch, as the dataset holds it (one final newline)."""
    match = re.search(rf"^## {re.escape(title)}\n\n```diff\n(.*?)\n```\n", page, re.MULTILINE | re.DOTALL)
    if match is None:
        raise SystemExit(f"no '## {title}' block")
    return match.group(1).strip("\n") + "\n"


def _field(page: str, label: str) -> str:
    match = re.search(rf"^\*\*{re.escape(label)}\*\*: (.*)$", page, re.MULTILINE)
    if match is None:
        raise SystemExit(f"no '**{label}**' line")
    return match.group(1).strip()


def row_from_page(page: str, instance: str) -> dict[str, object]:
    """A SWE-bench dataset row from SWT-bench's markdown page of it."""
    problem = re.search(r"^## Problem Statement\n\n(.*?)\n\n## ", page, re.MULTILINE | re.DOTALL)
    return {
        "instance_id": instance,
        "repo": _field(page, "Repository"),
        "base_commit": _field(page, "Base Commit"),
        "environment_setup_commit": _field(page, "Environment Setup Commit"),
        "version": _field(page, "Version"),
        "created_at": _field(page, "Created"),
        "problem_statement": problem.group(1) if problem else "",
        "patch": _section(page, "Patch"),
        "test_patch": _section(page, "Test Patch"),
        "FAIL_TO_PASS": json.loads(_field(page, "Tests that should FAIL→PASS")),
        "PASS_TO_PASS": json.loads(_field(page, "Tests that should PASS→PASS")),
    }


def prepare(work: Path, args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """The mirror, ``instances.jsonl`` and the patches to grade; returns each instance's official verdict."""
    mirror = work / "mirrors" / "django__django"
    if not mirror.is_dir():
        mirror.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--bare", "--local", str(args.django), str(mirror)], check=True)
    rows, official = [], {}
    for instance in args.instances:
        row = row_from_page(_git(args.rows, "show", f"HEAD:evals/bench/test/{instance}.md"), instance)
        _git(mirror, "cat-file", "-e", f"{row['base_commit']}^{{commit}}")
        rows.append(row)
        report = json.loads(_git(args.run, "show", f"HEAD:{RUN}/logs/{instance}/report.json"))
        traj = json.loads(_git(args.run, "show", f"HEAD:{RUN}/trajs/{instance}/{instance}.traj.json"))
        patches = work / "patches" / instance
        patches.mkdir(parents=True, exist_ok=True)
        (patches / "gold.diff").write_text(str(row["patch"]))
        (patches / "empty.diff").write_text("")
        (patches / "model.diff").write_text(traj["info"]["submission"])
        official[instance] = {"verdict": "pass" if report["resolved"] else "fail", "version": str(row["version"])}
    (work / "instances.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return official


def grade(task_file: Path, patch: Path) -> tuple[GradeResult, float]:
    """One grade through the ``grade-submission`` flow, as ``gradeflow grade`` runs it, and its wall time.

    In this process (not the CLI) so the step timings keep the tests step, which the CLI withholds for a
    task with hidden tests."""
    task = load_task(task_file)
    session = open_session(task)
    submission = make_submission(patch=patch, submission_id=patch.stem)
    started = time.perf_counter()
    with flow_runs_without_heartbeat():
        result = grade_submission(task, submission, sandbox=session.factory, profile=session.profile, base=session.base)
    assert isinstance(result, GradeResult)
    return result, time.perf_counter() - started


def raw_test_time(task_file: Path) -> tuple[float, int | None, str]:
    """The task's test command alone in its built environment (hidden tests laid in, no recorder)."""
    task = load_task(task_file)
    session = open_session(task)
    fingerprint = describe_environment.fn(task, session.factory)
    key = baseline_key(task, session.base, fingerprint)
    pristine = ensure_pristine(session.base, key)
    environment = build_environment(task, pristine, key, session.factory)
    tree = working_copy(pristine)
    try:
        inject_hidden(task, tree, tree.parent / "backup")
        with open_sandbox(tree, pristine, session.factory, environment) as box:
            started = time.perf_counter()
            result = box.run(task.tests.command, env=task.run_env(), timeout=task.tests.timeout)
            wall = time.perf_counter() - started
    finally:
        remove_tree(tree.parent, ignore_errors=True)
    summary = [
        line for line in (result.stdout + result.stderr).splitlines() if line.startswith(("Ran ", "OK", "FAILED"))
    ]
    return wall, result.exit_code, " ".join(summary)


def _verdict(result: GradeResult) -> str:
    if result.status != "graded":
        return f"inconclusive ({','.join(result.reason_codes)})"
    return "pass" if result.passed else "fail"


@dataclass
class Row:
    """One grade of the table."""

    instance: str
    kind: str
    verdict: str
    expected: str
    wall: float
    timings: dict[str, float]
    strict: str
    """gradeflow's stricter reading (the candidate's edits to the test patch's files counted), or ``-``."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--django", type=Path, default=MIRRORS / "apprent1c3+django" / "repo")
    parser.add_argument("--rows", type=Path, default=MIRRORS / "mir+fiddle-test-cov" / "repo")
    parser.add_argument("--run", type=Path, default=MIRRORS / "gruckion+mini-swe-agent" / "repo")
    parser.add_argument("--instances", nargs="+", default=list(INSTANCES))
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    os.chdir(WORK)
    official = prepare(WORK, args)
    started = time.perf_counter()
    imported = subprocess.run(
        [*GRADEFLOW, "task", "import-swebench", "instances.jsonl", "--repos", "mirrors", "--out", "tasks"],
        capture_output=True,
        text=True,
    )
    print(f"import-swebench: exit {imported.returncode} in {time.perf_counter() - started:.1f} s")
    print(imported.stdout + imported.stderr, flush=True)
    quiet_prefect()
    use_local_server()
    rows: list[Row] = []
    raw: dict[str, tuple[float, int | None, str]] = {}
    try:
        for instance in args.instances:
            task = WORK / "tasks" / instance / "task.yaml"
            if not task.is_file():
                print(f"{instance}: not imported", flush=True)
                continue
            for kind in ("gold", "empty", "model"):
                result, wall = grade(task, WORK / "patches" / instance / f"{kind}.diff")
                expected = {"gold": "pass", "empty": "fail"}.get(kind) or official[instance]["verdict"]
                strict = result.strict_reading.decision if result.strict_reading is not None else "-"
                rows.append(Row(instance, kind, _verdict(result), expected, wall, result.timings, strict))
                (WORK / f"{instance}.{kind}.json").write_text(result.model_dump_json(indent=1))
                print(f"{instance} {kind}: {rows[-1].verdict} in {wall:.1f} s {result.reason_codes}", flush=True)
            raw[instance] = raw_test_time(task)
            print(f"{instance} raw test command: {raw[instance]}", flush=True)
    finally:
        stop_server()
    _table(rows, raw, official)


def _table(rows: list[Row], raw: dict[str, tuple[float, int | None, str]], official: dict[str, dict[str, str]]) -> None:
    print()
    print(
        f"{'instance':21} {'ver':3} {'patch':5} {'verdict':7} {'expected':8} {'ok':3} "
        f"{'grade s':>7} {'base s':>6} {'tests s':>7} {'raw s':>5}  strict reading"
    )
    for row in rows:
        short = row.instance.removeprefix("django__")
        shown = row.expected if row.kind != "model" else ("resolved" if row.expected == "pass" else "unresolv")
        ok = "yes" if row.verdict == row.expected else "NO"
        seconds = [row.wall, row.timings.get("baseline", 0.0), row.timings.get("tests", float("nan"))]
        raw_seconds = raw[row.instance][0] if row.instance in raw else float("nan")
        print(
            f"{short:21} {official[row.instance]['version']:3} {row.kind:5} {row.verdict:7} {shown:8} {ok:3} "
            f"{seconds[0]:7.1f} {seconds[1]:6.1f} {seconds[2]:7.1f} {raw_seconds:5.1f}  {row.strict}"
        )
    agree = sum(row.verdict == row.expected for row in rows)
    print(f"\n{agree} of {len(rows)} verdicts as expected (gold pass, empty fail, model as SWE-bench's harness said)")
    for instance, (took, code, summary) in raw.items():
        print(f"raw {instance}: exit {code} in {took:.1f} s: {summary}")


if __name__ == "__main__":
    main()
