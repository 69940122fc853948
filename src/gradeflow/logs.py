"""Logging: structlog JSON lines on stderr, context bound per grade, redaction before anything is rendered.

The pipeline (one place, :func:`configure_logging`): merge the context variables a flow bound
(``run_id``, ``task_id``, ``submission_id``...), add the level and a UTC timestamp, format any
exception, :func:`redact`, render JSON. Redaction, at any depth of the event:

* drops the value of a key that names file contents or output (``content``, ``patch``, ``diff``,
  ``source``, ``stdout``, ``stderr``, ``output``, ``env``...) or a secret (``token``, ``password``,
  ``api_key``, ``auth``...);
* replaces, inside any other text, anything that looks like a token or key (GitHub, OpenAI, AWS,
  Slack, JWT, bearer tokens, PEM private keys, ``password=...``), every value of the process
  environment of 8 characters or more, and every value registered with :func:`redacting` (a task's
  ``env``) with ``[redacted]``.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterable, Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TextIO

import structlog

__all__ = ["REDACTED", "configure_logging", "get_logger", "quiet_prefect", "redact", "redacting", "scrub"]

REDACTED = "[redacted]"
_CONTENT_KEYS = {
    "content",
    "contents",
    "patch",
    "diff",
    "stdout",
    "stderr",
    "output",
    "output_tail",
    "source",
    "env",
    "environ",
    "environment_variables",
    "text",
    "body",
}
_SECRET_KEY = re.compile(r"(secret|token|password|passwd|api[_-]?key|auth|credential|private|cookie)", re.I)
_SECRET_VALUE = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|xox[abpr]-[\w-]{10,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"
    r"|eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,}|Bearer\s+[\w.~+/-]{16,}"
    r"|(?i:(?:password|passwd|secret|token|api[_-]?key)\s*[=:]\s*[^\s,;]+))"
)
_MIN_SECRET = 8
"""Shorter values ("1", "C") would redact half of every line; secrets are longer than that."""
_EXTRA: ContextVar[frozenset[str]] = ContextVar("gradeflow_redacted_values", default=frozenset())


@contextmanager
def redacting(values: Iterable[str]) -> Iterator[None]:
    """Within the block (and the tasks it starts), also redact ``values``, e.g. a task spec's ``env``."""
    token = _EXTRA.set(_EXTRA.get() | {v for v in values if len(v) >= _MIN_SECRET})
    try:
        yield
    finally:
        _EXTRA.reset(token)


_RUN_CONTEXT = "PREFECT__"
"""Variables Prefect sets for the run a process executes (``PREFECT__FLOW_RUN_ID``): ids, never secrets; the
same ids are the ``flow_run_id`` and ``run_id`` of every log line, which must stay readable."""


def _secret_values() -> list[str]:
    found = {v for k, v in os.environ.items() if len(v) >= _MIN_SECRET and not k.startswith(_RUN_CONTEXT)}
    values = found | _EXTRA.get()
    return sorted(values, key=len, reverse=True)


def scrub(text: str, secrets: list[str] | None = None) -> str:
    """``text`` with token-like strings and the known secret values replaced by ``[redacted]``."""
    text = _SECRET_VALUE.sub(REDACTED, text)
    for value in _secret_values() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def _clean(key: str, value: Any, secrets: list[str]) -> Any:
    if key.lower() in _CONTENT_KEYS or _SECRET_KEY.search(key):
        return REDACTED
    if isinstance(value, str):
        return scrub(value, secrets)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict):
        return {str(k): _clean(str(k), v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_clean("", v, secrets) for v in value]
    return scrub(repr(value), secrets)


def redact(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: drop content and secret-named keys, scrub secret-looking values, at any depth."""
    secrets = _secret_values()
    for key in list(event):
        event[key] = _clean(key, event[key], secrets) if key != "event" else scrub(str(event[key]), secrets)
    return event


class _Stderr:
    """Whatever ``sys.stderr`` is at write time (a test harness or a daemon may swap it after configuration)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(level: str | None = None, stream: TextIO | None = None) -> None:
    """JSON lines on ``stream`` (stderr), context variables merged, redaction last before rendering."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redact,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelName((level or os.environ.get("GRADEFLOW_LOG_LEVEL", "INFO")).upper())
        ),
        logger_factory=structlog.PrintLoggerFactory(file=stream or _Stderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )


def get_logger(name: str = "gradeflow") -> Any:
    """A structlog logger; configures gradeflow's pipeline first unless the application configured structlog."""
    if not structlog.is_configured():
        configure_logging()
    return structlog.get_logger(name)


def quiet_prefect() -> None:
    """Keep Prefect's console chatter to warnings so the CLI's own output stays readable.

    Prefect configures its loggers from ``PREFECT_LOGGING_LEVEL`` when it is imported (after this runs,
    in the commands that grade), so the setting is given too, unless the user chose a level.
    """
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    for name in ("prefect", "prefect.flow_runs", "prefect.task_runs", "prefect.server", "httpx", "uvicorn"):
        logging.getLogger(name).setLevel(logging.WARNING)
