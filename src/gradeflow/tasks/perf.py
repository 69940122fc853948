"""Task: interleaved benchmark runs on a pristine copy and on the candidate, scored by PerfGrader.

Runs cannot share state. Each side's sandbox gets a copy of the task's environment (what setup built
on the pristine base); its tree is exported, and every timed run, base and candidate alike, starts from
a fresh import of it (``HOME`` as setup left it, ``TMPDIR`` empty; in docker a fresh container, so
``/tmp``, ``/var/tmp`` and ``/dev/shm`` are empty too).

The benchmark is sealed: the files ``perf.command`` and ``perf.check`` name (``python bench.py``,
``python -m pkg.bench``, ``bash run.sh``) and ``perf.sealed`` globs are reset to the base before the
environment is laid over the candidate's tree, and to the base's content with it after. A change to
any of them is reported (``perf-benchmark-modified``).

Inputs the candidate cannot know: a ``{seed}`` in ``perf.command`` (and ``perf.check``) is replaced by a
fresh random number for each pair of runs, the same for the base's run and the candidate's, and with
``compare_output`` the candidate's output is compared with the base's for that seed. A patch that
memoises the benchmark's one input then gains nothing.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import secrets
import shlex
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from prefect import task
from prefect.cache_policies import NO_CACHE

from gradeflow.errors import BaselineBroken
from gradeflow.graders.base import GradingContext
from gradeflow.graders.perf import PerfGrader, slower_than_reported
from gradeflow.integrity.files import list_files, restore_from
from gradeflow.integrity.sealing import _command_files
from gradeflow.models import ChangedFile, GradeComponent, PerfSpec, TaskSpec
from gradeflow.models.evidence import PerfEvidence
from gradeflow.models.globs import matches_any
from gradeflow.sandbox.base import MAX_OUTPUT_BYTES, CommandResult, Sandbox, SandboxFactory, member_path, remove_tree
from gradeflow.tasks._retry import INFRA_RETRIES, retry_on_infra
from gradeflow.tasks.baseline import Baseline, task_sandbox, working_copy
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["SEED", "benchmark_files", "output_digest", "run_perf", "timing_of"]

SEED = "{seed}"
"""The placeholder in ``perf.command`` and ``perf.check`` for each pair of runs' fresh random seed."""


def timing_of(spec: PerfSpec, result: CommandResult) -> float | str:
    """Seconds one benchmark run took or reported (any float, even ``inf``), or why it gave no figure."""
    if not result.ok:
        return f"exit code {result.exit_code}" + (" (timed out)" if result.timed_out else "")
    if spec.timing == "wall":
        return result.duration
    lines = result.stdout.strip().splitlines()
    try:
        seconds = float(json.loads(lines[-1])["seconds"])
    except (IndexError, ValueError, KeyError, TypeError):
        return 'the last stdout line is not {"seconds": x}'
    return seconds


def output_digest(spec: PerfSpec, stdout: str) -> str:
    """The SHA-256 of a run's stdout (outer whitespace stripped), its ``{"seconds": x}`` line excluded."""
    lines = stdout.strip().splitlines()
    if spec.timing == "reported":
        lines = lines[:-1]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def benchmark_files(spec: PerfSpec) -> list[str]:
    """Globs of the sealed benchmark files: what ``command`` and ``check`` run, plus ``sealed``."""
    globs = [*spec.sealed]
    for command in filter(None, (spec.command, spec.check)):
        globs += _command_files(command) + _module_files(command)
    return list(dict.fromkeys(globs))


