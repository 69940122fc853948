"""SWE-bench Verified as its users run it: rows imported with no commands file, predictions graded by the CLI.

For a chosen set of instances (``--repos``, ``--per-repo``, ``--instances``; by default a mixed sample, two
instances of every repository whose history is here), the bench builds what a user has: a mirrors folder,
``instances.jsonl`` and three predictions files (the gold patches, empty patches and a released model's
patches). It imports the rows with ``gradeflow task import-swebench`` (gradeflow's own table) and grades each
predictions file with ``gradeflow evaluate --predictions ... --concurrency N --swebench-report ...`` (workers,
the ledger, the progress bar), then runs each task's test command alone in the environment the grades built
(gradeflow's sandbox API: the same ``environment.root``, setup and hidden tests, no recorder) and prints, per
instance, SWE-bench's official verdict on the model's patch, gradeflow's verdicts on the three patches, the
environment's build, the grades' times and the raw command's, and the totals. Where the rows, histories and
the model run come from: ``bench/_swebench_rows.py``.

    GRADEFLOW_ROOTS=/var/cache/gradeflow/roots python bench/swebench_run.py [--repos sympy/sympy] \
        [--per-repo 2] [--instances ID ...] [--concurrency 2] [--regrade ID ...]

The work folder is ``$GRADEFLOW_BENCH_WORK`` (default ``/tmp/gradeflow-swebench``): mirrors, rows,
predictions, tasks, reports, ``ledger.db``, ``raw.json`` and ``home/`` (``GRADEFLOW_HOME``: environments,
baselines and the Prefect server the CLI starts, stopped at the end). Run again, it resumes: ``evaluate``
skips every grade the ledger has and the raw runs already measured are kept; ``--regrade`` drops the named
instances' grades and raw runs first (after a change to gradeflow, whose version the ledger's keys carry).

The imported tasks are given ``tests.publish_hidden_details: true``: the ledger then keeps the tests step's
and the grade's times (withheld by default, as the candidate's code steers them); no verdict depends on it.
Times: "env" the environment's build (setup with the network, read from its files' times in ``home/``); "env
MiB" the instance's own environment on disk (its layer over a shared one, when it has one: the totals line adds
the shared builds, their sizes and build times); "grade" the mean of the empty and model grades' wall time (the
environment built), "tests" their tests step,
"raw" the test command alone, measured in this run after the grades.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from _swebench_rows import (
    ROWS,
    has_commit,
    history,
    in_run,
    instance_ids,
    model_run,
    read_row,
    repo_of,
    submodule_repos,
)

WORK = Path(os.environ.get("GRADEFLOW_BENCH_WORK", "/tmp/gradeflow-swebench")).resolve()
os.environ.setdefault("GRADEFLOW_HOME", str(WORK / "home"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_LOG_LEVEL", "WARNING")

from gradeflow.engine.local_server import stop_server  # noqa: E402
from gradeflow.environments.disk import tree_size  # noqa: E402
from gradeflow.evaluation.ledger import GradeRecord, Ledger  # noqa: E402
from gradeflow.flows.session import open_session  # noqa: E402
from gradeflow.sandbox.base import remove_tree  # noqa: E402
from gradeflow.spec import load_task  # noqa: E402
from gradeflow.tasks.baseline import (  # noqa: E402
    baseline_key,
    build_environment,
    ensure_pristine,
    inject_hidden,
    open_sandbox,
    working_copy,
)
from gradeflow.tasks.environment import describe_environment  # noqa: E402

GRADEFLOW = [sys.executable, "-m", "gradeflow.cli"]
KINDS = {"gold": "gold", "empty": "empty", "model": "gemini-3-pro-mini-swe-agent"}
SUMMARY = re.compile(r"^(=+ .*(passed|failed|error).* =+|Ran \d+ tests.*|OK.*|FAILED.*|tests finished: .*)$")


def select(args: argparse.Namespace) -> list[str]:
    """The instances asked for; by default ``--per-repo`` of each repository, those the model run has first
    (spread over their sorted ids), then rows outside SWE-bench Verified (gold and empty patches only)."""
    if args.instances:
        return list(args.instances)
    verified = in_run()
    chosen = []
    by_repo: dict[str, list[str]] = {}
    for instance in instance_ids(args.rows):
        by_repo.setdefault(repo_of(instance), []).append(instance)
    for repo, ids in sorted(by_repo.items()):
        if (args.repos and repo not in args.repos) or not history(repo).is_dir():
            continue
        present = [i for i in ids if has_commit(history(repo), str(read_row(i, args.rows)["base_commit"]))]
        picked: list[str] = []
        for group in ([i for i in present if i in verified], [i for i in present if i not in verified]):
            wanted = args.per_repo - len(picked)
            picked += group[:: max(1, len(group) // max(1, wanted))][:wanted]
        chosen += picked
    return chosen


def prepare(instances: list[str], rows_repo: Path) -> dict[str, dict[str, str]]:
    """The mirrors, ``instances.jsonl`` and the predictions files; each instance's version and official verdict."""
    rows: list[dict[str, object]] = []
    predictions: dict[str, list[dict[str, str]]] = {kind: [] for kind in KINDS}
    official: dict[str, dict[str, str]] = {}
    verified = in_run()
    for instance in instances:
        row = read_row(instance, rows_repo)
        own = str(row["repo"])
        for repo in [own, *submodule_repos(history(own), own, str(row["base_commit"]))]:
            mirror = WORK / "mirrors" / repo.replace("/", "__")
            if not mirror.is_dir() and history(repo).is_dir():
                mirror.parent.mkdir(parents=True, exist_ok=True)
                subprocess.run(["git", "clone", "-q", "--bare", "--local", str(history(repo)), str(mirror)])
        resolved, model_patch = model_run(instance) if instance in verified else (None, None)
        rows.append(row)
        for kind, patch in (("gold", str(row["patch"])), ("empty", ""), ("model", model_patch)):
            if patch is not None:
                line = {"instance_id": instance, "model_patch": patch, "model_name_or_path": KINDS[kind]}
                predictions[kind].append(line)
        verdict = "-" if resolved is None else "pass" if resolved else "fail"
        official[instance] = {"official": verdict, "version": str(row["version"])}
    (WORK / "instances.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (WORK / "preds").mkdir(exist_ok=True)
    for kind, lines in predictions.items():
        (WORK / "preds" / f"{kind}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return official


def import_rows(instances: list[str]) -> list[str]:
    """``gradeflow task import-swebench``; the instances imported (their tasks publish the tests step's time)."""
    started = time.perf_counter()
    done = subprocess.run(
        [*GRADEFLOW, "task", "import-swebench", "instances.jsonl", "--repos", "mirrors", "--out", "tasks"],
        capture_output=True,
        text=True,
    )
    print(
        f"import-swebench: exit {done.returncode} in {time.perf_counter() - started:.1f} s\n{done.stderr}", flush=True
    )
    imported = []
    for instance in instances:
        spec = WORK / "tasks" / instance / "task.yaml"
        if spec.is_file():
            text = spec.read_text()
            if "publish_hidden_details" not in text:
                spec.write_text(text.replace("\ntests:\n", "\ntests:\n  publish_hidden_details: true\n", 1))
            imported.append(instance)
    return imported


def evaluate(instances: list[str], concurrency: int) -> None:
    """``gradeflow evaluate`` of each predictions file (of the imported instances), as a user runs it."""
    for kind in KINDS:
        lines = (WORK / "preds" / f"{kind}.jsonl").read_text().splitlines()
        kept = [line for line in lines if json.loads(line)["instance_id"] in instances]
        if not kept:
            continue
        (WORK / "preds" / f"{kind}.imported.jsonl").write_text("".join(line + "\n" for line in kept))
        command = [
            *GRADEFLOW, "evaluate", "--predictions", f"preds/{kind}.imported.jsonl", "--tasks", "tasks/*/task.yaml",
            "--ledger", "ledger.db", "--concurrency", str(concurrency),
            "--swebench-report", f"reports/{kind}.json", "--max-inconclusive", "1",
        ]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        print(f"evaluate {kind}: exit {done.returncode} in {time.perf_counter() - started:.1f} s", flush=True)


def raw_test_run(task_file: Path) -> dict[str, object]:
    """The task's test command alone in its built environment (hidden tests laid in, no recorder)."""
    task = load_task(task_file)
    session = open_session(task)
    fingerprint = describe_environment.fn(task, session.factory)
    key = baseline_key(task, session.base, fingerprint)
    pristine = ensure_pristine(session.base, key)
    environment = build_environment(task, pristine, key, session.factory)
    tree = working_copy(pristine)
    try:
        inject_hidden(task, tree, tree.parent / "backup")
        with open_sandbox(tree, pristine, session.factory, environment) as box:
            started = time.perf_counter()
            result = box.run(task.tests.command, env=task.run_env(), timeout=task.tests.timeout)
            wall = time.perf_counter() - started
    finally:
        remove_tree(tree.parent, ignore_errors=True)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)  # tox runs sphinx's pytest with --color yes
    summary = [line for line in plain.splitlines() if SUMMARY.match(line.strip())]
    return {"seconds": wall, "exit": result.exit_code, "summary": " ".join(summary[-2:])}


def raw_runs(instances: list[str]) -> dict[str, dict[str, object]]:
    """The raw run of each instance, measured once (kept in ``raw.json``)."""
    path = WORK / "raw.json"
    raw = json.loads(path.read_text()) if path.is_file() else {}
    for instance in instances:
        if instance not in raw:
            try:
                raw[instance] = raw_test_run(WORK / "tasks" / instance / "task.yaml")
            except Exception as exc:
                print(f"raw {instance}: {type(exc).__name__}: {exc}", flush=True)
                continue
            print(f"raw {instance}: {raw[instance]}", flush=True)
            path.write_text(json.dumps(raw, indent=1))
    return raw


def regrade(instances: list[str]) -> None:
    """Drop these instances' grades from the ledger and their raw runs."""
    if (WORK / "ledger.db").is_file():
        with sqlite3.connect(WORK / "ledger.db") as db:
            db.executemany("DELETE FROM gradeflow_grades WHERE task_id = ?", [(i,) for i in instances])
    path = WORK / "raw.json"
    if path.is_file():
        raw = json.loads(path.read_text())
        path.write_text(json.dumps({k: v for k, v in raw.items() if k not in instances}, indent=1))


def environment_build(instance: str) -> float:
    """Seconds from the start of the instance's environment build (its lock made) to its record written.

    ``evaluate`` builds every task's baseline before the grades (its warm step), so no grade's timings hold it."""
    built = sorted((WORK / "home" / "baselines").glob(f"{instance}-*/environment/environment.json"))
    if not built:
        return float("nan")
    record = built[-1]
    return record.stat().st_mtime - (record.parent.parent / "environment.lock").stat().st_mtime


def environment_mib(instance: str) -> float:
    """MiB of the instance's own environment on disk (its layer and archives; a shared one under it not counted)."""
    built = sorted((WORK / "home" / "baselines").glob(f"{instance}-*/environment"))
    return tree_size(built[-1]) / 2**20 if built else float("nan")


def shared_builds() -> list[tuple[str, float, float]]:
    """Each shared environment kept: its key, MiB and build seconds (its lock made to its record written)."""
    found = []
    for record in sorted((WORK / "home" / "shared").glob("*/environment.json")):
        lock = record.parent.with_name(record.parent.name + ".lock")
        seconds = record.stat().st_mtime - lock.stat().st_mtime if lock.exists() else float("nan")
        found.append((record.parent.name, tree_size(record.parent) / 2**20, seconds))
    return found


def _latest(records: list[GradeRecord]) -> dict[tuple[str, str], GradeRecord]:
    """The latest grade per (instance, kind)."""
    latest: dict[tuple[str, str], GradeRecord] = {}
    for record in sorted(records, key=lambda r: r.created_at):
        kind = record.run_id.split("/", 1)[0].removesuffix(".imported")
        if kind in KINDS:
            latest[(record.task_id, kind)] = record
    return latest


def _verdict(record: GradeRecord | None) -> str:
    if record is None:
        return "-"
    if record.status != "graded":
        return "inconcl"
    return "pass" if record.passed else "fail"


def table(instances: list[str], official: dict[str, dict[str, str]], raw: dict[str, dict[str, object]]) -> None:
    ledger = Ledger(str(WORK / "ledger.db"))
    latest = _latest(ledger.records())
    ledger.close()
    print(
        f"\n{'instance':28} {'ver':4} {'official':8} {'gold':7} {'empty':7} {'model':7} {'agree':5} "
        f"{'env s':>6} {'env MiB':>7} {'grade s':>7} {'tests s':>7} {'raw s':>6} {'grade/raw':>9} {'tests-raw':>9}"
    )
    agree: Counter[str] = Counter()
    asked: Counter[str] = Counter()
    inconclusive: Counter[str] = Counter()
    ratios, extra, envs, grades = [], [], [], []
    for instance in instances:
        got = {kind: latest.get((instance, kind)) for kind in KINDS}
        expected = {"gold": "pass", "empty": "fail", "model": official[instance]["official"]}
        verdicts = {kind: _verdict(record) for kind, record in got.items()}
        marks = "".join("-" if expected[k] == "-" else "y" if verdicts[k] == expected[k] else "N" for k in KINDS)
        for kind, record in got.items():
            if expected[kind] != "-":
                asked[kind] += 1
                agree[kind] += verdicts[kind] == expected[kind]
            if record is not None and record.status != "graded":
                inconclusive[f"{kind}: {','.join(record.reason_codes)}"] += 1
        env = environment_build(instance)
        # Times of graded grades only: an inconclusive one stopped early.
        later = [
            r for r in (got["empty"], got["model"]) if r is not None and r.status == "graded" and "total" in r.timings
        ]
        grade = statistics.mean(r.timings["total"] for r in later) if later else float("nan")
        tests = statistics.mean(r.timings.get("tests", float("nan")) for r in later) if later else float("nan")
        seconds = float(raw[instance]["seconds"]) if instance in raw else float("nan")  # type: ignore[arg-type]
        envs.append(env)
        grades += [r.timings["total"] for r in got.values() if r is not None and "total" in r.timings]
        if later and instance in raw:
            ratios.append(grade / seconds)
            extra.append(tests - seconds)
        print(
            f"{instance:28} {official[instance]['version']:4} {official[instance]['official']:8} "
            f"{verdicts['gold']:7} {verdicts['empty']:7} {verdicts['model']:7} {marks:5} {env:6.1f} "
            f"{environment_mib(instance):7.1f} {grade:7.1f} "
            f"{tests:7.1f} {seconds:6.1f} {grade / seconds:9.2f} {tests - seconds:+9.1f}"
        )
    _totals(instances, agree, asked, inconclusive, ratios, extra, envs, grades)


def _totals(
    instances: list[str],
    agree: Counter[str],
    asked: Counter[str],
    inconclusive: Counter[str],
    ratios: list[float],
    extra: list[float],
    envs: list[float],
    grades: list[float],
) -> None:
    repos = Counter(repo_of(i) for i in instances)
    print(f"\n{len(instances)} instances: " + ", ".join(f"{repo} {n}" for repo, n in sorted(repos.items())))
    print("as expected: " + ", ".join(f"{kind} {agree[kind]}/{asked[kind]}" for kind in KINDS))
    print("inconclusive: " + (", ".join(f"{why} x{n}" for why, n in inconclusive.items()) or "none"))
    if ratios:
        print(
            f"a grade (environment built) / raw test command: median {statistics.median(ratios):.2f}x "
            f"(range {min(ratios):.2f}-{max(ratios):.2f}x); tests step - raw: median {statistics.median(extra):+.1f} s "
            f"(range {min(extra):+.1f} to {max(extra):+.1f} s)"
        )
    built = [e for e in envs if e == e]
    if built:
        print(
            f"environment builds: median {statistics.median(built):.0f} s (range {min(built):.0f}-{max(built):.0f} s)"
        )
    print(f"grades' wall time, summed: {sum(grades):.0f} s over {len(grades)} grades")
    shared = shared_builds()
    own = [environment_mib(i) for i in instances]
    own = [mib for mib in own if mib == mib]
    if own:
        print(
            f"environments on disk: own layers {sum(own):.0f} MiB over {len(own)} instances (median "
            f"{statistics.median(own):.1f} MiB), shared {sum(m for _, m, _ in shared):.0f} MiB over {len(shared)} "
            "builds (" + ", ".join(f"{key[:14]} {mib:.0f} MiB {sec:.0f} s" for key, mib, sec in shared) + ")"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=Path, default=ROWS)
    parser.add_argument("--repos", nargs="+", help="owner/name of the repositories to sample (default: all here)")
    parser.add_argument("--per-repo", type=int, default=2, help="instances per repository (default 2)")
    parser.add_argument("--instances", nargs="+", help="these instances instead of a sample")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--regrade", nargs="+", default=[], help="drop these instances' grades and raw runs first")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    os.chdir(WORK)
    instances = select(args)
    official = prepare(instances, args.rows)
    regrade(args.regrade)
    imported = import_rows(instances)
    try:
        evaluate(imported, args.concurrency)
        raw = raw_runs(imported)
    finally:
        stop_server()
    table(imported, official, raw)
    missing = sorted(set(instances) - set(imported))
    if missing:
        print(f"not imported: {' '.join(missing)}")


if __name__ == "__main__":
    main()
