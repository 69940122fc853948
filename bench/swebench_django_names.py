"""SWE-bench Verified's Django test names: how many gradeflow maps to test ids, how many it leaves out.

Every Django row of SWT-bench's page set (113 rows of SWE-bench; ``bench/_swebench_rows.py``
says where the pages and Django's history come from) is imported with gradeflow's table and no commands
file (``import_instances``, as ``gradeflow task import-swebench`` runs it). Printed per list, side by side:
the names, those the name rule alone leaves out (``map_test_name``: Django's ``test (module.Class)`` and node
ids, the whole rule before docstring lines were read from the test modules), those left out when a docstring
line maps only to the one test it starts (the rule before ``tests.last_run_of``: a line of several tests was
left out), and those the import leaves out now (a line of several tests is listed with their ids and scored
as the last of them to run), with the reasons of what is still left out counted; then the rows skipped because
no FAIL_TO_PASS name maps. Nothing is graded.

    python bench/swebench_django_names.py [--show 10]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from gradeflow.authoring.swebench import import_instances, map_test_name

MIRRORS = Path("/work/.mirror")
PAGES = "evals/bench/test"
KEYS = ("FAIL_TO_PASS", "PASS_TO_PASS")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _rows(pages: Path) -> list[dict[str, Any]]:
    sys.path.insert(0, str(Path(__file__).parent))
    from _swebench_rows import row_from_page  # the page reader of the grading bench

    names = _git(pages, "ls-tree", "--name-only", f"HEAD:{PAGES}/").split()
    instances = sorted(name.removesuffix(".md") for name in names if name.startswith("django__django-"))
    return [row_from_page(_git(pages, "show", f"HEAD:{PAGES}/{i}.md"), i) for i in instances]


def _reason(text: str) -> str:
    """A reason without the names it quotes, so equal reasons count together."""
    return re.sub(r"\(.*\)", "(...)", text.split(": ", 1)[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--django", type=Path, default=MIRRORS / "apprent1c3+django" / "repo")
    parser.add_argument("--rows", type=Path, default=MIRRORS / "mir+fiddle-test-cov" / "repo")
    parser.add_argument("--show", type=int, default=10, help="how many names left out to print")
    args = parser.parse_args()
    rows = _rows(args.rows)
    before = {key: [n for row in rows for n in row[key] if map_test_name(n, "django-log") is None] for key in KEYS}
    skipped_before = sum(
        1
        for row in rows
        if row["FAIL_TO_PASS"] and all(map_test_name(n, "django-log") is None for n in row["FAIL_TO_PASS"])
    )
    with tempfile.TemporaryDirectory(prefix="gradeflow-names-") as work:
        (Path(work) / "repos").mkdir()
        (Path(work) / "repos" / "django__django").symlink_to(args.django.resolve())
        instances = Path(work) / "instances.jsonl"
        instances.write_text("".join(json.dumps(row) + "\n" for row in rows))
        started = time.perf_counter()
        report = import_instances(instances, Path(work) / "repos", None, Path(work) / "tasks")
        took = time.perf_counter() - started
    print(f"{len(rows)} Django rows; imported {len(report.written)}, skipped {len(report.skipped)} in {took:.0f} s")
    print(
        f"{'names left out':<14} {'names':>6} {'name rule':>10} {'one test':>9} {'last run':>9}  (scored as last run)"
    )
    for key in KEYS:
        total = sum(len(row[key]) for row in rows)
        after = [q for q in report.quarantined if q.key == key]
        shared = [s for s in report.last_run if s.key == key]
        columns = f"{total:>6} {len(before[key]):>10} {len(after) + len(shared):>9} {len(after):>9}"
        print(f"{key:<14} {columns}  ({len(shared)})")
        for reason, count in Counter(_reason(q.reason) for q in after).most_common():
            print(f"  {count:5}  {reason}")
    sizes = Counter(len(s.test_ids) for s in report.last_run)
    print(
        "names scored as the last to run, by how many tests print them: "
        + ", ".join(f"{tests} tests: {count}" for tests, count in sorted(sizes.items()))
    )
    print(f"rows skipped for FAIL_TO_PASS: name rule alone {skipped_before}, the import {len(report.skipped)}")
    for skip in report.skipped:
        print(f"  skipped {skip.instance_id}: {skip.reason}")
    for name in report.quarantined[: args.show]:
        print(f"  left out {name.instance_id} {name.key} {name.name!r}: {name.reason}")


if __name__ == "__main__":
    main()
