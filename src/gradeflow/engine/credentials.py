"""Ledger URLs in flow-run parameters carry no password: the worker takes it from its own environment.

Anyone who can read the Prefect API reads every flow run's parameters, so the service never puts a
credential there. :func:`public_ledger` is what a request carries (the URL with its password taken out);
:func:`private_ledger` is what the worker connects with: ``$GRADEFLOW_DATABASE_URL`` when that names the
same database with its password, else the URL as given (the database driver may still find a password in
its own environment, such as libpq's ``PGPASSWORD`` or ``~/.pgpass``).
"""

from __future__ import annotations

import os

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

__all__ = ["has_password", "private_ledger", "public_ledger"]


def has_password(url: str | None) -> bool:
    """Whether ``url`` is a database URL with a password in it."""
    if not url or "://" not in url:
        return False
    try:
        return make_url(url).password is not None
    except ArgumentError:
        return False


def public_ledger(url: str | None) -> str | None:
    """``url`` without its password (unchanged when it has none, or is a plain file path)."""
    if not has_password(url):
        return url
    assert url is not None
    return make_url(url)._replace(password=None).render_as_string(hide_password=False)


def private_ledger(url: str | None) -> str | None:
    """The URL to connect with for a request's ``url``: the environment's when it names the same database."""
    configured = os.environ.get("GRADEFLOW_DATABASE_URL")
    if url is None or not configured or has_password(url):
        return url
    return configured if public_ledger(configured) == url else url
