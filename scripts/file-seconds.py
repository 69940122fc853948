"""Write tests/file_seconds.json from a pytest run's ``--durations=0`` report: each test file's seconds.

``make test`` hands test files to its workers longest first (tests/conftest.py reads this file): the long files
start while every worker is free, and the last minutes are short files on every core instead of one long file on
one. Files it does not list run after the listed ones, in collection order. A stale file costs minutes, never a
result: refresh it when files are added or grow.

    .venv/bin/python -m pytest -q -n auto --dist loadfile --durations=0 -m "not timing" > run.log
    .venv/bin/python scripts/file-seconds.py run.log
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "file_seconds.json"
LEAST = 3.0
"""Files under this many seconds are left out (they run last, in collection order)."""
LINE = re.compile(r"^([\d.]+)s (?:setup|call|teardown)\s+(\S+?\.py)::")


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: file-seconds.py RUN_LOG (a pytest run's output with --durations=0)")
    seconds: Counter[str] = Counter()
    for line in Path(sys.argv[1]).read_text(encoding="utf-8", errors="replace").splitlines():
        found = LINE.match(line)
        if found:
            seconds[found.group(2)] += float(found.group(1))
    if not seconds:
        sys.exit(f"file-seconds: {sys.argv[1]}: no --durations=0 lines")
    kept = {name: round(value) for name, value in seconds.most_common() if value >= LEAST}
    OUT.write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")
    print(f"file-seconds: {len(kept)} files of {len(seconds)} in {OUT}")


if __name__ == "__main__":
    main()
