"""Prefect clients built on one TLS context per process (gradeflow/tasks/clients.py)."""

from __future__ import annotations

import ssl
import threading

import pytest
from prefect import flow, task
from prefect.client.orchestration import get_client
from prefect.context import SyncClientContext

from gradeflow.tasks.clients import shared_client_context


@task
def _add(a: int, b: int) -> int:
    return a + b


@flow
def _adding() -> int:
    assert get_client(sync_client=True) is SyncClientContext.get().client  # type: ignore[union-attr]
    return _add(1, 2)


@pytest.mark.usefixtures("prefect")
def test_flows_in_the_shared_context_build_no_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    with shared_client_context():  # the process's context and Prefect's log and event services: built once
        assert _adding() == 3
    built: list[object] = []
    caller = threading.get_ident()
    real = ssl.create_default_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        if threading.get_ident() == caller:  # Prefect's event service reconnects on a thread of its own
            built.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    for _ in range(2):
        with shared_client_context():
            assert _adding() == 3
    assert built == []
    assert _adding() == 3  # outside it, Prefect builds a context for the flow's client, as before
    assert built
