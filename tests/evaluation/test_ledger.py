"""The ledger on SQLite and on a real PostgreSQL: round trips, uniqueness, concurrent writers, URLs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from evaluate_helpers import database, record
from gradeflow.errors import InfraError, SpecError
from gradeflow.evaluation.ledger import DEFAULT_LEDGER, GradeRecord, Ledger, ledger_url


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database(request.param, tmp_path) as value:
        yield value


@pytest.fixture
def ledger(url: str) -> Iterator[Ledger]:
    handle = Ledger(url)
    yield handle
    handle.close()


def test_a_record_round_trips_field_for_field(ledger: Ledger) -> None:
    original = record(
        labels={"tools": "basic"},
        tool_calls=7,
        tests_passed=18,
        tests_failed=2,
        component_scores={"tests": 0.6, "constraints": 1.0},
        dimension_scores={"behavior": None},
        reason_codes=["missing-regression-test"],
        timings={"tests": 1.25, "total": 2.5},
        score=0.78,
    )
    assert ledger.add(original) is True
    assert ledger.records() == [original]


def test_the_same_key_is_recorded_once(ledger: Ledger) -> None:
    assert ledger.add(record()) is True
    assert ledger.add(record(score=0.0, passed=False)) is False
    assert ledger.add(record(run_id="r2")) is True
    assert [(r.run_id, r.score) for r in ledger.records()] == [("r1", 1.0), ("r2", 1.0)]
    assert ledger.recorded_keys() == {("k1", "r1"), ("k1", "r2")}
    assert [r.run_id for r in ledger.records([("k1", "r2"), ("zz", "r1")])] == ["r2"]


def test_concurrent_writers_lose_nothing_and_duplicate_nothing(url: str) -> None:
    # Eight writers, each with its own engine (as separate processes would have), overlapping keys.
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def write(worker: int) -> None:
        try:
            handle = Ledger(url)
            barrier.wait(timeout=60)
            for i in range(30):
                handle.add(record(content_key=f"k{i}", run_id=f"r{(worker + i) % 4}"))
            handle.close()
        except BaseException as exc:  # surfaced below: a thread's exception would otherwise vanish
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    check = Ledger(url)
    keys = [r.key for r in check.records()]
    check.close()
    expected = {(f"k{i}", f"r{(w + i) % 4}") for w in range(8) for i in range(30)}
    assert len(keys) == len(set(keys)) == len(expected)
    assert set(keys) == expected


def test_a_record_holds_no_text_fields() -> None:
    assert set(GradeRecord.model_fields) == {
        "run_id",
        "task_id",
        "submission_id",
        "content_key",
        "task_spec_hash",
        "patch_hash",
        "repository_revision",
        "environment_fingerprint",
        "model_id",
        "prompt_revision",
        "grader_revision",
        "profile",
        "labels",
        "tool_calls",
        "tests_passed",
        "tests_failed",
        "files_changed",
        "lines_added",
        "lines_removed",
        "component_scores",
        "dimension_scores",
        "score",
        "passed",
        "decision",
        "reason_codes",
        "status",
        "timings",
        "created_at",
    }


def test_sqlite_ledger_uses_wal_and_a_busy_timeout(tmp_path: Path) -> None:
    handle = Ledger(str(tmp_path / "l.db"))
    handle.add(record())
    handle.close()
    engine = create_engine(f"sqlite:///{tmp_path / 'l.db'}")
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    engine.dispose()


def test_url_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GRADEFLOW_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    assert ledger_url() == f"sqlite:///{tmp_path / DEFAULT_LEDGER}"
    assert ledger_url("x/l.db") == f"sqlite:///{tmp_path / 'x' / 'l.db'}"
    monkeypatch.setenv("GRADEFLOW_DATABASE_URL", "postgresql+psycopg://u:secret@127.0.0.1/db")
    assert ledger_url() == "postgresql+psycopg://u:secret@127.0.0.1/db"
    assert ledger_url("sqlite:///a.db") == "sqlite:///a.db"
    handle = Ledger(f"sqlite:///{tmp_path / 'd' / 'l.db'}")
    assert (tmp_path / "d" / "l.db").is_file() and handle.dialect == "sqlite"
    handle.close()


def test_bad_and_unreachable_databases_are_typed_errors() -> None:
    with pytest.raises(SpecError, match="--ledger: unsupported database URL"):
        Ledger("nosuchdb://x/y")
    with pytest.raises(InfraError, match=r"ledger postgresql\+psycopg://u:\*\*\*@127.0.0.1:1/db: cannot connect") as e:
        Ledger("postgresql+psycopg://u:secret@127.0.0.1:1/db")
    assert "secret" not in str(e.value)
    assert e.value.reason_code == "ledger-unavailable"
