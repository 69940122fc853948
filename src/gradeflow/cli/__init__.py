"""The ``gradeflow`` command line: argument parsing and printing only (``main``, ``suite``, ``service``)."""

from gradeflow.cli.main import main

__all__ = ["main"]