def _module_files(command: str) -> list[str]:
    """The files of the modules ``python -m pkg.mod`` runs (``pkg/mod.py``, ``pkg/mod/__main__.py``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    modules = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "-m"]
    return [f for m in modules for f in (f"{m.replace('.', '/')}.py", f"{m.replace('.', '/')}/__main__.py")]


@task(
    name="perf",
    cache_policy=NO_CACHE,
    retries=INFRA_RETRIES,
    retry_delay_seconds=1,
    retry_condition_fn=retry_on_infra,
)
def run_perf(
    task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline, sandboxes: SandboxFactory
) -> GradeComponent | None:
    """The perf component, or ``None`` when the task declares no benchmark."""
    if task_spec.perf is None:
        return None
    assert snapshot.workspace is not None
    if not snapshot.changes:
        evidence = PerfEvidence(unchanged=True)
        return PerfGrader().grade(GradingContext(task=task_spec, workspace=snapshot.view(), perf=evidence))
    base_copy, cand_copy = working_copy(baseline.pristine), working_copy(snapshot.workspace)
    try:
        sealed, modified = _seal(task_spec.perf, snapshot.changes, cand_copy, baseline.pristine)
        with (
            task_sandbox(task_spec, base_copy, baseline, sandboxes) as base_box,
            task_sandbox(task_spec, cand_copy, baseline, sandboxes) as cand_box,
        ):
            evidence = _interleave(task_spec, base_box, cand_box, _Sides(base_copy.parent, sealed))
    finally:
        remove_tree(base_copy.parent, ignore_errors=True)
        remove_tree(cand_copy.parent, ignore_errors=True)
    evidence.modified = sorted({*modified, *evidence.modified})
    return PerfGrader().grade(GradingContext(task=task_spec, workspace=snapshot.view(), perf=evidence))


@dataclass
class _Sides:
    scratch: Path
    """A private folder for the two exported trees."""
    sealed: list[str]
    """Repository paths of the sealed benchmark files."""


@dataclass
class _Run:
    """One timed run: the counted figure, the wall time of the same process and what it produced."""

    seconds: float
    wall: float
    failure: str | None = None
    """Why the run gave no figure (exit code, timeout, no timing line)."""
    check: str | None = None
    """Why ``perf.check`` rejected what the run produced."""
    digest: str = ""
    oversized: int | None = None
    """Bytes of stdout when there were more than can be compared."""


def _seal(spec: PerfSpec | None, changes: list[ChangedFile], tree: Path, pristine: Path) -> tuple[list[str], list[str]]:
    """Reset the sealed benchmark files in ``tree`` to the base; (every sealed path, those the patch changed)."""
    assert spec is not None
    globs = benchmark_files(spec)
    changed = sorted({p for c in changes for p in (c.path, c.old_path) if p and matches_any(p, globs)})
    sealed = sorted({*list_files(pristine, globs), *changed})
    restore_from(pristine, tree, sealed)
    return sealed, changed


def _interleave(task_spec: TaskSpec, base_box: Sandbox, cand_box: Sandbox, sides: _Sides) -> PerfEvidence:
    spec = task_spec.perf
    assert spec is not None
    base_tree, cand_tree = sides.scratch / "base.tar", sides.scratch / "candidate.tar"
    base_box.export_workspace(base_tree)
    try:
        cand_box.export_workspace(cand_tree)
        evidence = PerfEvidence(modified=_reseal(cand_tree, base_tree, sides.sealed))
    except (OSError, tarfile.TarError) as exc:
        return PerfEvidence(errors=[f"the submission's tree after setup cannot be copied: {exc}"])
    reference: str | None = None
    seeded = SEED in spec.command
    for run in range(1, spec.runs + 1):
        seed = secrets.randbelow(2**31)
        base = _timed_run(task_spec, base_box, base_tree, seed)
        # With a seed, each run's output is its own: the candidate's is compared with the base's for that seed.
        reference = _base_run(task_spec, base, None if seeded else reference)
        evidence.baseline.append(round(base.seconds, 6))
        if spec.timing == "reported":
            evidence.baseline_wall.append(round(base.wall, 6))
        if not _candidate_run(spec, run, _timed_run(task_spec, cand_box, cand_tree, seed), reference, evidence):
            break
    return evidence


def _reseal(candidate: Path, base: Path, sealed: list[str]) -> list[str]:
    """Rewrite the exported tree ``candidate`` with the sealed files as in ``base``; those that differed.

    Both archives hold the task's environment (a sealed file setup rewrote on the base is compared as it
    left it). Whatever stands where a sealed file or one of its folders belongs (a link, a folder) is left out.
    """
    paths = set(sealed)
    folders = sorted({str(f) for p in paths for f in PurePosixPath(p).parents if str(f) != "."}, key=len)
    reference: dict[str, tuple[tarfile.TarInfo, bytes]] = {}
    with tarfile.open(base) as tar:
        for member in tar:
            if member_path(member.name) in paths and (handle := tar.extractfile(member)) is not None:
                reference[member_path(member.name)] = (member, handle.read())
    missing, differ = set(reference), set()
    rewritten = candidate.with_name(candidate.name + ".sealed")
    with tarfile.open(candidate) as src, tarfile.open(rewritten, "w") as dst:
        for member in src:
            name = member_path(member.name)
            inside = next((p for p in paths if name.startswith(f"{p}/")), None)
            if name in paths:
                missing.discard(name)
                handle = src.extractfile(member) if member.isfile() else None
                if handle is None or name not in reference or handle.read() != reference[name][1]:
                    differ.add(name)
            elif inside is not None or (name in folders and not member.isdir()):
                differ.add(inside or name)
            else:
                dst.addfile(member, src.extractfile(member) if member.isfile() else None)
        for folder in folders:
            info = tarfile.TarInfo(f"./{folder}")
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            dst.addfile(info)
        for info, data in reference.values():
            dst.addfile(info, io.BytesIO(data))
    rewritten.replace(candidate)
    return sorted(differ | missing)


def _timed_run(task_spec: TaskSpec, box: Sandbox, tree: Path, seed: int) -> _Run:
    """The benchmark (then ``perf.check``) in a fresh start from ``tree``, ``{seed}`` replaced by ``seed``."""
    spec = task_spec.perf
    assert spec is not None
    box.import_workspace(tree)
    env = task_spec.run_env()
    result = box.run(spec.command.replace(SEED, str(seed)), env=env, timeout=spec.timeout)
    figure = timing_of(spec, result)
    if isinstance(figure, str):
        return _Run(math.nan, result.duration, failure=figure)
    run = _Run(figure, result.duration, digest=output_digest(spec, result.stdout))
    if (result.stdout_bytes or 0) > MAX_OUTPUT_BYTES:
        run.oversized = result.stdout_bytes
    if spec.check:
        checked = box.run(spec.check.replace(SEED, str(seed)), env=env, timeout=spec.timeout)
        if not checked.ok:
            run.check = "perf.check " + ("timed out" if checked.timed_out else f"exited {checked.exit_code}")
    return run


def _base_run(task_spec: TaskSpec, run: _Run, reference: str | None) -> str | None:
    """The base's output digest; ``BaselineBroken`` when the pristine base's run is not one to compare with."""
    spec = task_spec.perf
    assert spec is not None
    if run.failure is not None or not (math.isfinite(run.seconds) and run.seconds > 0):
        why = run.failure or f"it reported {run.seconds!r} seconds"
    elif spec.timing == "reported" and slower_than_reported("base", [run.seconds], [run.wall]):
        why = f"it reported {run.seconds:g} s but its process ran {run.wall:g} s"
    elif run.check is not None:
        why = run.check
    elif spec.compare_output and run.oversized is not None:
        why = f"compare_output needs under {MAX_OUTPUT_BYTES} bytes of stdout, it printed {run.oversized}"
    elif spec.compare_output and reference is not None and run.digest != reference:
        why = "its output differs between runs, so compare_output cannot be used"
    else:
        return run.digest if spec.compare_output else None
    raise BaselineBroken(f"task {task_spec.task_id}: the benchmark fails on the pristine base: {why}")


def _candidate_run(spec: PerfSpec, number: int, run: _Run, reference: str | None, evidence: PerfEvidence) -> bool:
    """Record one candidate run in ``evidence``; whether the next run is worth timing."""
    where = f"candidate run {number}"
    if run.failure is not None:
        evidence.errors.append(f"{where}: {run.failure}")
        return False
    if not (math.isfinite(run.seconds) and run.seconds > 0):
        evidence.implausible.append(f"{where} reported {run.seconds!r} seconds")
        return False
    evidence.candidate.append(round(run.seconds, 6))
    if spec.timing == "reported":
        evidence.candidate_wall.append(round(run.wall, 6))
    if run.check is not None:
        evidence.mismatches.append(f"{where}: {run.check}")
    elif spec.compare_output and run.oversized is not None:
        evidence.mismatches.append(f"{where}: {run.oversized} bytes of stdout, more than can be compared")
    elif spec.compare_output and run.digest != reference:
        evidence.mismatches.append(f"{where}: its output differs from the base's (sha256 {run.digest[:12]})")
    return not evidence.mismatches
