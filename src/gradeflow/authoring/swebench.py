"""``gradeflow task import-swebench``: rows of the SWE-bench dataset format as gradeflow task specs.

Each row becomes ``OUT/<instance_id>/`` holding ``task.yaml``, ``reference.diff`` (the gold patch) and
the test patch as hidden tests: the post-patch test files in ``hidden_tests/`` when the patch only adds
or edits files, else ``test.patch`` as ``tests.hidden_patch`` (it deletes or renames files). The
repository is the local mirror ``REPOS/owner__name``. ``setup``, ``tests.command``, ``tests.report`` and the
environment (root, packages, setup's network, variables) come from gradeflow's table of SWE-bench's
repositories (:mod:`gradeflow.authoring.swebench_repos`), or, for a repository and version the optional
commands file names (``{"owner/name": {"version": {"setup": ..., "test_command": ..., "report": ...,
"root": ..., "packages": [...], "setup_network": true}}}``), from there. Imported tasks
follow SWE-bench's pass rule: a pass-to-pass test skipped on the candidate is kept
(``tests.skipped_pass_to_pass: kept``) and an expected failure counts as a pass (``tests.xfail: pass``); and
its procedure: the files the test patch touches are reset to the base and the test patch laid over them
before every run, and a candidate's edits to them are reported, not failed (``tests.hidden_edits: reset``;
they are ``constraints.protected``, so the grade's ``strict_reading`` says what gradeflow's stricter reading
decides whatever the test ids name).

Test names: a pytest node id is kept as it is; Django's ``test_name (module.Class)`` (also the Python
3.11 spelling ``test_name (module.Class.test_name)``) becomes ``module.Class::test_name``, the JUnit form
gradeflow matches (a package prefix the runner adds is tolerated). Under ``report: django-log`` a docstring's
first line, SWE-bench's name for a test with a docstring, becomes the id of the one test of the instance's
labels it describes (:mod:`gradeflow.authoring.django_docstrings`, read from the base with the test patch
applied). A line that starts several of those tests' docstrings is listed as it is, with their ids under
``tests.last_run_of``: SWE-bench's log parser keeps, for a name printed several times, the status printed
last, so the name passes or fails as whichever of its tests runs last in the run. Any other name (a bare
name, a docstring line of no test, a parametrized id cut short at a space by SWE-bench's log parser) has
no id form: it is quarantined (left out of scoring, listed in the import report and in the task file's
header with the reason), and the row is imported without it. A row whose every FAIL_TO_PASS name is
quarantined has nothing to grade and is skipped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from gradeflow.authoring import swebench_repos
from gradeflow.authoring.django_docstrings import DocstringTests, read_docstring_tests
from gradeflow.authoring.new_task import HIDDEN_FOLDER, REFERENCE_FILE, write_spec
from gradeflow.authoring.patches import applied_tree, copy_files, run_git, split_diff
from gradeflow.errors import SpecError
from gradeflow.spec import json_object, load_yaml
from gradeflow.tasks.repo import gitlinks

__all__ = [
    "SWEBENCH_PASS_RULE",
    "ImportReport",
    "LastRunName",
    "QuarantinedName",
    "SkippedRow",
    "import_instances",
    "map_test_name",
    "read_instances",
    "submodule_repo",
]

HIDDEN_PATCH_FILE = "test.patch"
SWEBENCH_PASS_RULE: dict[str, str] = {
    "skipped_pass_to_pass": "kept",
    "xfail": "pass",
    "hidden_edits": "reset",
    "pass_to_pass_failing_on_base": "set-aside",
}
"""The ``tests`` keys every imported task sets, so a grade counts tests as ``swebench.harness.grading`` does,
resets the test patch's files as its evaluation script does, and sets aside a pass_to_pass test that its
environment passed and this one cannot (it fails on the pristine base here)."""
_DJANGO = re.compile(r"^(\w+) \(([A-Za-z_][\w.]*)\)$")
_BARE = re.compile(r"[A-Za-z_]\w*")
_REQUIRED = ("instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS", "version")


class SkippedRow(BaseModel):
    """A row that was not converted, and why."""

    instance_id: str
    line: int
    reason: str


class QuarantinedName(BaseModel):
    """A test name of an imported row that has no gradeflow id form: reported, left out of scoring."""

    instance_id: str
    key: str
    """``FAIL_TO_PASS`` or ``PASS_TO_PASS``."""
    name: str
    reason: str


class LastRunName(BaseModel):
    """A test name of an imported row that several tests print (a Django docstring's first line): scored as
    whichever of ``test_ids`` runs last (``tests.last_run_of``)."""

    instance_id: str
    key: str
    """``FAIL_TO_PASS`` or ``PASS_TO_PASS``."""
    name: str
    test_ids: list[str]


class ImportReport(BaseModel):
    """Every row's fate: a task spec written, or skipped with its reason; the names left out, and those
    scored as the last of several tests to run."""

    written: list[Path] = Field(default_factory=list)
    skipped: list[SkippedRow] = Field(default_factory=list)
    quarantined: list[QuarantinedName] = Field(default_factory=list)
    last_run: list[LastRunName] = Field(default_factory=list)


class _Skip(Exception):
    """The row cannot be converted; ``str()`` says why."""


def map_test_name(name: str, report: str = "junit") -> str | None:
    """The gradeflow test id of a SWE-bench test name, or ``None`` when it has no mappable form.

    Under ``report: sympy-log`` a bare function name (sympy's ``test_issue_1234``) is its own id: the log
    names tests by function only, as SWE-bench's lists do."""
    if report == "sympy-log" and _BARE.fullmatch(name):
        return name
    django = _DJANGO.match(name)
    if django:
        test, where = django.groups()
        return f"{where.removesuffix('.' + test)}::{test}"
    if "::" not in name or ("[" in name and not name.endswith("]")):
        return None
    return name


def read_instances(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The rows of a JSON lines file with their line numbers; ``SpecError`` naming the line that is not JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the instances file: {exc}") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        rows.append((number, json_object(line, f"{path}:{number}", "a row")))
    return rows


def _load_commands(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    data = load_yaml(path, "commands file")
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise SpecError(f"{path}: the commands file must map 'owner/name' to versions to setup and test_command")
    return {str(repo): {str(v): dict(c or {}) for v, c in versions.items()} for repo, versions in data.items()}


def _test_list(row: dict[str, Any], key: str) -> list[str]:
    value = row[key]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise _Skip(f"{key} is neither a list nor a JSON-encoded list") from None
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise _Skip(f"{key} is not a list of test names")
    return value


def _why_unmappable(name: str, docstrings: DocstringTests | None) -> str:
    if "[" in name and not name.endswith("]"):
        return "a parametrized name cut short (SWE-bench's log parser stops a name at a space)"
    if docstrings is not None:
        return f"neither Django's 'test (module.Class)' nor a test's docstring line: {docstrings.why_unknown()}"
    return "neither a node id (path::name) nor Django's 'test (module.Class)'"


class _Names(BaseModel):
    """A row's names as the task lists them: ids, and what is said of the names that are not one."""

    fail_to_pass: list[str] = Field(default_factory=list)
    pass_to_pass: list[str] = Field(default_factory=list)
    left_out: list[QuarantinedName] = Field(default_factory=list)
    last_run: list[LastRunName] = Field(default_factory=list)


def _mapped(row: dict[str, Any], key: str, report: str, docstrings: DocstringTests | None, names: _Names) -> list[str]:
    """The row's ``key`` names as the task lists them: gradeflow ids, and the docstring lines several tests
    print (added to ``names.last_run``); the names with no id form are added to ``names.left_out``.
    ``docstrings``: the tests of the row's Django labels, for names that are a docstring's first line."""
    listed = []
    instance = str(row["instance_id"])
    for name in _test_list(row, key):
        test_id = map_test_name(name, report)
        candidates = docstrings.tests_of(name) if test_id is None and docstrings is not None else ()
        if len(candidates) == 1:
            test_id = candidates[0]
        elif len(candidates) > 1:
            names.last_run.append(LastRunName(instance_id=instance, key=key, name=name, test_ids=list(candidates)))
            test_id = name
        if test_id is None:
            reason = _why_unmappable(name, docstrings)
            names.left_out.append(QuarantinedName(instance_id=instance, key=key, name=name, reason=reason))
        else:
            listed.append(test_id)
    return list(dict.fromkeys(listed))


def _ids(row: dict[str, Any], report: str, docstrings: DocstringTests | None) -> _Names:
    """The row's FAIL_TO_PASS and PASS_TO_PASS names as the task lists them and what is said of the others;
    ``_Skip`` when no FAIL_TO_PASS name can be listed (nothing to grade)."""
    names = _Names()
    names.fail_to_pass = _mapped(row, "FAIL_TO_PASS", report, docstrings, names)
    names.pass_to_pass = _mapped(row, "PASS_TO_PASS", report, docstrings, names)
    left_out = names.left_out
    if not names.fail_to_pass and any(q.key == "FAIL_TO_PASS" for q in left_out):
        shown = "; ".join(repr(q.name) for q in left_out[:3]) + (" ..." if len(left_out) > 3 else "")
        raise _Skip(f"no FAIL_TO_PASS name has a gradeflow id form: {shown}")
    return names


class _Made(BaseModel):
    """What one row's repository and version contribute to its task spec."""

    setup: str | None
    tests: dict[str, Any]
    environment: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)
    """The Django test labels whose modules name tests by docstring (``report: django-log``), else empty."""


def _commands(row: dict[str, Any], commands: dict[str, dict[str, dict[str, Any]]]) -> _Made:
    """The row's setup, test command and environment: the commands file's entry when it has one, else
    gradeflow's table of SWE-bench's repositories (:mod:`gradeflow.authoring.swebench_repos`)."""
    repo, version = str(row["repo"]), str(row["version"])
    entry = commands.get(repo, {}).get(version)
    if entry is None:
        known_entry = swebench_repos.known(repo, version)
        if known_entry is None:
            raise _Skip(f"no commands entry for {repo} version {version}, and gradeflow's SWE-bench table has none")
        try:
            command = swebench_repos.command_for(known_entry, row["test_patch"])
        except SpecError as exc:
            raise _Skip(str(exc)) from None
        environment: dict[str, Any] = {
            "root": known_entry.root,
            "setup_network": True,
            "shared_setup": known_entry.shared_setup,
        }
        if known_entry.shared_inputs:
            environment["shared_inputs"] = list(known_entry.shared_inputs)
        if known_entry.packages:
            environment["packages"] = list(known_entry.packages)
        notes = [f"Python: {known_entry.python_note}"] if known_entry.python_note else []
        return _Made(
            setup=known_entry.setup,
            tests={"report": known_entry.report, "command": command},
            environment=environment,
            env=dict(known_entry.env),
            notes=notes + list(known_entry.notes),
            labels=_labels(known_entry.report, row["test_patch"]),
        )
    given = entry.get("test_command")
    report = entry.get("report", "junit")
    if not isinstance(given, str) or (report == "junit" and "{junit}" not in given):
        raise _Skip(
            f"the test_command for {repo} {version} writes no JUnit report (no {{junit}}) and names no report format"
        )
    tests = {"command": given} if report == "junit" else {"report": report, "command": given}
    kept = ("root", "packages", "setup_network", "shared_setup", "shared_inputs")
    environment = {key: entry[key] for key in kept if key in entry}
    return _Made(
        setup=entry.get("setup"), tests=tests, environment=environment, labels=_labels(report, row["test_patch"])
    )


def _labels(report: str, test_patch: str) -> list[str]:
    """The test patch's files as Django labels, SWE-bench's rule, when the log names tests by docstring."""
    if report != "django-log":
        return []
    try:
        return swebench_repos.patch_arguments("django-labels", test_patch)
    except SpecError as exc:
        raise _Skip(str(exc)) from None


def _mirror(row: dict[str, Any], repos: Path) -> tuple[Path, str]:
    mirror = repos / str(row["repo"]).replace("/", "__")
    if not mirror.is_dir() or run_git(mirror, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise _Skip(f"no git mirror at {mirror}")
    proc = run_git(mirror, "rev-parse", "--verify", "--quiet", f"{row['base_commit']}^{{commit}}", check=False)
    if proc.returncode != 0:
        raise _Skip(f"the mirror {mirror} does not hold base_commit {row['base_commit']}")
    return mirror, proc.stdout.strip()


_HOSTED = re.compile(r"^(?:[a-z+]+://(?:[^@/]+@)?[^/]+/|[^@/]+@[^:/]+:)([^/]+)/([^/]+?)(?:\.git)?/?$")


def submodule_repo(url: str, repo: str) -> str | None:
    """``owner/name`` of a submodule's URL (hosted, or relative to the ``owner/name`` repository holding it)."""
    if url.startswith("../"):
        return f"{repo.split('/')[0]}/{url.removeprefix('../').removesuffix('.git').strip('/')}"
    hosted = _HOSTED.match(url)
    return None if hosted is None else "/".join(hosted.groups())


def _submodule_mirror(url: str, repo: str, repos: Path) -> Path | None:
    """The mirror in ``repos`` of a submodule's URL, if any."""
    named = submodule_repo(url, repo)
    mirror = None if named is None else repos / named.replace("/", "__")
    return mirror if mirror is not None and mirror.is_dir() else None


def _submodules(mirror: Path, base: str, repo: str, repos: Path, notes: list[str], prefix: str = "") -> dict[str, str]:
    """The base's git submodules that have a mirror holding the pinned commit (nested ones too), mirror paths
    absolute; a note for each that has none (it stays an empty folder, as a checkout leaves it)."""
    links = gitlinks(mirror, base)
    if not links:
        return {}
    listed = run_git(
        mirror, "config", "--blob", f"{base}:.gitmodules", "-z", "--get-regexp", r"\.(path|url)$", check=False
    ).stdout
    config = dict(entry.split("\n", 1) for entry in listed.split("\0") if "\n" in entry)
    urls = {config[key]: config.get(key[: -len(".path")] + ".url", "") for key in config if key.endswith(".path")}
    found: dict[str, str] = {}
    for path, commit in sorted(links.items()):
        url = urls.get(path, "")
        source = _submodule_mirror(url, repo, repos)
        held = (
            source is not None
            and run_git(source, "cat-file", "-e", f"{commit}^{{commit}}", check=False).returncode == 0
        )
        if source is None or not held:
            where = f"no mirror in {repos} holds {commit[:12]}" if url else "no url in .gitmodules"
            notes.append(f"Submodule {prefix}{path} ({url or '?'}): {where}; it stays an empty folder.")
            continue
        found[prefix + path] = str(source.resolve())
        found |= _submodules(source, commit, repo, repos, notes, f"{prefix}{path}/")
    return found


def _write_hidden(
    mirror: Path, base: str, row: dict[str, Any], folder: Path, labels: list[str]
) -> tuple[dict[str, str], DocstringTests | None]:
    """The test patch as hidden tests in ``folder``: copied-in files when it only adds or edits, else a patch;
    and, when there are ``labels``, their modules' tests by docstring, read from the same tree."""
    blocks = split_diff(row["test_patch"])
    docstrings = None
    try:
        with applied_tree(mirror, base, row["patch"], "the gold patch", only_patched=True):
            pass
        with applied_tree(mirror, base, row["test_patch"], "the test patch", only_patched=True) as tree:
            if blocks and all(b.adds_or_edits for b in blocks):
                copy_files(tree, [b.new for b in blocks if b.new], folder / HIDDEN_FOLDER)
                hidden = {"hidden": HIDDEN_FOLDER}
            else:
                (folder / HIDDEN_PATCH_FILE).write_text(row["test_patch"], encoding="utf-8", errors="surrogateescape")
                hidden = {"hidden_patch": HIDDEN_PATCH_FILE}
            if labels:
                docstrings = read_docstring_tests(tree, labels, blocks)
    except SpecError as exc:
        raise _Skip(str(exc)) from None
    return hidden, docstrings


def _test_patch_files(test_patch: str) -> list[str]:
    """The files the test patch touches: protected, so an edit to them is the protected-file edit the grade's
    ``strict_reading`` reports (set aside under ``hidden_edits: reset``). Test ids name no file where they
    are not node ids (Django's ``module.Class::test``), so this is said here for every row."""
    return sorted({path for block in split_diff(test_patch) for path in (block.old, block.new) if path})


def _convert(
    row: dict[str, Any],
    repos: Path,
    commands: dict[str, dict[str, dict[str, Any]]],
    out: Path,
    imported: ImportReport,
) -> Path:
    missing = [key for key in _REQUIRED if key not in row]
    if missing:
        raise _Skip(f"missing {', '.join(missing)}")
    instance = str(row["instance_id"])
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", instance):
        raise _Skip("instance_id is not a task id (letters, digits, . _ -)")
    made = _commands(row, commands)
    report = str(made.tests.get("report", "junit"))
    names = _test_list(row, "FAIL_TO_PASS") + _test_list(row, "PASS_TO_PASS")
    labels = made.labels if any(map_test_name(name, report) is None for name in names) else []
    mirror, base = _mirror(row, repos)
    folder = out / instance
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    try:
        hidden, docstrings = _write_hidden(mirror, base, row, folder, labels)
        names_listed = _ids(row, report, docstrings)
    except _Skip:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    (folder / REFERENCE_FILE).write_text(row["patch"], encoding="utf-8", errors="surrogateescape")
    tests = {**made.tests, "fail_to_pass": names_listed.fail_to_pass, "pass_to_pass": names_listed.pass_to_pass}
    if names_listed.last_run:
        tests["last_run_of"] = {shared.name: shared.test_ids for shared in names_listed.last_run}
    tests |= hidden
    notes = list(made.notes)
    submodules = _submodules(mirror, base, str(row["repo"]), repos, notes)
    spec = {
        "task_id": instance,
        "type": "bugfix",
        "repo": os.path.relpath(mirror.resolve(), folder.resolve()),
        "base_revision": base,
        "submodules": {path: os.path.relpath(source, folder.resolve()) for path, source in submodules.items()} or None,
        "setup": made.setup,
        "tests": tests | SWEBENCH_PASS_RULE,
        "constraints": {"protected": _test_patch_files(row["test_patch"])},
        "environment": made.environment or None,
        "env": made.env or None,
        "issue": row.get("problem_statement") or None,
    }
    write_spec(folder / "task.yaml", spec, _header(row, notes, names_listed))
    imported.quarantined.extend(names_listed.left_out)
    imported.last_run.extend(names_listed.last_run)
    return folder / "task.yaml"


def _header(row: dict[str, Any], notes: list[str], names: _Names) -> str:
    """The task file's comment: where the row came from, notes on its environment, what its names mean."""
    header = f"Imported from SWE-bench instance {row['instance_id']} (version {row['version']}, "
    header += f"environment_setup_commit {row.get('environment_setup_commit') or 'none'})."
    for note in notes:
        header += f"\nNote: {' '.join(note.split())}"
    if names.last_run:
        header += (
            "\nNote: each name under tests.last_run_of is the first line of several tests' docstrings, which Django "
            "prints for each; as in SWE-bench, such a name passes or fails as whichever of those tests runs last."
        )
    for name in names.left_out:
        header += f"\nLeft out of scoring ({name.key}): {json.dumps(name.name)}: {name.reason}."
    return header


def import_instances(instances: Path, repos: Path, commands_file: Path | None, out: Path) -> ImportReport:
    """Convert every row; rows that cannot be converted are reported, never half written.

    ``SpecError`` (nothing converted) for an unreadable instances or commands file, a line that is not
    JSON, or a ``repos`` that is not a folder.
    """
    rows = read_instances(instances)
    commands = _load_commands(commands_file) if commands_file is not None else {}
    if not repos.is_dir():
        raise SpecError(f"--repos: {repos} is not a folder")
    report = ImportReport()
    for number, row in rows:
        try:
            report.written.append(_convert(row, repos, commands, out, report))
        except _Skip as exc:
            instance = str(row.get("instance_id", f"line {number}"))
            report.skipped.append(SkippedRow(instance_id=instance, line=number, reason=str(exc)))
    return report
