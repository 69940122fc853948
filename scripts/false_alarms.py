"""False-alarm check of the tamper scan on real upstream changes: two consecutive releases of small projects.

For each project the two sdists are downloaded with pip (``pip download --no-deps --no-binary :all:``)
into a cache folder (``--cache``, else ``$GRADEFLOW_FALSE_ALARMS_CACHE``, else
``~/.cache/gradeflow-false-alarms``), so only the first run needs PyPI. The old release's source and test
files become the pristine repository; the new release's, staged over a copy of it, become the patch, as
``gradeflow grade --workspace`` would see it. The tamper scan (``scan_snapshot``) and the test-infrastructure
check (``infrastructure_edits``) then run on that snapshot. Upstream's own release is not tampering: any
finding of the tamper scan is a false alarm. An infrastructure edit is printed too: a release may change its
own test configuration, which a graded patch may not.

``--grade`` also grades each derived task end to end in the local sandbox: the new release's tests as
hidden tests, the ones it adds as ``fail_to_pass`` (slow: two test runs per project, and pip installs).

Exit code: 0 no false alarm, 1 a false alarm (each is printed), 2 a release could not be downloaded.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

from gradeflow.integrity.sealing import infrastructure_edits
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import InfrastructureEdit, TamperFinding
from gradeflow.tasks._git import git, init_snapshot_repo
from gradeflow.tasks._patching import added_lines, changed_files, graded_patch
from gradeflow.tasks.snapshot import Snapshot
from gradeflow.tasks.tamper_scan import scan_snapshot

__all__ = ["PROJECTS", "DownloadError", "Project", "Report", "cache_dir", "check", "download", "main"]

_KEPT_SUFFIXES = (".py", ".pyi")
_KEPT_NAMES = frozenset({"pyproject.toml", "setup.cfg"})
"""Source and test files: Python, and the packaging files the scan reads for entry points."""


@dataclass(frozen=True)
class Project:
    """A project and two consecutive releases of it."""

    name: str
    old: str
    new: str
    tests: str
    """The folder of its tests."""
    env: dict[str, str] = field(default_factory=dict)
    setup: str | None = None
    """What its tests need installed (``--grade`` only)."""


PROJECTS: tuple[Project, ...] = (
    Project("more-itertools", "10.7.0", "10.8.0", tests="tests"),
    Project("humanize", "4.16.0", "4.17.0", tests="tests", env={"PYTHONPATH": "src"}, setup="pip install -q freezegun"),
    Project("tabulate", "0.9.0", "0.10.0", tests="test"),
)


@dataclass
class Report:
    """What the checks found on one project's upstream change."""

    project: Project
    changed: list[str]
    findings: list[TamperFinding]
    skipped: list[str]
    infrastructure: list[InfrastructureEdit]
    grade: str | None = None

    def render(self) -> str:
        head = f"{self.project.name} {self.project.old} -> {self.project.new}: {len(self.changed)} files changed"
        lines = [head, *(f"  changed: {path}" for path in self.changed)]
        lines += [f"  FALSE ALARM {f.path}:{f.line}: {f.kind}: {f.message}" for f in self.findings]
        lines += [f"  skipped (unreadable or unparsable): {path}" for path in self.skipped]
        lines += [f"  infrastructure edit: {e.path} ({e.what})" for e in self.infrastructure]
        lines += [f"  grade: {self.grade}"] if self.grade else []
        lines.append(f"  tamper findings: {len(self.findings)}, infrastructure edits: {len(self.infrastructure)}")
        return "\n".join(lines)


class DownloadError(RuntimeError):
    """A release could not be downloaded (PyPI unreachable, a version gone)."""


def cache_dir(override: str | None = None) -> Path:
    """Where the sdists and their unpacked trees are kept."""
    chosen = override or os.environ.get("GRADEFLOW_FALSE_ALARMS_CACHE")
    return Path(chosen).expanduser() if chosen else Path.home() / ".cache" / "gradeflow-false-alarms"


