"""The evidence ledger: one SQL row per grade, in SQLite (default) or PostgreSQL, through SQLAlchemy 2.

Where: ``--ledger URL`` (or a plain file path, taken as SQLite), else ``$GRADEFLOW_DATABASE_URL``, else
``sqlite:///.gradeflow/ledger.db`` under the current folder (WAL journal, 30 s busy timeout).

What a caller may rely on:

- A record holds identifiers, counts, booleans, scores, codes and timings only: never patch text,
  prompts, file contents or names, messages, environment variables or credentials.
- ``(content_key, run_id)`` is unique. :meth:`Ledger.add` is one atomic ``INSERT ... ON CONFLICT DO
  NOTHING``: a resumed or concurrent evaluation never duplicates a record, and concurrent writers
  (threads or processes) lose none.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Engine,
    Float,
    Integer,
    String,
    Table,
    UniqueConstraint,
    create_engine,
    delete,
    event,
    insert,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from gradeflow.errors import InfraError, SpecError
from gradeflow.models import Decision, Status

__all__ = [
    "DEFAULT_LEDGER",
    "GradeRecord",
    "Ledger",
    "ReviewDecision",
    "ReviewRecord",
    "StrengthRecord",
    "TrialRecord",
    "ledger_url",
]

DEFAULT_LEDGER = Path(".gradeflow") / "ledger.db"


class GradeRecord(BaseModel):
    """One grade as the ledger keeps it (the evidence record of the scoring policy)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    """The agent run that produced the submission."""
    task_id: str
    submission_id: str
    content_key: str
    """Hash of task spec hash, patch hash, grading profile and gradeflow version."""
    task_spec_hash: str
    patch_hash: str
    repository_revision: str
    """The pinned base: a commit id or a content hash."""
    environment_fingerprint: str
    """Hash of the sandbox, image, architecture, Python, timezone, hash seed and gradeflow version."""
    model_id: str
    prompt_revision: str
    grader_revision: str
    """The gradeflow version that graded."""
    profile: str
    labels: dict[str, str] = Field(default_factory=dict)
    tool_calls: int | None = None
    tests_passed: int | None = None
    tests_failed: int | None = None
    """Failed plus errored test cases; ``None`` when no test ran."""
    files_changed: int = 0
    lines_added: int = 0
    lines_removed: int = 0
    component_scores: dict[str, float] = Field(default_factory=dict)
    dimension_scores: dict[str, float | None] = Field(default_factory=dict)
    score: float | None
    """``None`` when inconclusive."""
    passed: bool
    decision: Decision
    reason_codes: list[str] = Field(default_factory=list)
    status: Status
    """``graded`` or ``inconclusive``."""
    timings: dict[str, float] = Field(default_factory=dict)
    """Seconds per grading step, plus ``total``."""
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @property
    def key(self) -> tuple[str, str]:
        """The identity of a record: ``(content_key, run_id)``."""
        return self.content_key, self.run_id


class _Base(DeclarativeBase):
    pass


