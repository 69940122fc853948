"""SWE-bench Verified rows, the repositories' histories and a released model run, read with git from snapshots.

Nothing of the data is kept in this repository: it is read from snapshots the search tool's ``fetch`` brings
(``/work/.mirror/<owner>+<name>/repo``):

- rows: ``github:mir/fiddle-test-cov``, whose ``evals/bench/test/<instance>.md`` are SWT-bench's pages of
  SWE-bench Verified rows (problem, gold patch, test patch, FAIL_TO_PASS, PASS_TO_PASS, version, base and
  setup commits), turned back into dataset rows here;
- histories: ``github:<owner>/<name>`` per repository; ``github:django/django`` is over fetch's size limit, so
  its fork ``github:apprent1c3/django`` (every commit of django/django up to 2024-07-26) stands in;
- the run: ``github:gruckion/mini-swe-agent``, a released SWE-bench Verified run (Gemini 3 Pro with
  mini-swe-agent, 2025-11-18): ``trajs/<id>/<id>.traj.json`` holds the model's patch (``info.submission``),
  ``logs/<id>/report.json`` SWE-bench's harness verdict (``resolved``).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from gradeflow.authoring.swebench import submodule_repo

MIRRORS = Path("/work/.mirror")
ROWS = MIRRORS / "mir+fiddle-test-cov" / "repo"
PAGES = "evals/bench/test"
RUN_REPO = MIRRORS / "gruckion+mini-swe-agent" / "repo"
RUN = "swebench_results/20251118_gemini-3-pro-74pct"
STAND_INS = {"django/django": "apprent1c3+django"}


def git(repo: Path, *args: str) -> str:
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


def instance_ids(rows: Path = ROWS) -> list[str]:
    """Every instance with a page, sorted."""
    return sorted(name.removesuffix(".md") for name in git(rows, "ls-tree", "--name-only", f"HEAD:{PAGES}/").split())


def repo_of(instance: str) -> str:
    """``owner/name`` of an instance id (``owner__name-123``)."""
    return instance.rsplit("-", 1)[0].replace("__", "/", 1)


def history(repo: str) -> Path:
    """The snapshot of ``repo``'s history (a stand-in fork where the repository itself is not there)."""
    return MIRRORS / STAND_INS.get(repo, repo.replace("/", "+")) / "repo"


def submodule_repos(history_repo: Path, repo: str, commit: str) -> list[str]:
    """owner/name of the repositories the ``.gitmodules`` of ``commit`` names, as the import reads them (their
    snapshots are cloned into the mirrors folder beside the row's, where this machine has them)."""
    proc = subprocess.run(
        ["git", "-C", str(history_repo), "config", "--blob", f"{commit}:.gitmodules", "--get-regexp", r"\.url$"],
        capture_output=True,
        text=True,
    )
    named = (submodule_repo(line.split(" ", 1)[-1], repo) for line in proc.stdout.splitlines())
    return [name for name in named if name]


def read_row(instance: str, rows: Path = ROWS) -> dict[str, object]:
    return row_from_page(git(rows, "show", f"HEAD:{PAGES}/{instance}.md"), instance)


def has_commit(repo: Path, commit: str) -> bool:
    """Whether ``repo`` holds ``commit`` and every file's content of it (a snapshot may list a large file and
    lack its content: gradeflow then refuses the base)."""
    listed = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "-l", commit], capture_output=True, text=True)
    return listed.returncode == 0 and not any(line.split()[3:4] == ["BAD"] for line in listed.stdout.splitlines())


def in_run(run: Path = RUN_REPO) -> set[str]:
    """The instances the released run has a verdict for (SWE-bench Verified: some pages are of other rows)."""
    return set(git(run, "ls-tree", "--name-only", f"HEAD:{RUN}/logs/").split())


def model_run(instance: str, run: Path = RUN_REPO) -> tuple[bool, str]:
    """SWE-bench's verdict on the released model's patch (resolved or not) and the patch."""
    report = json.loads(git(run, "show", f"HEAD:{RUN}/logs/{instance}/report.json"))
    traj = json.loads(git(run, "show", f"HEAD:{RUN}/trajs/{instance}/{instance}.traj.json"))
    return bool(report["resolved"]), traj["info"]["submission"]
