"""Logging: structlog JSON to stderr, with a redaction step before anything is rendered.

Redaction drops the values of environment variables, anything that looks like a token or key, and
file contents (keys named like ``content``/``patch``/``stdout``), so secrets never reach a log.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

__all__ = ["configure_logging", "quiet_prefect", "redact"]

_CONTENT_KEYS = {
    "content",
    "contents",
    "patch",
    "diff",
    "stdout",
    "stderr",
    "output",
    "source",
    "env",
    "environ",
}
_SECRET_KEY = re.compile(r"(secret|token|password|passwd|api[_-]?key|auth|credential|private)", re.I)
_SECRET_VALUE = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|xox[abpr]-[\w-]{10,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----|eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,}|Bearer\s+[\w.~+/-]{16,})"
)
REDACTED = "[redacted]"


def _env_values() -> list[str]:
    # Short values ("1", "C") would redact half of every line; secrets are longer than that.
    return sorted({v for v in os.environ.values() if len(v) >= 8}, key=len, reverse=True)


def _scrub(text: str, env_values: list[str]) -> str:
    text = _SECRET_VALUE.sub(REDACTED, text)
    for value in env_values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def redact(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: drop content and secret-named keys, scrub secret-looking values."""
    env_values = _env_values()
    for key in list(event):
        value = event[key]
        if key.lower() in _CONTENT_KEYS or _SECRET_KEY.search(key):
            event[key] = REDACTED
        elif isinstance(value, str):
            event[key] = _scrub(value, env_values)
        elif not isinstance(value, int | float | bool | type(None)):
            event[key] = _scrub(repr(value), env_values)
    return event


def configure_logging(level: str | None = None) -> None:
    """JSON lines on stderr, run and task ids bound through contextvars, redaction last before rendering."""
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
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def quiet_prefect() -> None:
    """Keep Prefect's console chatter to warnings so the CLI's own output stays readable."""
    for name in ("prefect", "prefect.flow_runs", "prefect.task_runs", "prefect.server", "httpx", "uvicorn"):
        logging.getLogger(name).setLevel(logging.WARNING)
