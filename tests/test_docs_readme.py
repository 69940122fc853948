"""The README's first grading example runs as written and prints exactly the lines the README shows."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from gradeflow.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


@pytest.mark.slow
@pytest.mark.usefixtures("prefect")
def test_the_grade_example_prints_what_the_readme_shows(capsys: pytest.CaptureFixture[str]) -> None:
    found = re.search(r"## Grading one submission\n\n```sh\n(gradeflow grade [^\n]+)\n((?:# [^\n]*\n)+)", README)
    assert found, "the README's grading example"
    command, shown = shlex.split(found.group(1)), [line[2:] for line in found.group(2).splitlines()]
    cwd = os.getcwd()
    os.chdir(ROOT)  # the example's paths are relative to the checkout
    try:
        code = main(command[1:])
    finally:
        os.chdir(cwd)
    printed = capsys.readouterr().out.splitlines()
    assert code == 0
    assert printed[: len(shown)] == shown