class _GradeRow(_Base):
    __tablename__ = "gradeflow_grades"
    __table_args__ = (UniqueConstraint("content_key", "run_id", name="uq_gradeflow_grades_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(200), index=True)
    task_id: Mapped[str] = mapped_column(String(128), index=True)
    submission_id: Mapped[str] = mapped_column(String(128))
    content_key: Mapped[str] = mapped_column(String(64))
    task_spec_hash: Mapped[str] = mapped_column(String(64))
    patch_hash: Mapped[str] = mapped_column(String(64))
    repository_revision: Mapped[str] = mapped_column(String(64))
    environment_fingerprint: Mapped[str] = mapped_column(String(64))
    model_id: Mapped[str] = mapped_column(String(200), index=True)
    prompt_revision: Mapped[str] = mapped_column(String(200))
    grader_revision: Mapped[str] = mapped_column(String(64))
    profile: Mapped[str] = mapped_column(String(200))
    labels: Mapped[dict[str, str]] = mapped_column(JSON)
    tool_calls: Mapped[int | None] = mapped_column(Integer)
    tests_passed: Mapped[int | None] = mapped_column(Integer)
    tests_failed: Mapped[int | None] = mapped_column(Integer)
    files_changed: Mapped[int] = mapped_column(Integer)
    lines_added: Mapped[int] = mapped_column(Integer)
    lines_removed: Mapped[int] = mapped_column(Integer)
    component_scores: Mapped[dict[str, float]] = mapped_column(JSON)
    dimension_scores: Mapped[dict[str, float | None]] = mapped_column(JSON)
    score: Mapped[float | None] = mapped_column(Float)
    passed: Mapped[bool] = mapped_column(Boolean)
    decision: Mapped[str] = mapped_column(String(32))
    reason_codes: Mapped[list[str]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(32))
    timings: Mapped[dict[str, float]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


_COLUMNS = [c.name for c in _GradeRow.__table__.columns if c.name != "id"]


ReviewDecision = Literal["approve", "reject", "retry", "timed-out"]


class ReviewRecord(BaseModel):
    """A person's answer to a grade's review request (or its timeout), kept beside the grade.

    The reviewer's note is not here: it goes to a Prefect artifact on the review run, never the ledger.
    """

    model_config = ConfigDict(frozen=True)

    content_key: str
    run_id: str
    """With ``content_key``, the key of the grade reviewed."""
    reviewer: str
    """Self-declared (a self-hosted Prefect server has no users); empty when the review timed out."""
    decision: ReviewDecision
    automatic_decision: Decision
    """The grader's decision, kept beside the reviewer's."""
    review_run_id: str = ""
    """The ``review-grade`` flow run that asked."""
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @property
    def grade_key(self) -> tuple[str, str]:
        return self.content_key, self.run_id


class _ReviewRow(_Base):
    __tablename__ = "gradeflow_reviews"
    __table_args__ = (UniqueConstraint("content_key", "run_id", "review_run_id", name="uq_gradeflow_reviews_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    content_key: Mapped[str] = mapped_column(String(64), index=True)
    run_id: Mapped[str] = mapped_column(String(200))
    reviewer: Mapped[str] = mapped_column(String(200))
    decision: Mapped[str] = mapped_column(String(32))
    automatic_decision: Mapped[str] = mapped_column(String(32))
    review_run_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


_REVIEW_COLUMNS = [c.name for c in _ReviewRow.__table__.columns if c.name != "id"]


class StrengthRecord(BaseModel):
    """A task's strength (``gradeflow task strength``), kept under the task spec's digest."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    task_spec_hash: str
    """:meth:`TaskSpec.spec_hash`: the grades a report flags carry the same one."""
    mutants: int
    """Wrong patches graded (mutants of the reference plus the do-nothing and revert patches)."""
    killed: int
    kill_rate: float
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class _StrengthRow(_Base):
    __tablename__ = "gradeflow_task_strength"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    task_id: Mapped[str] = mapped_column(String(128))
    task_spec_hash: Mapped[str] = mapped_column(String(64), index=True)
    mutants: Mapped[int] = mapped_column(Integer)
    killed: Mapped[int] = mapped_column(Integer)
    kill_rate: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


_STRENGTH_COLUMNS = [c.name for c in _StrengthRow.__table__.columns if c.name != "id"]


class TrialRecord(BaseModel):
    """What an agent did in one trial (``gradeflow run``), kept beside the grade of what it left.

    Counts, codes and durations only: the agent's output is a Prefect artifact, never a record.
    """

    model_config = ConfigDict(frozen=True)

    content_key: str
    run_id: str
    """With ``content_key``, the key of the trial's grade record."""
    task_id: str
    model_id: str
    prompt_revision: str
    agent_digest: str
    """sha256 of the agent command (or of the built-in agent's name), 16 hex digits."""
    exit_code: int | None
    """``None`` when the agent was stopped at its timeout or never started."""
    timed_out: bool = False
    agent_seconds: float = 0.0
    tool_calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    flow_run_id: str = ""
    """The ``agent-trial`` flow run."""
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class _TrialRow(_Base):
    __tablename__ = "gradeflow_trials"
    __table_args__ = (UniqueConstraint("content_key", "run_id", name="uq_gradeflow_trials_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    content_key: Mapped[str] = mapped_column(String(64), index=True)
    run_id: Mapped[str] = mapped_column(String(200))
    task_id: Mapped[str] = mapped_column(String(128))
    model_id: Mapped[str] = mapped_column(String(200))
    prompt_revision: Mapped[str] = mapped_column(String(200))
    agent_digest: Mapped[str] = mapped_column(String(64))
    exit_code: Mapped[int | None] = mapped_column(Integer)
    timed_out: Mapped[bool] = mapped_column(Boolean)
    agent_seconds: Mapped[float] = mapped_column(Float)
    tool_calls: Mapped[int | None] = mapped_column(Integer)
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    flow_run_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


_TRIAL_COLUMNS = [c.name for c in _TrialRow.__table__.columns if c.name != "id"]


def ledger_url(explicit: str | None = None) -> str:
    """The ledger's SQLAlchemy URL: ``explicit``, ``$GRADEFLOW_DATABASE_URL``, or the default SQLite file."""
    value = explicit or os.environ.get("GRADEFLOW_DATABASE_URL") or str(DEFAULT_LEDGER)
    if "://" in value:
        return value
    return f"sqlite:///{Path(value).expanduser().resolve()}"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _engine(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise SpecError(f"--ledger: not a database URL: {exc}") from None
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    try:
        return create_engine(parsed, pool_pre_ping=True)
    except (ArgumentError, ImportError) as exc:
        raise SpecError(f"--ledger: unsupported database URL {parsed.render_as_string()}: {exc}") from None


class Ledger:
    """A handle on one ledger database; thread-safe, cheap to share between Prefect tasks."""

    def __init__(self, url: str | None = None) -> None:
        self.url = ledger_url(url)
        self._engine = _engine(self.url)
        self._create_schema()

    def __reduce__(self) -> tuple[Any, ...]:
        # A Dask worker gets the URL and opens its own connection pool.
        return (type(self), (self.url,))

    @property
    def display_url(self) -> str:
        """The URL with any password hidden, for messages."""
        return self._engine.url.render_as_string(hide_password=True)

    @property
    def dialect(self) -> str:
        return self._engine.dialect.name

    def _create_schema(self) -> None:
        try:
            self._engine.connect().close()
        except DBAPIError as exc:
            raise InfraError(
                f"ledger {self.display_url}: cannot connect: {str(exc.orig).strip()}", reason_code="ledger-unavailable"
            ) from exc
        for attempt in range(5):
            try:
                _Base.metadata.create_all(self._engine)
                return
            except DBAPIError as exc:  # another process was creating the same tables: look again
                if attempt == 4:
                    raise InfraError(
                        f"ledger {self.display_url}: cannot create tables: {str(exc.orig).strip()}",
                        reason_code="ledger-unavailable",
                    ) from exc
                time.sleep(0.05 * (attempt + 1))

    def add(self, record: GradeRecord) -> bool:
        """Insert ``record`` atomically; ``False`` when ``(content_key, run_id)`` was already recorded."""
        return self._insert_once(cast(Table, _GradeRow.__table__), record.model_dump(mode="python"))

    def _insert_once(self, table: Table, values: dict[str, Any]) -> bool:
        """One atomic ``INSERT ... ON CONFLICT DO NOTHING``; ``False`` when the row's unique key was there."""
        if self.dialect == "sqlite":
            stmt: Any = sqlite.insert(table).values(values).on_conflict_do_nothing()
        elif self.dialect == "postgresql":
            stmt = postgresql.insert(table).values(values).on_conflict_do_nothing()
        else:
            stmt = insert(table).values(values)
        try:
            with self._answers("write a record"), self._engine.begin() as connection:
                return connection.execute(stmt.returning(table.c.id)).first() is not None
        except IntegrityError:
            return False

    @contextmanager
    def _answers(self, doing: str) -> Iterator[None]:
        """``InfraError`` (``ledger-unavailable``, one line) for a database that fails while ``doing``: a malformed
        SQLite file, a server gone away. A duplicate key (``IntegrityError``) is left to the caller."""
        try:
            yield
        except IntegrityError:
            raise
        except DBAPIError as exc:
            raise InfraError(
                f"ledger {self.display_url}: cannot {doing}: {str(exc.orig).strip()}", reason_code="ledger-unavailable"
            ) from None

    def recorded_keys(self) -> set[tuple[str, str]]:
        """Every ``(content_key, run_id)`` in the ledger."""
        with self._answers("read the records"), self._engine.connect() as connection:
            rows = connection.execute(select(_GradeRow.content_key, _GradeRow.run_id))
            return {(row[0], row[1]) for row in rows}

    def records(self, keys: Iterable[tuple[str, str]] | None = None) -> list[GradeRecord]:
        """All records in insertion order, or only those whose key is in ``keys``."""
        wanted = set(keys) if keys is not None else None
        with self._answers("read the records"), self._engine.connect() as connection:
            rows = connection.execute(select(_GradeRow.__table__).order_by(_GradeRow.id)).mappings()
            found = [_to_record(row) for row in rows]
        return found if wanted is None else [r for r in found if r.key in wanted]

    def add_review(self, review: ReviewRecord) -> bool:
        """Record a review answer; ``False`` when that review run's answer was already recorded."""
        return self._insert_once(cast(Table, _ReviewRow.__table__), review.model_dump(mode="python"))

    def reviews(self) -> list[ReviewRecord]:
        """Every review answer, oldest first."""
        with self._answers("read the reviews"), self._engine.connect() as connection:
            rows = connection.execute(select(_ReviewRow.__table__).order_by(_ReviewRow.id)).mappings()
            return [ReviewRecord.model_validate(_row_values(row, _REVIEW_COLUMNS)) for row in rows]

    def add_strength(self, strength: StrengthRecord) -> None:
        """Record a strength run; the latest one per task spec digest is the one :meth:`strengths` reads."""
        with self._answers("write a strength"), self._engine.begin() as connection:
            connection.execute(insert(cast(Table, _StrengthRow.__table__)).values(strength.model_dump(mode="python")))

    def strengths(self) -> dict[str, StrengthRecord]:
        """The latest strength per task spec digest."""
        with self._answers("read the strengths"), self._engine.connect() as connection:
            rows = connection.execute(select(_StrengthRow.__table__).order_by(_StrengthRow.id)).mappings()
            found = [StrengthRecord.model_validate(_row_values(row, _STRENGTH_COLUMNS)) for row in rows]
        return {s.task_spec_hash: s for s in found}

    def add_trial(self, trial: TrialRecord) -> bool:
        """Record a trial; ``False`` when ``(content_key, run_id)`` was already recorded."""
        return self._insert_once(cast(Table, _TrialRow.__table__), trial.model_dump(mode="python"))

    def record_trial(self, trial: TrialRecord, record: GradeRecord) -> None:
        """A trial and its grade, in one transaction that first removes any record of either under their key
        (what an interrupted earlier attempt left): a trial is complete with both records or has neither."""
        grades, trials = cast(Table, _GradeRow.__table__), cast(Table, _TrialRow.__table__)
        with self._answers("write a trial"), self._engine.begin() as connection:
            for table in (grades, trials):
                connection.execute(
                    delete(table).where(table.c.content_key == trial.content_key, table.c.run_id == trial.run_id)
                )
            connection.execute(insert(trials).values(trial.model_dump(mode="python")))
            connection.execute(insert(grades).values(record.model_dump(mode="python")))

    def trial_keys(self) -> set[tuple[str, str]]:
        """Every ``(content_key, run_id)`` of the trials table."""
        with self._answers("read the trials"), self._engine.connect() as connection:
            rows = connection.execute(select(_TrialRow.content_key, _TrialRow.run_id))
            return {(row[0], row[1]) for row in rows}

    def trials(self) -> list[TrialRecord]:
        """Every trial, oldest first."""
        with self._engine.connect() as connection:
            rows = connection.execute(select(_TrialRow.__table__).order_by(_TrialRow.id)).mappings()
            return [TrialRecord.model_validate(_row_values(row, _TRIAL_COLUMNS)) for row in rows]

    def close(self) -> None:
        """Release the connection pool."""
        self._engine.dispose()


def _to_record(row: Any) -> GradeRecord:
    return GradeRecord.model_validate(_row_values(row, _COLUMNS))


def _row_values(row: Any, columns: list[str]) -> dict[str, Any]:
    values = {name: row[name] for name in columns}
    created: datetime = values["created_at"]
    # SQLite keeps no zone (everything is written in UTC); PostgreSQL answers in the session's zone.
    values["created_at"] = created.replace(tzinfo=UTC) if created.tzinfo is None else created.astimezone(UTC)
    return values
