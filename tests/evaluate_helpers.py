"""Helpers for the suite, ledger, evaluate, report and SWE-bench tests: databases, tiny tasks, a fake pytest."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import create_engine, text

from fakes import BUG, FIX, diff
from fakes import write_task as write_fake_task
from gradeflow.evaluation.ledger import GradeRecord

WRONG = "def divide(a, b):\n    return 0 if b == 0 else a / b\n"


def postgres_url() -> str:
    """``$GRADEFLOW_TEST_POSTGRES_URL``; skips without it, except under CI where it must be set."""
    url = os.environ.get("GRADEFLOW_TEST_POSTGRES_URL")
    if url:
        return url
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true but GRADEFLOW_TEST_POSTGRES_URL is unset: .ci/run must run scripts/start-postgres.sh")
    pytest.skip("GRADEFLOW_TEST_POSTGRES_URL is not set (export it from scripts/start-postgres.sh)")


@contextmanager
def database(kind: str, tmp_path: Path) -> Iterator[str]:
    """A ledger URL on an empty database: a SQLite file, or a fresh PostgreSQL schema dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'ledger.db'}"
        return
    base = postgres_url()
    schema = f"gradeflow_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base)
    with admin.begin() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def write_task(root: Path, task_id: str) -> Path:
    """The fakes' tiny repository and task spec under ``root/task_id``; returns task.yaml."""
    return write_fake_task(root / task_id, task_id)


def write_suite(root: Path, task_ids: list[str], runs: dict[str, list[str]]) -> Path:
    """A suite over ``task_ids``: ``runs`` maps model id to one patch kind per run (fix, wrong, empty, broken)."""
    texts = {
        "fix": diff(BUG, FIX),
        "wrong": diff(BUG, WRONG),
        "empty": "",
        "broken": diff(BUG, "def divide(a, b):  # BROKEN\n    return a / b\n"),
    }
    (root / "patches").mkdir(exist_ok=True)
    for kind, body in texts.items():
        (root / "patches" / f"{kind}.diff").write_text(body)
    submissions = [
        {
            "task_id": task_id,
            "patch": f"patches/{kind}.diff",
            "run_id": f"{model}-r{n}",
            "model_id": model,
            "prompt_revision": "p1",
            "tool_calls": n,
        }
        for task_id in task_ids
        for model, kinds in runs.items()
        for n, kind in enumerate(kinds, 1)
    ]
    for task_id in task_ids:
        write_task(root, task_id)
    suite = root / "suite.yaml"
    suite.write_text(yaml.safe_dump({"tasks": [f"{t}/task.yaml" for t in task_ids], "submissions": submissions}))
    return suite


def record(**fields: Any) -> GradeRecord:
    """A ledger record with plausible defaults, for tests that need no grading."""
    values: dict[str, Any] = {
        "run_id": "r1",
        "task_id": "t1",
        "submission_id": "s1",
        "content_key": "k1",
        "task_spec_hash": "h",
        "patch_hash": "p",
        "repository_revision": "rev",
        "environment_fingerprint": "env",
        "model_id": "m-a",
        "prompt_revision": "p1",
        "grader_revision": "0.1.0",
        "profile": "default",
        "score": 1.0,
        "passed": True,
        "decision": "merge-candidate",
        "status": "graded",
    }
    values.update(fields)
    return GradeRecord(**values)
