"""Reading a webhook body as JSON, strictly: what cannot be parsed, or is nested or sized past what a
grade request needs, is refused with a :class:`PayloadError` (the receiver answers 400), never a crash.

- not UTF-8, not JSON, or ``NaN``/``Infinity`` → ``malformed``;
- arrays and objects nested deeper than :data:`MAX_DEPTH` → ``too-deep`` (a 200,000-deep body too:
  the parser's own recursion limit is caught, the depth is then checked on the parsed value);
- a number of magnitude above 2⁶³ (``1e400``, a 5,000-digit integer) → ``out-of-range``.

:func:`sent_patch` reads the patch of a ``/hooks/grade`` payload: ``patch`` (text) or ``patch_base64`` (any
bytes); a ``patch`` holding a surrogate escape (``\\ud800``: no character, no byte) → ``invalid``.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from typing import Any

__all__ = ["MAX_DEPTH", "PayloadError", "parse_json", "sent_patch"]

MAX_DEPTH = 32
"""Deepest nesting of arrays and objects accepted (a GitHub ``pull_request`` event needs about 6)."""
_MAX_MAGNITUDE = 2**63
_MAX_DIGITS = 20


class PayloadError(ValueError):
    """A body that is not acceptable JSON: ``error`` is the machine-readable code, the message says why."""

    def __init__(self, error: str, detail: str) -> None:
        super().__init__(detail)
        self.error = error


def _integer(text: str) -> int:
    value = int(text) if len(text.lstrip("-")) <= _MAX_DIGITS else _MAX_MAGNITUDE + 1
    if abs(value) > _MAX_MAGNITUDE:
        raise PayloadError("out-of-range", f"the number {text[:24]}{'…' if len(text) > 24 else ''} is out of range")
    return value


def _real(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or abs(value) > _MAX_MAGNITUDE:
        raise PayloadError("out-of-range", f"the number {text[:24]} is out of range")
    return value


def _constant(text: str) -> Any:
    raise PayloadError("malformed", f"{text} is not a JSON number")


def _depth(value: Any) -> int:
    """Nesting depth of arrays and objects (a scalar is 0), walked without recursion, stopping past the limit."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= MAX_DEPTH:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest


def parse_json(body: bytes) -> Any:
    """The JSON value of ``body``; :class:`PayloadError` when it is malformed, too deep or out of range."""
    try:
        value = json.loads(body.decode("utf-8"), parse_int=_integer, parse_float=_real, parse_constant=_constant)
    except RecursionError:
        raise PayloadError("too-deep", f"the body nests deeper than {MAX_DEPTH} levels") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PayloadError("malformed", f"body is not JSON: {exc}") from None
    if _depth(value) > MAX_DEPTH:
        raise PayloadError("too-deep", f"the body nests deeper than {MAX_DEPTH} levels")
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def sent_patch(payload: dict[str, Any]) -> str:
    """The diff a payload sends, as text (bytes that are not UTF-8 as surrogate escapes, as a diff file is
    read): exactly one of ``patch`` and ``patch_base64``; ``PayloadError("invalid", ...)`` otherwise."""
    if ("patch" in payload) == ("patch_base64" in payload):
        raise PayloadError("invalid", "give exactly one of patch (text) and patch_base64 (the diff's bytes)")
    if "patch_base64" in payload:
        try:
            data = base64.b64decode(str(payload["patch_base64"]), validate=True)
        except (binascii.Error, ValueError):
            raise PayloadError("invalid", "patch_base64: not base64") from None
        return data.decode("utf-8", errors="surrogateescape")
    patch = payload["patch"]
    if not isinstance(patch, str):
        raise PayloadError("invalid", "patch: a string is required")
    found = _SURROGATE.search(patch)
    if found:
        raise PayloadError(
            "invalid",
            f"patch: the escape \\u{ord(found.group()):04x} at character {found.start()} is a lone surrogate, "
            "no character; send a diff whose bytes are not UTF-8 as patch_base64",
        )
    return patch