def _normal(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def _cached_sdist(folder: Path, name: str, version: str) -> Path | None:
    for path in folder.glob("*.tar.gz"):
        project, _, release = path.name.removesuffix(".tar.gz").rpartition("-")
        if (_normal(project), release) == (_normal(name), version):
            return path
    return None


def _pip_download(folder: Path, name: str, version: str) -> str | None:
    """None when the sdist is there, else pip's complaint."""
    command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", str(folder)]
    proc = subprocess.run([*command, f"{name}=={version}"], capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode == 0 and _cached_sdist(folder, name, version):
        return None
    errors = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("WARNING")]
    return (errors or [f"pip exited {proc.returncode}"])[-1]


def download(cache: Path, projects: Sequence[Project] = PROJECTS) -> dict[tuple[str, str], Path]:
    """Every release's sdist, downloaded (in parallel) when it is not cached yet; ``DownloadError`` otherwise."""
    folder = cache / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    wanted = [(p.name, v) for p in projects for v in (p.old, p.new)]
    missing = [w for w in wanted if _cached_sdist(folder, *w) is None]
    with ThreadPoolExecutor(max_workers=max(1, len(missing))) as pool:
        errors = pool.map(lambda w: _pip_download(folder, *w), missing)
        problems = [(w, e) for w, e in zip(missing, errors, strict=True) if e]
    if problems:
        raise DownloadError("; ".join(f"{name}=={version}: {error}" for (name, version), error in problems))
    return {w: path for w in wanted if (path := _cached_sdist(folder, *w))}


def _tree(cache: Path, archive: Path) -> Path:
    """The sdist unpacked once under the cache (its single top folder)."""
    target = cache / "trees" / archive.name.removesuffix(".tar.gz")
    if not target.is_dir():
        staging = Path(tempfile.mkdtemp(dir=cache))
        with tarfile.open(archive) as sdist:
            sdist.extractall(staging, filter="data")
        (top,) = list(staging.iterdir())
        target.parent.mkdir(parents=True, exist_ok=True)
        top.rename(target)
        shutil.rmtree(staging)
    return target


def source_files(tree: Path) -> dict[str, bytes]:
    """The release's source and test files by relative path (generated metadata left out)."""
    found = {}
    for path in sorted(tree.rglob("*")):
        rel = PurePosixPath(path.relative_to(tree).as_posix())
        if any(part.endswith(".egg-info") for part in rel.parts) or not path.is_file():
            continue
        if rel.suffix in _KEPT_SUFFIXES or rel.name in _KEPT_NAMES:
            found[str(rel)] = path.read_bytes()
    return found


def _write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def snapshot_of(work: Path, old: dict[str, bytes], new: dict[str, bytes]) -> tuple[Path, Snapshot]:
    """The old files committed as the pristine repository, and the new ones staged over a copy of it."""
    pristine, workspace = work / "pristine", work / "workspace"
    _write_tree(pristine, old)
    init_snapshot_repo(pristine)
    shutil.copytree(pristine, workspace, symlinks=True)
    for rel in set(old) - set(new):
        (workspace / rel).unlink()
    _write_tree(workspace, new)
    git(workspace, "add", "-A", "-f")
    patch = graded_patch(workspace)
    return pristine, Snapshot(
        workspace=workspace, patch=patch, changes=changed_files(workspace), added=added_lines(patch)
    )


def _test_ids(files: dict[str, bytes], folder: str) -> set[str]:
    """``path::name`` and ``path::Class::name`` of the test functions in a test folder's files."""
    ids = set()
    for rel, data in files.items():
        name = PurePosixPath(rel).name
        if not (rel.startswith(f"{folder}/") and name.startswith("test_") and name.endswith(".py")):
            continue
        for node in ast.parse(data).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                ids.add(f"{rel}::{node.name}")
            elif isinstance(node, ast.ClassDef):
                methods = [m for m in node.body if isinstance(m, ast.FunctionDef) and m.name.startswith("test")]
                ids |= {f"{rel}::{node.name}::{m.name}" for m in methods}
    return ids


def _task_spec(project: Project, pristine: Path, fail_to_pass: list[str], hidden: Path | None = None) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "task_id": f"{project.name}-{project.new}",
            "type": "feature",
            "repo": str(pristine),
            "setup": project.setup,
            "env": project.env,
            "tests": {
                "command": f"python -m pytest -q -p no:cacheprovider --junitxml={{junit}} {project.tests}",
                "fail_to_pass": fail_to_pass,
                "hidden": str(hidden) if hidden else None,
            },
        }
    )


def check(project: Project, sdists: dict[tuple[str, str], Path], cache: Path, grade: bool = False) -> Report:
    """The tamper scan and the infrastructure check of one project's old -> new change."""
    old = source_files(_tree(cache, sdists[(project.name, project.old)]))
    new = source_files(_tree(cache, sdists[(project.name, project.new)]))
    added = sorted(_test_ids(new, project.tests) - _test_ids(old, project.tests))[:5]
    with tempfile.TemporaryDirectory(prefix="gradeflow-false-alarms-") as scratch:
        work = Path(scratch)
        pristine, snapshot = snapshot_of(work, old, new)
        assert snapshot.workspace is not None
        task_spec = _task_spec(project, pristine, added)
        evidence = scan_snapshot(task_spec, snapshot, pristine)
        edits = infrastructure_edits(task_spec, snapshot.changes, snapshot.workspace, pristine)
        changed = [c.path + (f" ({c.status} from {c.old_path})" if c.old_path else "") for c in snapshot.changes]
        report = Report(project, changed, evidence.findings, evidence.files_skipped, edits)
        if grade:
            report.grade = _grade(project, work / "grade", old, new, added)
    return report


def _grade(project: Project, work: Path, old: dict[str, bytes], new: dict[str, bytes], added: list[str]) -> str:
    """A full grade of the upstream source change, the new release's tests hidden; its summary line."""
    from gradeflow import grade

    def tests(files: dict[str, bytes]) -> dict[str, bytes]:
        return {rel: data for rel, data in files.items() if rel.startswith(f"{project.tests}/")}

    source = {rel: data for rel, data in new.items() if rel not in tests(new)} | tests(old)
    pristine, snapshot = snapshot_of(work, old, source)  # the patch an agent would send: source only
    hidden = work / "hidden"
    _write_tree(hidden, tests(new))
    task_file = work / "task.yaml"
    spec = _task_spec(project, pristine, added, hidden).model_dump(mode="json", exclude_none=True)
    spec["base_revision"] = git(pristine, "rev-parse", "HEAD").stdout.decode().strip()
    task_file.write_text(yaml.safe_dump(spec))
    result = grade(task_file, patch=snapshot.patch, sandbox="local")
    return f"{result.summary()} decision={result.decision} reasons={result.reason_codes}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache", help="folder for the sdists (default ~/.cache/gradeflow-false-alarms)")
    parser.add_argument("--grade", action="store_true", help="also grade each derived task in the local sandbox")
    args = parser.parse_args(argv)
    cache = cache_dir(args.cache)
    try:
        sdists = download(cache)
    except DownloadError as exc:
        print(f"cannot download the releases: {exc}", file=sys.stderr)
        return 2
    reports = [check(project, sdists, cache, grade=args.grade) for project in PROJECTS]
    for report in reports:
        print(report.render(), flush=True)
    return 1 if any(r.findings for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
