"""Prefect clients whose TLS context is built once per process.

Prefect builds a new ``ssl.SSLContext`` for every client it makes (loading the whole CA bundle: about 20 ms of
CPU), and it makes one for every flow run entered without a client context and for every artifact post. A
``RepoEnv`` reward is a flow run and posts an artifact, so that was two bundles read per reward, on the
reward's critical path and on the CPU the episodes share. The context is the same for every client of one
process under the same settings, so it is built once here, as Prefect would build it, and handed to the
clients gradeflow makes.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import certifi
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.context import SyncClientContext
from prefect.settings import PREFECT_API_SSL_CERT_FILE, PREFECT_API_TLS_INSECURE_SKIP_VERIFY

__all__ = ["client_settings", "shared_client_context", "sync_client"]


@cache
def _tls_context(skip_verify: bool, cert_file: str | None) -> ssl.SSLContext:
    if skip_verify:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    return ssl.create_default_context(cafile=cert_file or certifi.where())


def client_settings() -> dict[str, Any]:
    """httpx settings for a Prefect client: the process's TLS context for the current Prefect settings."""
    skip_verify = bool(PREFECT_API_TLS_INSECURE_SKIP_VERIFY.value())
    return {"verify": _tls_context(skip_verify, PREFECT_API_SSL_CERT_FILE.value())}


def sync_client() -> SyncPrefectClient:
    """``get_client(sync_client=True)`` with the process's TLS context."""
    return get_client(sync_client=True, httpx_settings=client_settings())


@contextmanager
def shared_client_context() -> Iterator[None]:
    """Flow and task runs entered inside use one client with the process's TLS context (an enclosing client
    context, a parent flow's, is kept as it is)."""
    if SyncClientContext.get() is not None:
        yield
        return
    # Built as SyncClientContext() builds itself, but around a client with the shared TLS context; its
    # settings stay None so that Prefect's own get_client(sync_client=True) calls inside take this client too.
    context = SyncClientContext.model_construct(client=sync_client())
    with context:
        yield
