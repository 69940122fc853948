"""pytest's machinery watched by name (``_watched_places``): the functions and classes that make a test's outcome
(``call_and_report``, ``Function.runtest``, ``TestReport.from_item_and_call``, the JUnit writer), what a test's body
calls to judge one (``pytest.raises`` and the other verdict helpers, unittest's assertions), pluggy's dispatch, and
the standard functions a judgement calls into (``re.search``, ``isinstance``, ``operator.eq``). The harness takes each
value before any code of the repository is imported and compares it by identity after every call and when the
session ends (see _make_harness's check_machinery): one replaced is ``<owner>.<name>`` in ``patched``."""

from typing import Any

import pytest


def _watched_places(verdict_modules):
    # [(class or module, label, names)], taken once pytest's ``_update_current_test_var`` is the harness's own (see
    # _make_harness), so that one is watched too. pytest's machinery as it stood before any code of the repository
    # was imported: code under test that replaces one of these (a wrapped call_and_report, a runtest that skips the
    # body) is seen at the next check, after every test call and when the session ends.
    import sys

    import _pytest.junitxml
    import _pytest.main
    import _pytest.python
    import _pytest.reports
    import _pytest.runner
    import _pytest.unittest

    names: tuple[str, ...]
    watched_places: list[Any] = [
        (
            _pytest.runner,
            "_pytest.runner",
            (
                "call_and_report",
                "call_runtest_hook",
                "runtestprotocol",
                "check_interactive_exception",
                "pytest_runtest_call",
                "pytest_runtest_makereport",
                "show_test_item",
                "_update_current_test_var",
            ),
        ),
        (_pytest.runner.CallInfo, "CallInfo", ("from_call", "__init__")),
        (_pytest.reports.TestReport, "TestReport", ("from_item_and_call", "__init__", "_to_json")),
        (_pytest.reports.BaseReport, "BaseReport", ("passed", "failed", "skipped", "longreprtext")),
        (_pytest.python.Function, "Function", ("runtest", "setup", "_getobj", "obj", "repr_failure")),
        (_pytest.python, "_pytest.python", ("pytest_pyfunc_call", "async_fail")),
        (_pytest.python.PyobjMixin, "PyobjMixin", ("obj", "_getobj")),
        (_pytest.unittest.TestCaseFunction, "TestCaseFunction", ("runtest", "setup", "addFailure", "addError")),
        (_pytest.junitxml.LogXML, "LogXML", ("pytest_runtest_logreport", "pytest_sessionfinish", "finalize")),
        (_pytest.junitxml._NodeReporter, "_NodeReporter", ("to_xml", "write_captured_output", "append_failure")),
        (_pytest.main.Session, "Session", ("perform_collect",)),
        (_pytest.main, "_pytest.main", ("pytest_runtestloop",)),
    ]
    # What a test's own body calls to judge an outcome: ``pytest.raises`` swapped for a context manager
    # that accepts "no exception", an ``approx`` that equals anything, unittest's assertions.
    import unittest.case

    checks = ("raises", "fail", "skip", "xfail", "approx", "warns", "deprecated_call", "importorskip", "exit")
    watched_places += [
        (pytest, "pytest", (*checks, "RaisesExc", "RaisesGroup")),
        (
            unittest.case.TestCase,
            "TestCase",
            tuple(
                n
                for n in vars(unittest.case.TestCase)
                if n.startswith(("assert", "fail", "_base", "_getAssert", "_formatMessage"))
            ),
        ),
        (unittest.case._AssertRaisesContext, "_AssertRaisesContext", ("__enter__", "__exit__", "handle")),
    ]
    for module_name in dict.fromkeys(
        ("_pytest.outcomes", "_pytest.raises", "_pytest.python_api", "_pytest.recwarn", *verdict_modules[0])
    ):
        module = sys.modules.get(module_name)
        if module is None:
            continue
        watched_places.append((module, module_name, checks))
        for class_name, value in list(vars(module).items()):
            if isinstance(value, type) and value.__module__ == module_name:
                names = ("__init__", "__enter__", "__exit__", "__eq__", "__call__", "matches", "_check_match")
                watched_places.append((value, class_name, names))
    # pluggy's dispatch, class by class: how every hook call (the harness's own wrapper's included) is made.
    import _pytest.nodes
    import pluggy

    manager_names = (
        "_hookexec",
        "subset_hook_caller",
        "register",
        "unregister",
        "get_plugins",
        "get_name",
        "list_name_plugin",
        "get_hookcallers",
        "parse_hookimpl_opts",
    )
    watched_places.append((pluggy.PluginManager, "PluginManager", manager_names))
    caller_names = (
        "__call__",
        "call_extra",
        "call_historic",
        "get_hookimpls",
        "_add_hookimpl",
        "_remove_plugin",
        "__init__",
        "_call_history",
    )
    for module_name in ("pluggy._hooks", "pluggy._caller", "pluggy._callers", "pluggy._result", "pluggy._manager"):
        module = sys.modules.get(module_name)
        if module is None:
            continue
        watched_places.append((module, module_name, ("_multicall", "_Result", "Result", "HookCaller", "_HookCaller")))
        for class_name, value in list(vars(module).items()):
            if isinstance(value, type) and value.__module__ == module_name:
                names = (
                    *caller_names,
                    "force_result",
                    "force_exception",
                    "get_result",
                    "excinfo",
                    "exception",
                    "from_call",
                    "_result",
                    "_exception",
                    "function",
                )
                watched_places.append((value, class_name, names))
    watched_places.append((_pytest.nodes.Node, "Node", ("ihook",)))
    import _pytest.assertion.rewrite

    watched_places.append(
        (
            _pytest.assertion.rewrite,
            "_pytest.assertion.rewrite",
            ("rewrite_asserts", "_call_compared", "_read_pyc", "_write_pyc"),
        )
    )
    watched_places.append((_pytest.main.Session, "Session", ("gethookproxy",)))
    # What a test's judgement calls into, checked after every call like pytest's own (the rest of the standard
    # library is compared when the session ends): a match= that always matches, an isinstance that says yes.
    import builtins
    import operator
    import re

    watched_places += [
        (re, "re", ("search", "match", "fullmatch", "compile", "sub", "escape", "Pattern")),
        (
            builtins,
            "builtins",
            (
                "isinstance",
                "issubclass",
                "len",
                "repr",
                "str",
                "bool",
                "type",
                "getattr",
                "hasattr",
                "callable",
                "iter",
                "next",
                "any",
                "all",
                "sum",
                "sorted",
                "abs",
                "round",
                "min",
                "max",
                "int",
                "float",
                "list",
                "dict",
                "set",
                "tuple",
                "id",
                "hash",
                "print",
            ),
        ),
        (operator, "operator", ("eq", "ne", "lt", "le", "gt", "ge", "contains", "not_", "truth", "is_", "is_not")),
    ]
    return watched_places
