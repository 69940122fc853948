"""``prefect server start`` for gradeflow's local server, its SQLite write transactions begun ``IMMEDIATE``.

Run as ``python -m gradeflow.engine._prefect_server server start ...`` (the arguments are Prefect's CLI's), or
serve :func:`create_app` with uvicorn's ``--factory`` (the test suite's servers).

Prefect's server begins its SQLite transactions ``DEFERRED`` unless a caller asks for a row lock. A deferred
transaction that reads before it writes (creating a flow run reads the flow's labels first) holds a read snapshot;
when another connection commits in between (the task run recorder flushing the last grade's task run states, the
event persister), SQLite refuses the upgrade at once (``SQLITE_BUSY_SNAPSHOT``, no busy wait), the API answers 503,
and Prefect's client waits about two seconds (``2 ** 1``, jittered) before it tries again. Measured on ``RepoEnv``
rewards of a 10-test task (0.6 s each): one flow-run creation in eight at one episode stream, two in sixteen at
two, each adding about 2 s. Begun ``IMMEDIATE``, a transaction takes the write lock first and waits for it under
the server's busy timeout instead: writes are serialised by SQLite either way, and none is refused.

Where Prefect's internals are not as expected (another release), the server starts as Prefect ships it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

__all__ = ["create_app", "immediate_sqlite_transactions", "main"]


def immediate_sqlite_transactions() -> bool:
    """Make the SQLite configuration's transactions begin ``IMMEDIATE``; whether it could."""
    try:
        from prefect.server.database import configurations
    except ImportError:
        return False
    config = getattr(configurations, "AioSqliteConfiguration", None)
    original = getattr(config, "begin_transaction", None)
    if config is None or original is None:
        return False
    if getattr(original, "_gradeflow_immediate", False):  # made so already
        return True

    @asynccontextmanager
    async def begin_transaction(self: Any, session: Any, with_for_update: bool = False) -> AsyncIterator[Any]:
        del with_for_update  # every transaction takes the write lock first, as a row-locking one does
        async with original(self, session, with_for_update=True) as transaction:
            yield transaction

    begin_transaction._gradeflow_immediate = True  # type: ignore[attr-defined]
    config.begin_transaction = begin_transaction
    return True


def create_app() -> Any:
    """Prefect's server application (``prefect.server.api.server.create_app``), after
    :func:`immediate_sqlite_transactions`."""
    immediate_sqlite_transactions()
    from prefect.server.api.server import create_app as prefect_app

    return prefect_app()


def main() -> None:
    """Prefect's CLI, after :func:`immediate_sqlite_transactions`."""
    immediate_sqlite_transactions()
    from prefect.cli import app

    app()


if __name__ == "__main__":
    main()
