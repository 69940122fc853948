"""Test sources handed to the harness in memory instead of read from the run's disk.

The code under test shares the run's files: whatever a test module is on disk when pytest imports it, that
code could have read (and special-cased), replaced, or shadowed with a forged bytecode cache first. So the
grader hands the harness, on the run's standard input (see :meth:`~gradeflow.integrity.harness.Harness.channel`),
the text of every test module the run must see as it was when the run started:

* the hidden tests' Python files (after ``tests.hidden_patch``): on disk a hidden-only module becomes
  :data:`PLACEHOLDER` (so pytest's directory collection still makes its node, under the right conftest
  files) and a file the hidden patch changed goes back to what the tree held before; other hidden files
  (data) stay on disk;
* the canary file (a placeholder on disk too);
* the tree's test modules and ``conftest.py`` files as they stand after sealing: every ``conftest.py``,
  every file named like a test module (``test_*.py``, ``*_test.py``, the task's test files and ids), every
  Python file of a sealed test folder.

The plugin serves exactly these paths from memory and treats a ``conftest.py`` of the tree it was not handed
as made during the run.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from gradeflow.integrity.files import every_file
from gradeflow.integrity.sealing import folders_to_seal
from gradeflow.models import TaskSpec
from gradeflow.models.globs import any_matcher
from gradeflow.models.testids import file_of_test_id

__all__ = ["PLACEHOLDER", "Prior", "prior_state", "suite_sources", "withdraw"]

PLACEHOLDER = ""
"""What a hidden-only test module (and the canary file) holds on the run's disk: nothing to read."""

Prior = dict[str, bytes | None]
"""Repository-relative path → what the tree held there before the hidden tests were injected (``None``: nothing)."""

_TEST_NAMES = ["**/conftest.py", "**/test_*.py", "**/*_test.py"]


def prior_state(tree: Path, paths: list[str]) -> Prior:
    """What ``tree`` holds at each of ``paths`` now: a regular file's bytes, else ``None``."""
    prior: Prior = {}
    for rel in paths:
        target = tree / rel
        prior[rel] = target.read_bytes() if target.is_file() and not target.is_symlink() else None
    return prior


def withdraw(tree: Path, prior: Prior) -> dict[str, str]:
    """Take the injected hidden Python files off ``tree``'s disk; their text by repository-relative path.

    Each one left by the injection is read, then put back as it was before (or :data:`PLACEHOLDER` where
    there was nothing). One the hidden patch deleted stays deleted.
    """
    texts: dict[str, str] = {}
    for rel, before in sorted(prior.items()):
        target = tree / rel
        if not rel.endswith(".py") or target.is_symlink() or not target.is_file():
            continue
        texts[rel] = target.read_bytes().decode("utf-8", "surrogateescape")
        target.write_bytes(before if before is not None else PLACEHOLDER.encode())
    return texts


def suite_sources(task_spec: TaskSpec, tree: Path) -> dict[str, str]:
    """The text of ``tree``'s test modules and ``conftest.py`` files, by repository-relative path."""
    named = [file_of_test_id(t) for t in [*task_spec.tests.fail_to_pass, *task_spec.tests.pass_to_pass]]
    globs = [*_TEST_NAMES, *task_spec.tests.test_files, *(f for f in named if f)]
    every = every_file(tree)  # one walk of the tree, for the folders to seal and the files
    globs += [f"{folder}/**" for folder in folders_to_seal(task_spec, tree, every)]
    match = any_matcher(tuple(globs))
    found = {}
    for rel in every:
        if match(rel) and PurePosixPath(rel).suffix == ".py":
            found[rel] = (tree / rel).read_bytes().decode("utf-8", "surrogateescape")
    return found
