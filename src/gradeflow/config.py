"""Process-wide settings read from the environment, in one place."""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["cache_dir", "gradeflow_version"]


def gradeflow_version() -> str:
    try:
        return version("gradeflow")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def cache_dir() -> Path:
    """Where pristine baselines are kept: ``$GRADEFLOW_HOME`` or ``~/.cache/gradeflow``."""
    root = Path(os.environ.get("GRADEFLOW_HOME") or Path.home() / ".cache" / "gradeflow")
    root.mkdir(parents=True, exist_ok=True)
    return root
