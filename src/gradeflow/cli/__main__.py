"""``python -m gradeflow.cli``: the same as the ``gradeflow`` command."""

from gradeflow.cli import run

run()
