"""The webhook's idempotency store: one SQLite row per accepted delivery id, kept across restarts.

A delivery is *claimed* before its flow run is created and *released* when creation fails, so a
redelivery after a failure is accepted again while a redelivery after a success is refused. The
claim is one ``INSERT`` on a primary key: two concurrent deliveries with the same id never both win.
The flow run is also created with the delivery id as Prefect's ``idempotency_key``, so even a lost
store cannot start a second run for one delivery.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

__all__ = ["DeliveryStore"]


class DeliveryStore:
    """Delivery ids seen by the receiver, in the SQLite file ``path`` (created with its folder)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS deliveries (delivery_id TEXT PRIMARY KEY, flow_run_id TEXT,"
            " received_at TEXT DEFAULT CURRENT_TIMESTAMP)"
        )

    def claim(self, delivery_id: str) -> bool:
        """``True`` when ``delivery_id`` was not seen before (it is now claimed), ``False`` for a replay."""
        with self._lock:
            try:
                self._db.execute("INSERT INTO deliveries (delivery_id) VALUES (?)", (delivery_id,))
            except sqlite3.IntegrityError:
                return False
        return True

    def record(self, delivery_id: str, flow_run_id: str) -> None:
        """Remember the flow run a claimed delivery started."""
        with self._lock:
            self._db.execute("UPDATE deliveries SET flow_run_id = ? WHERE delivery_id = ?", (flow_run_id, delivery_id))

    def release(self, delivery_id: str) -> None:
        """Forget a claim whose flow run could not be created (the sender may deliver it again)."""
        with self._lock:
            self._db.execute("DELETE FROM deliveries WHERE delivery_id = ? AND flow_run_id IS NULL", (delivery_id,))

    def flow_run_of(self, delivery_id: str) -> str | None:
        """The flow run a delivery started, if any."""
        with self._lock:
            query = "SELECT flow_run_id FROM deliveries WHERE delivery_id = ?"
            row = self._db.execute(query, (delivery_id,)).fetchone()
        return row[0] if row else None

    def close(self) -> None:
        with self._lock:
            self._db.close()
