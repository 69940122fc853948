"""The harness's signatures, checked on the grader's side with the key it kept (see ``Harness.key``).

The plugin signs, with the run's key (HMAC-SHA256), its record (a last line ``hmac-sha256 <hex>`` after the
JSON) and each line of the call log (``[sequence, node id, result, signature]``, the signature over the JSON
of the first three). The key reaches the plugin on standard input and is never on the run's disk, so a
record or log rewritten by anything that did not get the key (a thread after pytest finished, a detached
process) carries no valid signature.
"""

from __future__ import annotations

import hashlib
import hmac
import json

__all__ = ["parse_log", "record_signature_problems", "split_signed"]

_SIGNATURE = b"hmac-sha256 "
_RESULTS = ("ok", "raised", "skipped")


def _mac(key: str, data: bytes) -> str:
    return hmac.new(bytes.fromhex(key), data, hashlib.sha256).hexdigest()


def split_signed(data: bytes) -> tuple[bytes, str | None]:
    """The record's JSON and the signature line's hex (``None``: no signature line)."""
    body, _, last = data.rstrip(b"\n").rpartition(b"\n")
    if body and last.startswith(_SIGNATURE):
        return body, last[len(_SIGNATURE) :].decode("ascii", "replace")
    return data, None


def record_signature_problems(body: bytes, signature: str | None, key: str) -> list[str]:
    """Empty when ``signature`` is the run key's MAC of the record's JSON."""
    if signature is None:
        return ["the harness record carries no signature made with the run's key"]
    if not key or not hmac.compare_digest(signature, _mac(key, body)):
        return ["the harness record's signature is not the run key's: the record was rewritten"]
    return []


def parse_log(data: bytes, key: str) -> tuple[dict[str, str], list[str], list[str]]:
    """The log's calls (the first line per test winning), every line that is not one honest entry, and every
    line not signed with ``key`` in its place (numbered from 0, one after the other)."""
    calls: dict[str, str] = {}
    problems: list[str] = []
    unsigned: list[str] = []
    for number, line in enumerate(data.splitlines()):
        try:
            sequence, nodeid, result, signature = json.loads(line)
            if not isinstance(nodeid, str) or result not in _RESULTS or not isinstance(signature, str):
                raise ValueError
        except (ValueError, TypeError):
            problems.append(f"line {number + 1} of the harness's call log is not an entry it writes")
            continue
        signed = json.dumps([sequence, nodeid, result]).encode("utf-8")
        if sequence != number or not key or not hmac.compare_digest(signature, _mac(key, signed)):
            unsigned.append(
                f"line {number + 1} of the harness's call log is not signed with the run's key in its place"
            )
        if nodeid in calls and calls[nodeid] != result:
            problems.append(f"the harness's call log holds two results for {nodeid}")
        calls.setdefault(nodeid, result)
    return calls, problems[:3], unsigned[:3]
