"""The module-level code, last: the harness built from the loader's config, and pytest's hooks, each holding its body
in a keyword default (no closure, no module global the code under test could swap). The assembler ends the module
by deleting every other global the parts bind (see ``gradeflow.integrity.plugin_files.assembled``)."""

import pytest

from ._loaded import _gradeflow_config
from .session import _make_harness

_hooks = _make_harness(_gradeflow_config)  # the loader's literal (gradeflow.integrity.plugin_files)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, _hook=_hooks[7]):
    _hook(early_config)


def pytest_configure(config, _hook=_hooks[0]):
    _hook(config)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items, _hook=_hooks[1]):
    _hook(session, config, items)


def pytest_collection_finish(session, _hook=_hooks[2]):
    _hook(session)


# A wrapper costs pluggy a generator and, old-style, a result object per call: pluggy 1.1+'s new-style wrapper
# where there is one, and the wrappers only some runs need (varied, test evidence) only in those runs.
try:
    _wrapper = pytest.hookimpl(wrapper=True)
except TypeError:  # pluggy 1.0 (pytest 7)
    _wrapper = None  # type: ignore[assignment]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(item, _hook=_hooks[3], _starts=_hooks[6]):
        _starts(item)
        outcome = yield
        _hook(item, outcome.excinfo)
else:

    @_wrapper
    def pytest_runtest_call(item, _hook=_hooks[3], _starts=_hooks[6]):
        _starts(item)
        try:
            result = yield
        except BaseException as exc:
            _hook(item, (type(exc), exc, exc.__traceback__))
            raise
        _hook(item, None)
        return result


if _hooks[8] is not None:

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_make_collect_report(collector, _hook=_hooks[8]):
        saved = _hook(collector)
        yield
        if saved is not None:
            _hook(collector, saved)


if _hooks[9] is not None:

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(item, nextitem, _reach=_hooks[9]):
        traced = _reach[0](item)
        yield
        if traced:
            _reach[1](item)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus, _hook=_hooks[4]):
    _hook(session, exitstatus)


def pytest_unconfigure(config, _hook=_hooks[5]):
    _hook(config)
