"""An agent that looks for what it must never find: hidden tests, the reference, the task spec, the ledger.

Run inside the agent's sandbox. Exit 0: the sanity checks passed (it can read its issue file and its
workspace) and it found nothing; 1: it found something (printed, the search stops there); 2: a sanity
check failed. The
needles are stored reversed so that this file itself never matches them.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

NEEDLES = [
    "egassem_orez_yb_edivid_tset"[::-1].encode(),
    "evitagen_edivid_tset"[::-1].encode(),
    "egassem raelc a htiw rorrEnoisiviDoreZ sesiaR"[::-1].encode(),
    "sedarg_wolfedarg"[::-1].encode(),
    "denifednu si orez yb noisivid"[::-1].encode(),
]
NAMES = {"test_hidden_calc.py", "reference.diff", "task.yaml", "ledger.db", "suite.yaml"}
SKIP = {"/proc", "/sys", "/dev"}
HERE = str(Path(__file__).resolve().parent)
# Public code whose content may quote the fix (gradeflow's own README, in its package metadata): names are
# still checked there, contents are not.
PUBLIC = ("/usr", "/etc", *(p for p in sys.path if p.endswith("site-packages")))


def _hits(path: Path) -> list[str]:
    try:
        if path.stat().st_size > 4 * 1024 * 1024:
            return []
        data = path.read_bytes()
    except OSError:
        return []
    return [f"{path}: {n.decode()[::-1]}" for n in NEEDLES if n in data]


def search_files(found: list[str]) -> None:
    for root, dirs, files in os.walk("/", followlinks=False):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in SKIP and os.path.join(root, d) != HERE]
        for name in files:
            path = Path(root) / name
            if name in NAMES or "calc-divzero" in name:
                found.append(f"name: {path}")
            if not root.startswith(PUBLIC):
                found += _hits(path)


def search_proc(found: list[str]) -> None:
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        for part in ("environ", "cmdline"):
            found += _hits(Path("/proc") / pid / part)
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if "examples" in cwd or ".gradeflow" in cwd:
            found.append(f"/proc/{pid}/cwd: {cwd}")


def search_network(found: list[str]) -> None:
    port = int((Path(HERE) / "prefect-port").read_text())
    for host, at in (("127.0.0.1", port), ("127.0.0.1", 4200), ("1.1.1.1", 80), ("8.8.8.8", 53)):
        try:
            with socket.create_connection((host, at), timeout=2):
                found.append(f"network: connected to {host}:{at}")
        except OSError:
            pass
    if any(k.startswith(("PREFECT_", "GRADEFLOW_DATABASE")) for k in os.environ):
        found.append("environment: a Prefect or ledger setting")


def main() -> int:
    issue = Path(os.environ["GRADEFLOW_ISSUE_FILE"])
    if not issue.is_file() or not Path("src/calc.py").is_file():
        print("sanity: cannot see the issue file or the workspace")
        return 2
    found: list[str] = []
    for search in (search_network, search_proc, search_files):  # cheapest first; stop at the first finding
        search(found)
        if found:
            print("\n".join(found))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
