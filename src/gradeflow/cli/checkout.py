"""``gradeflow checkout TASK DIR``: the repository an agent starts from, and the issue it is given.

The pinned base as a git repository with one commit and nothing else (no later history, refs, tags,
reflog or objects an agent could mine for the answer), without the hidden tests, the reference patch
or the task spec. The issue text goes to ``--issue-out`` (outside DIR, so it is never graded as an
added file) or to stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gradeflow.errors import SpecError

__all__ = ["add_checkout_command", "run_checkout"]


def add_checkout_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``checkout``."""
    checkout = sub.add_parser("checkout", help="write the base an agent starts from (one commit, no history)")
    checkout.add_argument("task", help="path to task.yaml")
    checkout.add_argument("dir", help="an empty or new folder for the repository")
    checkout.add_argument("--issue-out", help="write the task's issue text here (outside DIR) instead of stdout")


def run_checkout(args: argparse.Namespace) -> int:
    """Write the checkout and the issue; ``SpecError`` (exit 2) for a bad task, folder or issue path."""
    from gradeflow.spec import load_task
    from gradeflow.tasks.repo import resolve_base, write_agent_checkout

    task = load_task(args.task)
    dest = Path(args.dir)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise SpecError(f"checkout: {dest} is not an empty folder")
    issue_out = Path(args.issue_out) if args.issue_out else None
    if issue_out is not None and issue_out.resolve().is_relative_to(dest.resolve()):
        raise SpecError(f"--issue-out: {issue_out} is inside {dest}; the agent's checkout must not hold it")
    issue = _issue_text(task.issue, task.issue_file)
    base = resolve_base(task)
    commit = write_agent_checkout(base, dest)
    if issue is not None:
        if issue_out is not None:
            issue_out.write_text(issue, encoding="utf-8")
        else:
            sys.stdout.write(issue if issue.endswith("\n") else issue + "\n")
    print(f"checkout of {task.task_id} at {base.revision[:12]} in {dest} (commit {commit[:12]})", file=sys.stderr)
    return 0


def _issue_text(issue: str | None, issue_file: str | None) -> str | None:
    if issue_file is None:
        return issue
    try:
        return Path(issue_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"issue_file: cannot read {issue_file}: {exc}") from None
