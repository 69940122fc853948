"""How test ids are read: which repository file a test id names, and which ids are doctests.

pytest writes a node id as ``path::Class::...::name[params]`` and splits it the same way: everything
from the first ``[`` on is the parameter id (it may hold ``::``, ``]`` or ``[``), the rest splits at
``::``. A doctest's node id names the file its docstring or text lives in (``pkg/mod.py::pkg.mod.func``,
``docs/guide.rst::guide.rst``): that file is source the candidate edits, never a test file, so a
doctest id never makes its file protected or restored to the base.
"""

from __future__ import annotations

from pathlib import PurePosixPath

__all__ = ["file_of_test_id", "is_doctest_id", "split_test_id"]


def split_test_id(test_id: str) -> list[str]:
    """``test_id`` split at each ``::`` before its first ``[``, as pytest splits node ids."""
    head, bracket, params = test_id.partition("[")
    parts = head.split("::")
    parts[-1] += bracket + params
    return parts


def is_doctest_id(test_id: str) -> bool:
    """Whether ``test_id`` is the node id of a doctest (in a Python module or a text file).

    A Python test's name is an identifier; a doctest's is the dotted name of what the docstring
    belongs to (``pkg.mod.func``), or the module's own name for its module docstring, or the text
    file's name. A test file (``test_*.py``, ``*_test.py``) naming itself is taken for a test function.
    """
    parts = split_test_id(test_id)
    if len(parts) != 2 or "/" in parts[1]:
        return False
    path, name = PurePosixPath(parts[0]), parts[1]
    if path.suffix != ".py":
        return bool(path.suffix) and name == path.name
    if "[" in name:
        return False
    if "." in name:
        return True
    looks_like_tests = path.stem.startswith("test_") or path.stem.endswith("_test")
    return name == path.stem and not looks_like_tests


def file_of_test_id(test_id: str) -> str | None:
    """The test file a pytest node id names (``tests/test_x.py::test_y`` → ``tests/test_x.py``), else ``None``.

    ``None`` too for a doctest id: the file it names is source, not a test.
    """
    head = split_test_id(test_id)[0]
    if not head.endswith(".py") or head.startswith("/") or ".." in head.split("/") or is_doctest_id(test_id):
        return None
    return head
