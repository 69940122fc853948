"""Sealing a fresh tree for a test run: the test harness is the base's, whatever the patch did to it.

What is sealed (reset to the base in every run's tree):

* **test folders**: every folder holding a test file the task's ids name or one matching
  ``tests.test_files`` on the base, when the folder is a tests folder by name (a ``test``/``tests``/
  ``testing`` part, or ``test_*``/``*_tests``), helpers and ``__init__.py`` included; and every other
  folder of the base named ``tests`` or ``test`` (test support code the tests may import). Test files that
  sit beside the source are reset one by one instead. Test files and ``conftest.py`` files the patch
  adds anywhere are removed from the acceptance run.
* **under** ``tests.hidden_edits: reset`` (SWE-bench's procedure) the test folders are not sealed whole:
  among the patch's edits to test folders and test files, only the files the hidden tests replace (laid
  over by them afterwards), the protected files and every ``conftest.py`` are reset; the candidate's other
  edits there (a helper, a test app's ``models.py``, a test module of its own) are kept in the run, as
  SWE-bench keeps them (:func:`kept_test_edits` lists them, for the grade's ``strict_reading``).
  ``conftest.py`` stays sealed because pytest loads it without an import, ahead of every test: it is the
  test harness itself, as the configuration below is (SWE-bench keeps such an edit; Django's runner reads
  none). Test configuration and code loaders are sealed and gated in both readings. The kept edits are not
  tamper-scanned (test code never was, and honest test helpers import pytest): the harness still watches the
  run, and the ``strict_reading`` runs the tests with them reset.
* **test configuration and code loaders** (:data:`INFRASTRUCTURE`, plus ``tests.infrastructure``):
  whole files, and in ``pyproject.toml``, ``setup.cfg``, ``tox.ini`` and ``package.json`` only the
  test-related sections (:data:`SECTIONS`). A patch that edits any of them fails the
  ``test_infrastructure`` gate, except files the task lists in ``tests.infrastructure_editable``.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Collection, Sequence
from pathlib import Path, PurePosixPath

from gradeflow.integrity.files import list_files, restore_from
from gradeflow.integrity.sections import SECTIONS, sections_differ, splice_sections
from gradeflow.models import ChangedFile, TaskSpec
from gradeflow.models.evidence import InfrastructureEdit as InfraEdit
from gradeflow.models.globs import any_matcher, matches_any
from gradeflow.models.testids import file_of_test_id

__all__ = [
    "INFRASTRUCTURE",
    "folders_to_seal",
    "infrastructure_edits",
    "kept_test_edits",
    "seal_acceptance_tree",
    "seal_infrastructure",
]

INFRASTRUCTURE: tuple[str, ...] = (
    "**/pytest.ini",
    "**/.pytest.ini",
    "**/pytest.toml",
    "**/.pytest.toml",
    "**/*.dist-info/**",
    "**/*.egg-info/**",
    "**/*.egg-link",
    "**/*.pth",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/sitecustomize/**",
    "**/usercustomize/**",
    "**/jest.config.*",
    "**/vitest.config.*",
    "**/vitest.workspace.*",
    "**/.mocharc*",
)
"""Whole files that configure a test runner or load code without being imported."""

_TEST_PARTS = {"test", "tests", "testing"}
_RUNNER_FILES = {"make": ("Makefile", "makefile", "GNUmakefile"), "tox": ("tox.ini",), "nox": ("noxfile.py",)}


def _whole_globs(task_spec: TaskSpec) -> list[str]:
    return [*INFRASTRUCTURE, *task_spec.tests.infrastructure, *_command_files(task_spec.tests.command)]


def _command_files(command: str) -> list[str]:
    """Repository files the test command itself runs (its script, the Makefile of ``make``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    found: list[str] = []
    for index, word in enumerate(words):
        if index == 0 and word in _RUNNER_FILES:
            found += _RUNNER_FILES[word]
        elif "{" not in word and not word.startswith("-") and PurePosixPath(word).suffix in (".py", ".sh", ".cfg"):
            found.append(word.removeprefix("./"))
    return found


def infrastructure_edits(
    task_spec: TaskSpec, changes: list[ChangedFile], tree: Path, pristine: Path
) -> list[InfraEdit]:
    """The test infrastructure the patch changed (``tree`` is the base plus the patch), editable files left out."""
    whole = _whole_globs(task_spec)
    edits: list[InfraEdit] = []
    for path in sorted({p for c in changes for p in (c.path, c.old_path) if p}):
        if matches_any(path, task_spec.tests.infrastructure_editable):
            continue
        # Python finds metadata folders and .pth files whatever their case (``Plugin.DIST-INFO`` loads as well).
        if matches_any(path, whole) or matches_any(path.lower(), INFRASTRUCTURE):
            edits.append(InfraEdit(path=path, what="file"))
        elif PurePosixPath(path).name in SECTIONS:
            edits += [InfraEdit(path=path, what=what) for what in sections_differ(tree / path, pristine / path)]
    return edits


def seal_infrastructure(task_spec: TaskSpec, changes: list[ChangedFile], tree: Path, pristine: Path) -> dict[str, str]:
    """Reset the infrastructure the patch changed in ``tree``; what was reset and why."""
    sealed: dict[str, str] = {}
    edits = infrastructure_edits(task_spec, changes, tree, pristine)
    whole = [e.path for e in edits if e.what == "file"]
    for path in restore_from(pristine, tree, whole):
        sealed[path] = "test infrastructure"
    for path in sorted({e.path for e in edits if e.what != "file"}):
        if not splice_sections(tree / path, pristine / path):
            restore_from(pristine, tree, [path])
        sealed[path] = "test configuration sections"
    return sealed


def seal_acceptance_tree(
    task_spec: TaskSpec,
    changes: list[ChangedFile],
    tree: Path,
    pristine: Path,
    protected: list[str],
    kept: Collection[str] = (),
) -> dict[str, str]:
    """Seal ``tree`` for the acceptance run: infrastructure, test folders, the patch's test files, less
    ``kept`` (:func:`kept_test_edits`: the edits SWE-bench's procedure keeps). What was reset and why."""
    sealed = seal_infrastructure(task_spec, changes, tree, pristine)
    reset = [(p, why) for p, why in _test_resets(task_spec, changes, pristine, protected, set(sealed)) if p not in kept]
    restored = set(restore_from(pristine, tree, [p for p, _ in reset]))
    sealed.update((p, why) for p, why in reset if p in restored)
    return sealed


def kept_test_edits(
    task_spec: TaskSpec,
    changes: list[ChangedFile],
    tree: Path,
    pristine: Path,
    protected: list[str],
    replaced: Collection[str],
) -> list[str]:
    """The patch's edits to test folders and test files that ``tests.hidden_edits: reset`` keeps in the run
    and ``fail`` resets: all but the files the hidden tests replace (``replaced``), the protected files and
    ``conftest.py`` files (test infrastructure: the module docstring says why). Empty under ``fail``.
    ``tree`` is the base plus the patch, not yet sealed.

    Test configuration and code loaders are not among them: they are sealed in both readings."""
    if task_spec.tests.hidden_edits != "reset":
        return []
    infrastructure = {e.path for e in infrastructure_edits(task_spec, changes, tree, pristine)}
    sealed = [p for p, _ in _test_resets(task_spec, changes, pristine, protected, infrastructure)]
    always = ["**/conftest.py", *protected]
    return [p for p in sealed if p not in replaced and not matches_any(p, always)]


def _test_resets(
    task_spec: TaskSpec, changes: list[ChangedFile], pristine: Path, protected: list[str], skip: set[str]
) -> list[tuple[str, str]]:
    """The changed paths (less ``skip``) the acceptance run resets as tests: those in a test folder, and test
    files, ``conftest.py`` files and ``protected`` files anywhere; each with its reason."""
    folders = folders_to_seal(task_spec, pristine)
    harness_files = [*task_spec.tests.test_files, "**/conftest.py", *protected]
    reset = []
    for path in sorted({p for c in changes for p in (c.path, c.old_path) if p} - skip):
        if any(PurePosixPath(path).is_relative_to(folder) for folder in folders):
            reset.append((path, "test folder"))
        elif matches_any(path, harness_files):
            reset.append((path, "test file"))
    return reset


def folders_to_seal(task_spec: TaskSpec, pristine: Path, files: Sequence[str] | None = None) -> list[str]:
    """Folders reset whole: those holding the task's test files that are tests folders by name, and every folder
    of the base named ``tests`` or ``test`` (test support code the named tests may import from another tests
    folder: ``src/pkg/tests/__init__.py``'s assertion helpers beside a top-level ``tests/``). ``files``: every
    regular file of ``pristine``, when the caller has walked it already."""
    named = [file_of_test_id(t) for t in [*task_spec.tests.fail_to_pass, *task_spec.tests.pass_to_pass]]
    globs = tuple(task_spec.tests.test_files)
    # One walk for both (a file under a tests folder by name is what the support globs match).
    walked = _base_test_files(pristine, (*globs, *_SUPPORT_GLOBS)) if files is None else tuple(files)
    match = any_matcher(globs)
    test_files = {f for f in named if f} | {f for f in walked if match(f)}
    tests = {folder for f in test_files if (folder := _tests_folder(PurePosixPath(f).parent))}
    tests |= _support_folders(walked)
    return [f for f in sorted(tests) if not any(f != o and PurePosixPath(f).is_relative_to(o) for o in tests)]


_SUPPORT_GLOBS = ("**/tests/**", "**/test/**")


def _support_folders(files: tuple[str, ...]) -> set[str]:
    """The outermost folder named ``tests`` or ``test`` above each of ``files``."""
    found = set()
    for name in files:  # walked paths: already plain, '/'-separated (every file of a repository, so no path objects)
        parts = name.split("/")[:-1]
        index = next((i for i, part in enumerate(parts) if part in ("tests", "test")), None)
        if index is not None:
            found.add("/".join(parts[: index + 1]))
    return found


def _base_test_files(pristine: Path, globs: tuple[str, ...]) -> tuple[str, ...]:
    """The base's files matching ``globs``, walked once per pristine folder (the tamper and tests steps both ask).

    A pristine folder is never changed once built; one rebuilt in its place is a new folder (another inode).
    """
    try:
        folder = pristine.stat()
    except OSError:
        return tuple(list_files(pristine, list(globs)))
    return _walked(str(pristine), (folder.st_dev, folder.st_ino, folder.st_mtime_ns), globs)


@functools.lru_cache(maxsize=64)
def _walked(pristine: str, stamp: tuple[int, int, int], globs: tuple[str, ...]) -> tuple[str, ...]:
    del stamp  # part of the cache key only
    return tuple(list_files(Path(pristine), list(globs)))


def _tests_folder(folder: PurePosixPath) -> str | None:
    """The outermost tests folder by name that holds ``folder`` (``src/pkg/tests/unit`` → ``src/pkg/tests``)."""
    for index, part in enumerate(folder.parts):
        if part in _TEST_PARTS or part.startswith(("test_", "tests_")) or part.endswith(("_test", "_tests")):
            return str(PurePosixPath(*folder.parts[: index + 1]))
    return None
