"""How the harness joins pytest whatever the task's command does to its environment.

``PYTHONPATH=src python -m pytest``, ``PYTEST_ADDOPTS=-x pytest``, ``env -u PYTEST_ADDOPTS pytest`` or a
script that sets its own variables replace what the harness is named in. So the variables are not all:
a sandbox whose Python environment starts through the harness folder (the local sandbox's private
environment treats it as a site folder) runs the folder's ``.pth`` at every interpreter start, and that
imports the boot module written here. Inside the process, after the shell and everything the command ran
have done with the environment, the boot puts the harness folder on ``sys.path`` (``site`` did) and the
harness's options back into ``PYTEST_ADDOPTS`` (with autoload off again on a candidate's run), so the next
pytest of that process loads the plugin. A pytest whose interpreter does not start there (``python -S``, an
interpreter from outside the sandbox's environment) runs without the harness; the base run then shows
pytest's report with no record, which :func:`pytest_ran_without_harness` tells.
"""

from __future__ import annotations

import json

__all__ = ["boot_files", "pytest_ran_without_harness"]

_BOOT = '''"""gradeflow: puts this run's harness back into PYTEST_ADDOPTS at interpreter start."""
import os


def _join(options, variables):
    current = os.environ.get("PYTEST_ADDOPTS", "")
    if options[0] not in current:
        os.environ["PYTEST_ADDOPTS"] = " ".join(part for part in (current, *options) if part)
    os.environ.update(variables)


_join(__OPTIONS__, __VARIABLES__)
del _join
'''


def boot_files(module: str, options: list[str], variables: dict[str, str]) -> dict[str, bytes]:
    """The harness folder's startup files for plugin ``module``: a ``.pth`` and the boot module it imports.

    ``options`` are the ``PYTEST_ADDOPTS`` words the run needs (the plugin's ``-p`` first), ``variables``
    the other variables every pytest of the run must see (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``).
    """
    boot = f"{module}_boot"
    source = _BOOT.replace("__OPTIONS__", json.dumps(options)).replace("__VARIABLES__", json.dumps(variables))
    return {f"{module}.pth": f"import {boot}\n".encode(), f"{boot}.py": source.encode()}


_PYTEST_SUITES = (b'<testsuites name="pytest tests"', b'<testsuite name="pytest"')


def pytest_ran_without_harness(junit: bytes) -> str | None:
    """What to tell when a run's report is pytest's but the harness left no record, else ``None``."""
    if not any(mark in junit[:4096] for mark in _PYTEST_SUITES):
        return None
    return (
        "pytest ran but gradeflow's harness could not join it (the interpreter running pytest did not start "
        "through the sandbox's Python environment: `python -S`, or a Python from outside the sandbox's "
        "environment); the grader's canaries did not run and candidate runs are not checked against a harness record"
    )
