"""The ``gradeflow`` command line: argument parsing and printing only (``main``, ``suite``, ``service``)."""

from __future__ import annotations

import gc
import sys
from typing import NoReturn

from gradeflow.cli.main import main

__all__ = ["main", "run"]


def run() -> NoReturn:
    """The ``gradeflow`` executable: :func:`main` (through the warm runner for the commands that run the
    engine), then exit without the collector's last passes.

    A process that imported Prefect holds about a million objects; the full collections the interpreter
    runs while it shuts down cost about 0.3 s of every call. They free nothing an exiting process needs
    freed: exit handlers still run, files are still flushed and closed as their objects go.
    """
    code = main(warm=True)
    gc.disable()
    gc.freeze()
    sys.exit(code)
