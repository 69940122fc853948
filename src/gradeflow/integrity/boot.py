"""How the harness joins pytest whatever the task's command does to its arguments and environment.

``PYTHONPATH=src python -m pytest``, ``PYTEST_ADDOPTS=-x pytest``, ``env -u PYTEST_ADDOPTS pytest``, a script
that deletes ``PYTEST_ADDOPTS`` from ``os.environ`` or calls ``pytest.main`` with arguments of its own: the
variables the harness is named in are not the command's to keep. So every sandbox starts its interpreters
through the harness folder: the local and isolated sandboxes' private environment, and the docker
sandbox's image (a layer with one ``.pth``), treat it as a site folder, and the folder's ``.pth`` imports
the boot module written here at every interpreter start. The boot

- registers an import hook: when ``_pytest.config`` is imported, the harness's plugin is added to pytest's
  essential plugins (loaded by every ``get_config`` before any argument is read, and refused by
  ``-p no:``), whatever arguments, plugins or environment that pytest is given;
- puts the harness folder on ``sys.path`` and its options back into ``PYTEST_ADDOPTS`` (with autoload off
  again on a candidate's run) at interpreter start and again each time pytest makes a configuration,
  after whatever the command did to ``os.environ`` in between, so the base's entry-point plugins are named
  and the processes pytest starts see them too.

A pytest whose interpreter does not start there (``python -S``, an interpreter from outside the sandbox's
environment, a virtual environment tox or nox made without the sandbox's site folders) runs without the
harness; the base run then shows pytest's report with no record, which :func:`pytest_ran_without_harness`
tells.
"""

from __future__ import annotations

import json

__all__ = ["boot_files", "pytest_ran_without_channel", "pytest_ran_without_harness"]

_BOOT = '''"""This run's plugin joins every pytest this interpreter configures."""
import importlib.machinery
import os
import sys


def _join(module, options, variables):
    folder = os.path.dirname(os.path.abspath(__file__))

    def restore():
        current = os.environ.get("PYTEST_ADDOPTS", "")
        if options[0] not in current:
            os.environ["PYTEST_ADDOPTS"] = " ".join(part for part in (current, *options) if part)
        os.environ.update(variables)
        if folder not in sys.path:
            sys.path.append(folder)

    def patch(config):
        config.essential_plugins = (*config.essential_plugins, module)
        config.default_plugins = (*config.default_plugins, module)
        make = config.get_config

        def get_config(*args, **kwargs):
            restore()
            return make(*args, **kwargs)

        config.get_config = get_config

    class Hook:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name != "_pytest.config":
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return None
            run = spec.loader.exec_module

            def exec_module(config):
                run(config)
                patch(config)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Hook())
    restore()


_join(__MODULE__, __OPTIONS__, __VARIABLES__)
del _join
'''


def boot_files(module: str, options: list[str], variables: dict[str, str]) -> dict[str, bytes]:
    """The harness folder's startup files for plugin ``module``: a ``.pth`` and the boot module it imports.

    ``options`` are the ``PYTEST_ADDOPTS`` words the run needs (the plugin's ``-p`` first), ``variables``
    the other variables every pytest of the run must see (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``).
    """
    boot = f"{module}_boot"
    source = (
        _BOOT.replace("__MODULE__", json.dumps(module))
        .replace("__OPTIONS__", json.dumps(options))
        .replace("__VARIABLES__", json.dumps(variables))
    )
    return {f"{module}.pth": f"import {boot}\n".encode(), f"{boot}.py": source.encode()}


_PYTEST_SUITES = (b'<testsuites name="pytest tests"', b'<testsuite name="pytest"')


def pytest_ran_without_harness(junit: bytes) -> str | None:
    """What to tell when a run's report is pytest's but the harness left no record, else ``None``."""
    if not any(mark in junit[:4096] for mark in _PYTEST_SUITES):
        return None
    return (
        "pytest ran but gradeflow's harness could not join it (the interpreter running pytest did not start "
        "through the sandbox's Python environment: `python -S`, a Python from outside the sandbox's "
        "environment, or a virtual environment made inside the run, as tox or nox make); the grader's canaries "
        "did not run and candidate runs are not checked against a harness record"
    )


def pytest_ran_without_channel() -> str:
    """What to tell when the harness joined the base run's pytest but the grader's channel (standard input)
    never reached it: the canaries and the hidden or handed-over sources were not served, nothing was signed."""
    return (
        "pytest ran with gradeflow's harness but without the grader's channel on its standard input (a runner "
        "between the command and pytest closed it: tox does so off a terminal, write `tox -e py -i` or "
        "`--no-capture`); the grader's canaries did not run and candidate runs are not checked against a "
        "signed record"
    )
