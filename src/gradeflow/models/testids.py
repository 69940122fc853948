"""Which repository files a test id names (the files the test step restores and constraints protect)."""

from __future__ import annotations

__all__ = ["file_of_test_id"]


def file_of_test_id(test_id: str) -> str | None:
    """The file part of a pytest node id (``tests/test_x.py::test_y`` → ``tests/test_x.py``), else ``None``."""
    head = test_id.split("::", 1)[0]
    return head if head.endswith(".py") and not head.startswith("/") and ".." not in head.split("/") else None
