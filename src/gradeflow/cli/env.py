"""``gradeflow env list`` and ``gradeflow env prune``: the roots and built bases kept on this machine.

``list`` prints one line per entry (kind, size, last use, name), least recently used first, and the total;
``prune`` removes entries least recently used first until the rest fit ``--cap`` (by default
``$GRADEFLOW_ENV_CAP``), and those unused for longer than ``--unused-for``, then says what is left (see
:mod:`gradeflow.environments.store`). Both exit 0, or 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from typing import TYPE_CHECKING

from gradeflow.config import ENV_CAP_VARIABLE
from gradeflow.errors import SpecError

if TYPE_CHECKING:
    from gradeflow.environments.store import Stored

__all__ = ["ENV_COMMANDS", "add_env_command", "run_env_command"]

ENV_COMMANDS = ("env",)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def add_env_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``env list`` and ``env prune``."""
    env = sub.add_parser("env", help="list or prune the roots and built environments kept on this machine")
    actions = env.add_subparsers(dest="env_command", required=True)
    listing = actions.add_parser("list", help="every root and base, least recently used first")
    listing.add_argument("--json", action="store_true")
    prune = actions.add_parser("prune", help="remove the least recently used until the rest fit")
    prune.add_argument(
        "--cap",
        "--max-size",
        dest="cap",
        metavar="SIZE",
        help=f"keep at most this much, e.g. 50G, 500M (default: ${ENV_CAP_VARIABLE})",
    )
    prune.add_argument("--unused-for", help="also remove what no grade used for this long, e.g. 7d, 12h")
    prune.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    prune.add_argument("--json", action="store_true")


def run_env_command(args: argparse.Namespace) -> int:
    from gradeflow.config import byte_size, env_cap
    from gradeflow.environments.store import prune, stored

    if args.env_command == "list":
        entries = stored()
        _print(entries, args.json, "kept")
        return 0
    cap = byte_size(args.cap, "--cap") if args.cap is not None else env_cap()
    unused_for = _age(args.unused_for)
    if cap is None and unused_for is None:
        raise SpecError(f"env prune: give --cap, --unused-for or both (or set {ENV_CAP_VARIABLE})")
    before = stored()
    removed = prune(cap, unused_for, dry_run=args.dry_run)
    _print(removed, args.json, "would remove" if args.dry_run else "removed")
    if not args.json:
        _print_left(len(before) - len(removed), sum(e.bytes for e in before) - sum(e.bytes for e in removed), cap)
    return 0


def _age(value: str | None) -> float | None:
    if value is None:
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", value.strip())
    if not match:
        raise SpecError(f"--unused-for: {value!r} is not a duration like 7d, 12h, 30m or 90s")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _print(entries: list[Stored], as_json: bool, verb: str) -> None:
    if as_json:
        rows = [
            {
                "kind": e.kind,
                "name": e.name,
                "path": str(e.path),
                "bytes": e.bytes,
                "used": e.used,
                "environment": e.environment,
            }
            for e in entries
        ]
        print(json.dumps(rows, indent=2))
        return
    now = time.time()
    for e in entries:
        what = "base+env" if e.environment else e.kind
        print(f"{what:8}  {_human(e.bytes):>8}  {_ago(now - e.used):>9}  {e.name}")
    print(f"{verb}: {len(entries)} entries, {_human(sum(e.bytes for e in entries))}")


def _print_left(count: int, size: int, cap: int | None) -> None:
    line = f"left: {count} entries, {_human(size)}"
    if cap is not None:
        line += f" (cap {_human(cap)})"
        if size > cap:
            line += ": over it, the rest are in use, being built or used in the last ten minutes"
    print(line)


def _human(size: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _ago(seconds: float) -> str:
    for limit, unit in ((3600, 60), (86400, 3600)):
        if seconds < limit:
            return f"{seconds / unit:.0f}{'m' if unit == 60 else 'h'} ago"
    return f"{seconds / 86400:.0f}d ago"
