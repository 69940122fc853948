"""The webhook's idempotency store: one SQLite row per grade request accepted, kept across restarts.

A request is keyed by what it grades (:func:`request_key`: the task spec hash, the submission id, the
patch hash and the profile), not by its delivery id: the same signed body under a new
``X-GitHub-Delivery``, or a redelivery, is a duplicate of the first and starts nothing. A key is
*claimed* before its flow run is created and *released* when creation fails, so a request after a
failure is accepted again. The claim is one ``INSERT`` on a primary key: two concurrent requests for
one key never both win. The flow run is also created with the key as Prefect's ``idempotency_key``,
so even a lost store, or the loser of a race, gets the one run instead of a second.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

__all__ = ["DeliveryStore", "request_key"]


def request_key(task_spec_hash: str, submission_id: str, patch_hash: str, profile: str) -> str:
    """The idempotency key of a grade request (``profile`` is the profile's content, or its name)."""
    parts = [task_spec_hash, submission_id, patch_hash, profile]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


class DeliveryStore:
    """Request keys the receiver accepted and their flow runs, in the SQLite file ``path`` (folder created)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS grade_requests (request_key TEXT PRIMARY KEY, flow_run_id TEXT,"
            " received_at TEXT DEFAULT CURRENT_TIMESTAMP)"
        )

    def claim(self, key: str) -> bool:
        """``True`` when ``key`` was not seen before (it is now claimed), ``False`` for a duplicate."""
        with self._lock:
            try:
                self._db.execute("INSERT INTO grade_requests (request_key) VALUES (?)", (key,))
            except sqlite3.IntegrityError:
                return False
        return True

    def record(self, key: str, flow_run_id: str) -> None:
        """Remember the flow run a claimed key started."""
        with self._lock:
            self._db.execute("UPDATE grade_requests SET flow_run_id = ? WHERE request_key = ?", (flow_run_id, key))

    def release(self, key: str) -> None:
        """Forget a claim whose flow run could not be created (the sender may send the request again)."""
        with self._lock:
            self._db.execute("DELETE FROM grade_requests WHERE request_key = ? AND flow_run_id IS NULL", (key,))

    def flow_run_of(self, key: str) -> str | None:
        """The flow run a key started, if any."""
        with self._lock:
            query = "SELECT flow_run_id FROM grade_requests WHERE request_key = ?"
            row = self._db.execute(query, (key,)).fetchone()
        return row[0] if row else None

    def close(self) -> None:
        with self._lock:
            self._db.close()
