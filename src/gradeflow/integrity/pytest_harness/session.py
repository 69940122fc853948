"""The harness (``_make_harness``): reads the config and the channel, takes every snapshot the other parts need before
any code of the repository is imported, installs the audit hook, and returns the bodies of pytest's hooks. Its own
checks: the values ``machinery`` names compared by identity and pluggy's hook implementations recorded by the file
of their code (``check_machinery``, ``hook_files``), the plugins registered, the canaries added and run first, the
markers and raisers of skips and xfails, each call's outcome appended to the signed call log as it ends, the checks
after every call behind one version-tag gate (``gate``: the machinery, ``internals``, ``module_names``, and
``call_writes``' namespaces in one pass), and the signed record written at configure, collection's end and exit."""

from typing import Any

import pytest

from .audit import install_audit
from .call_writes import _call_writes, _verdict_modules
from .channel import _read_channel, _signer
from .claimed import _claimed_classes
from .compared import _compared_values
from .function_layers import _test_functions
from .internals import _pytest_internals
from .machinery import _watched_places
from .module_names import _test_modules
from .reach import _change_reach
from .sources import _serve_sources
from .standard_library import _standard_library
from .varied import _relabel_command_line, _varied_calls
from .versions import _held, _native


def _make_harness(config_text):
    import functools
    import hashlib
    import itertools
    import json
    import os
    import sys
    import time
    from pathlib import Path

    config = json.loads(config_text)
    channel = _read_channel() if config.get("channel") else {}
    # More room on the stack than Python's default, by an amount drawn per run: the depth left is no mark of
    # a test run a patch could count on.
    sys.setrecursionlimit(sys.getrecursionlimit() + max(int(config.get("recursion") or 0), 0))
    if isinstance(channel.get("varied"), dict):  # while /proc/self/mem is still this process's to open
        _relabel_command_line(str(channel["varied"].get("main") or "main.py"))
    sign = _signer(channel.pop("key", None))
    versions = _native(sign is not None)
    dumps, os_write, os_replace, isfile, sha256 = json.dumps, os.write, os.replace, os.path.isfile, hashlib.sha256
    quote = json.encoder.encode_basestring_ascii  # what dumps writes for a string
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
    log = os.open(config["calls"], flags, 0o600)
    if isinstance(channel.get("varied"), dict):
        # Not the lowest free descriptor (3) in a varied run: a process no test runs in has nothing open there.
        import fcntl
        import secrets

        duplicate = fcntl.fcntl(log, fcntl.F_DUPFD_CLOEXEC, 20 + secrets.randbelow(200))
        os.close(log)
        log = duplicate
    record = {
        "nonce": config["nonce"],
        "started": time.time(),
        "plugins": [],
        "collected": [],
        "calls": {},
        "exitstatus": None,
        "junit_sha256": None,
        "finished": False,
    }
    canary_file, canaries = config["canary_file"], tuple(config["canaries"])
    module_type, module_class, function_class = type(sys), pytest.Module, pytest.Function
    skip_exception = pytest.skip.Exception
    import unittest

    import _pytest

    outcome_exceptions = (skip_exception, pytest.xfail.Exception, unittest.SkipTest)
    varied = channel.get("varied") if isinstance(channel.get("varied"), dict) else None
    pytest_folders = tuple(os.path.dirname(m.__file__) + os.sep for m in (pytest, _pytest, unittest) if m.__file__)
    missing = object()
    record["patched"] = []

    def note_patched(label):
        if label not in record["patched"]:
            record["patched"].append(label)

    # Before the standard library's and pytest's state is taken: the wrapped helpers are that state.
    _claimed_classes(config.get("workspace"), note_patched)
    record["foreign_code"] = []
    record["misplaced_code"] = []
    record["hook_files"] = []
    record["marked"] = {}
    record["raisers"] = {}
    record["audit"] = []
    record["namespaces"] = []
    identity = object.__hash__  # as id(), unaudited (see _pytest_internals)
    startup_modules: dict[str, Any] = {
        name: sys.modules[name] for name in ("pytest", "_pytest", "unittest", "pluggy") if name in sys.modules
    }
    standard_rebound = _standard_library(config.get("workspace"), record["started"])

    verdict_modules = _verdict_modules()
    decisive_spaces, writes_start, writes_after, builtins_rebound, compared_kind, underlying = _call_writes(
        versions, record, note_patched, config.get("workspace"), verdict_modules
    )
    window, relay = [False], [None]
    recoded = [True]  # see check_test_function; without the audit hook (no workspace) it is never cleared
    install_audit(
        config.get("workspace"),
        record,
        frozenset({config["record"], config["record"] + ".part", config["calls"], log}),
        window,
        relay,
        (versions,) if versions is not None else (),
        recoded,
    )
    compared_test = _compared_values(config.get("workspace"), record, compared_kind)
    reach = _change_reach(config, record)
    handed: Any
    handed = channel.get("sources") if isinstance(channel.get("sources"), dict) else {}
    front_sources, check_sources, handed_names = _serve_sources(handed, config.get("workspace"), record)
    take_internals, internals_full, internals_fast, internals_items, internals_called, internals_spaces = (
        _pytest_internals(config.get("workspace"), record, versions, verdict_modules)
    )
    own_module = globals().get("__name__")
    # The run's own pytest session: its config (the first to reach the harness: loaded with ``-p`` on the command
    # line, it sees the config before any conftest or test runs), its session and its items. A test that runs pytest
    # in the same process (pytester's ``inline_run``, pytest's own ``testdir``) makes inner sessions the harness is
    # loaded into too (the same module, the same hooks): they are the outer test's call, checked around that call,
    # and record nothing of their own. Told apart by identity, never by an attribute the code under test could set.
    own: dict[str, Any] = {"config": None, "session": None, "items": frozenset(), "held": []}

    def own_config(pytest_config):
        if own["config"] is None:
            own["config"] = pytest_config
        return pytest_config is own["config"]

    def initial_conftests(early_config):
        if not own_config(early_config):
            return
        front_sources()
        take_internals(early_config.pluginmanager, own_module)

    import _pytest.runner
    import _pytest.unittest

    # pytest's marks of a test in the environment, PYTEST_CURRENT_TEST (set around each test's setup, call and
    # teardown) and PYTEST_VERSION (set for the session), are what code under test would look for to behave
    # one way under test and another for a real caller: neither is in os.environ while the repository's code
    # runs, on the base as on the candidate (a test reading one fails on both).
    def _update_current_test_var(item, when):
        return None

    _pytest.runner._update_current_test_var = _update_current_test_var
    os.environ.pop("PYTEST_VERSION", None)

    watched_places = _watched_places(verdict_modules)
    watched = []
    for owner, label, names in watched_places:
        namespace = vars(owner)  # a live view of the class's or module's namespace
        for name in names:
            if name in namespace:
                watched.append((namespace, name, f"{label}.{name}", namespace[name]))
    # Checked after every test, so checked in C (see _held): each entry's current value against the one taken
    # here, by identity.
    from operator import attrgetter, is_not, methodcaller

    any_, map_, list_, getattr_, nones = any, map, list, getattr, itertools.repeat(None)
    held = functools.partial(_held, versions=versions)
    get_function, get_hookimpls, value_of = attrgetter("function"), methodcaller("get_hookimpls"), attrgetter("value")
    watched_changed = held([(namespace, name, original) for namespace, name, _label, original in watched])
    watched_hooks = (
        "pytest_runtest_protocol",
        "pytest_runtest_call",
        "pytest_pyfunc_call",
        "pytest_runtest_makereport",
        "pytest_runtest_logreport",
        "pytest_report_teststatus",
        "pytest_collection_modifyitems",
        "pytest_collection_finish",
        "pytest_sessionfinish",
    )
    state: dict[str, Any] = {
        "hooks": None,
        "pm": None,
        "plugins": set(),
        "attributes": ((), (), (), ()),
        "plugins_tag": None,
        "plugins_seen": None,
        "gate": None,
        "gate_seen": None,
        "callers": [],
        "caller_impls": [],
        "impls": (),
        "impl_lists": None,
    }
    flat, impls_of = itertools.chain.from_iterable, attrgetter("_hookimpls")

    def plugins_added(pm):
        # The plugins registered since the last look. pluggy keeps them in a dict (``_name2plugin``): where its
        # version tag (see _dict_versions) is unchanged, none was, and no set of every plugin is made per call.
        tag = state["plugins_tag"]
        if tag is not None:
            now = tag.value
            if now == state["plugins_seen"]:
                return ()
            state["plugins_seen"] = now
        return pm.get_plugins() - state["plugins"]

    def hookimpls_changed():
        # Whether a watched hook's implementations changed: a list replaced, one added or removed, or one put in
        # another's place. pluggy's own lists (``_hookimpls``) are compared, by identity and in C, with the
        # implementations taken when they were remembered; a pluggy without them is asked for copies.
        lists = state["impl_lists"]
        if lists is None:
            return list_(map_(get_hookimpls, state["callers"])) != state["caller_impls"]
        try:
            return (
                any_(map_(is_not, map_(impls_of, state["callers"]), lists))
                or sum(map_(len, lists)) != len(state["impls"])
                or any_(map_(is_not, flat(lists), state["impls"]))
            )
        except Exception:
            return True

    def hook_functions(pm):
        found = {}
        for hook_name in watched_hooks:
            caller = getattr(pm.hook, hook_name, None)
            for impl in caller.get_hookimpls() if caller is not None else ():
                found[(hook_name, impl.plugin_name, identity(impl))] = impl.function
        return found

    def check_machinery(settled=False):
        # The fast path: nothing replaced and no plugin or hook implementation added since the last check.
        # ``settled``: the watched namespaces are known unchanged (see gate).
        check_sources(None)
        if not settled and watched_changed():
            for namespace, name, label, original in watched:
                if namespace.get(name) is not original:
                    note_patched(label)
        pm = state["pm"]
        if pm is None:
            return
        owners, names, labels, originals = state["attributes"]
        if any_(map_(is_not, map_(getattr_, owners, names, nones), originals)):
            for owner, name, label, original in zip(owners, names, labels, originals):
                if getattr_(owner, name, None) is not original:
                    note_patched(label)
        if state["hooks"] is None:
            return
        added = plugins_added(pm)
        if added:
            # Registered after collection (by code under test): listed like the others.
            state["plugins"] |= added
            record["plugins"].extend(describe(pm.get_name(plugin), plugin) for plugin in added)
        if added or any_(map_(is_not, map_(get_function, state["impls"]), state["functions"])) or hookimpls_changed():
            hooks = hook_functions(pm)
            for key, function in hooks.items():
                before = state["hooks"].get(key)
                if before is not None and before is not function:
                    note_patched(f"hook {key[0]} of {key[1]}")
            remember_hooks(pm)

    own_file = (lambda: None).__code__.co_filename

    def code_identity(function):
        # Where the function's code is and what that code is (its bytecode, names, constants, name and
        # line): a function claiming another file's name cannot also match that file's hook. A callable
        # without code (an object, a partial, a builtin) is named by its type.
        for _ in range(12):
            function = getattr(function, "__func__", function)
            code = getattr(function, "__code__", None)
            if code is not None:
                consts = tuple(c for c in code.co_consts if not hasattr(c, "co_code"))
                text = f"{code.co_name}|{code.co_firstlineno}|{code.co_names!r}|{consts!r}".encode("utf-8", "replace")
                return code.co_filename, sha256(code.co_code + b"|" + text).hexdigest()[:16]
            wrapped = getattr(function, "__wrapped__", None)
            if wrapped is None:
                break
            function = wrapped
        kind = type(function)
        return f"<{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', '?')}>", ""

    def note_hook_files(callers):
        # pytest's own conftest modules, by identity: a plugin that only says it is a conftest is not one.
        conftests = tuple(getattr(state["pm"], "_conftest_plugins", None) or ())
        for caller in callers:
            name = getattr(caller, "name", "?")
            for impl in caller.get_hookimpls():
                where, identity = code_identity(impl.function)
                if where == own_file:
                    continue
                if where.endswith("conftest.py") and not any(impl.plugin is module for module in conftests):
                    where += " (not loaded as a conftest)"
                entry = [name, where, identity]
                if entry not in record["hook_files"]:
                    record["hook_files"].append(entry)

    def remember_hooks(pm):
        callers = [getattr(pm.hook, name) for name in watched_hooks if getattr(pm.hook, name, None) is not None]
        caller_impls = list(map(get_hookimpls, callers))
        impls = [impl for each in caller_impls for impl in each]
        lists: Any = [getattr(caller, "_hookimpls", None) for caller in callers]
        if not all(type(each) is list and each == copy for each, copy in zip(lists, caller_impls)):
            lists = None
        state.update(
            callers=callers,
            caller_impls=caller_impls,
            impls=tuple(impls),
            functions=tuple(map(get_function, impls)),
            impl_lists=lists,
        )
        note_hook_files(callers)

    check_test_function = _test_functions(record, handed, recoded)

    def write():
        # The record, then (with the run's key) a line ``hmac-sha256 <hex>`` signing the JSON before it.
        text = dumps(record)
        if sign is not None:
            text += "\nhmac-sha256 " + sign(text.encode("utf-8")) + "\n"
        tmp = config["record"] + ".part"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os_replace(tmp, config["record"])

    def describe(name, plugin):
        module = getattr(plugin, "__name__", None) if isinstance(plugin, module_type) else None
        file = getattr(plugin, "__file__", None) if module else None
        if module is None:
            module = getattr(type(plugin), "__module__", None)
            file = getattr(sys.modules.get(module or ""), "__file__", None)
        return {"name": str(name), "module": module, "file": file}

    def plugin_files(pytest_config):
        return [describe(name, plugin) for name, plugin in pytest_config.pluginmanager.list_name_plugin()]

    def is_canary(item):
        # The name first: ``fspath`` builds a legacy path object, and most items are not canaries.
        if item.name not in canaries:
            return False
        path = getattr(item, "path", missing)
        return str(getattr(item, "fspath", "") if path is missing else path) == canary_file

    def canary_items(session, names):
        # Collected by hand when the command's paths, -k or python_files leave the canary file out.
        try:
            module = module_class.from_parent(session, path=Path(canary_file))
            return [function_class.from_parent(module, name=name) for name in names]
        except Exception:  # the run goes on; the record then lacks the canaries
            return []

    def configure(pytest_config):
        if not own_config(pytest_config):
            return
        # The must-fail canary is one failure more: -x and --maxfail=N still stop after N real failures.
        if getattr(pytest_config.option, "maxfail", 0):
            pytest_config.option.maxfail += 1
        pm = pytest_config.pluginmanager
        # What every hook call goes through: the manager's executor and each watched hook's caller. (The
        # manager's ``_hookexec`` is a method, a new bound object at each lookup: it is watched on the class.)
        attributes = [(pm, "_inner_hookexec", "PluginManager._inner_hookexec"), (pm, "hook", "PluginManager.hook")]
        for hook_name in watched_hooks:
            caller = getattr(pm.hook, hook_name, None)
            attributes.append((pm.hook, hook_name, f"hook caller {hook_name}"))
            if caller is not None:
                attributes.append((caller, "_hookexec", f"hook caller {hook_name}._hookexec"))
        taken = [(o, n, label, getattr(o, n, None)) for o, n, label in attributes]
        state.update(pm=pm, attributes=tuple(zip(*taken)))
        found = []
        for plugin, _dist in pytest_config.pluginmanager.list_plugin_distinfo():
            if getattr(plugin, "__name__", None):
                found.append(plugin.__name__)
        record["entrypoint_modules"] = found
        write()

    select = config.get("select")

    spelled = frozenset(select or ())

    def junit_spelling(nodeid):
        # ``classname::name`` as pytest's JUnit report writes a node id (its mangle_test_address).
        path, bracket, params = nodeid.partition("[")
        names = path.split("::")
        names[0] = names[0].replace("/", ".")
        if names[0].endswith(".py"):
            names[0] = names[0][:-3]
        names[-1] += bracket + params
        return ".".join(names[:-1]) + "::" + names[-1]

    def selected(item):
        nodeid = item.nodeid
        if any(nodeid == s or nodeid.startswith((s + "::", s + "[")) for s in select):
            return True
        return junit_spelling(nodeid) in spelled

    def modify_items(session, pytest_config, items):
        if pytest_config is not own["config"]:
            return
        own["session"] = session
        if select is not None:
            # The test-evidence runs: only the patch's own tests, whatever paths the command names.
            dropped = [item for item in items if not is_canary(item) and not selected(item)]
            if dropped:
                session.config.hook.pytest_deselected(items=dropped)
                items[:] = [item for item in items if is_canary(item) or selected(item)]
        if not canary_file or not isfile(canary_file):
            return
        present = {item.name for item in items if is_canary(item)}
        missing = [name for name in canaries if name not in present]
        if missing:
            items.extend(canary_items(session, missing))
        # Canaries run first, so -x / --maxfail cannot stop the session before they ran.
        first = [item for item in items if is_canary(item)]
        rest = [item for item in items if not is_canary(item)]
        items[:] = first + rest

    def collection_finish(session):
        if session is not own["session"]:
            return
        own["held"] = list(session.items)  # held, so no inner session's item takes one's address
        own["items"] = frozenset(map(identity, own["held"]))
        record["collected"] = [item.nodeid for item in session.items]
        record["plugins"] = plugin_files(session.config)
        state["plugins"] = state["pm"].get_plugins()
        known = getattr(state["pm"], "_name2plugin", None)
        state["plugins_tag"] = versions(known) if versions is not None and type(known) is dict else None
        state["hooks"] = hook_functions(state["pm"])
        remember_hooks(state["pm"])
        check_machinery()
        internals_full()
        internals_items(session.items)
        if select is None:
            recoded[0] = not config.get("workspace")
            for item in session.items:
                if not is_canary(item):
                    check_test_function(item)
        for item in session.items:
            kinds = markers_of(item)
            if kinds:
                record["marked"][item.nodeid] = kinds
        watch_test_modules(session.items)
        gate(session.items)
        check_sources(state["pm"], session.items)
        if prepare_varied is not None:
            prepare_varied([item for item in session.items if not is_canary(item)])
        write()

    def markers_of(item):
        # The markers that make an outcome expected: a test carrying none cannot be xfailed or skipped on purpose.
        try:
            names = {mark.name for mark in item.iter_markers()}
            function = getattr(item, "obj", None)
            if getattr(function, "__unittest_expecting_failure__", False):
                names.add("xfail")
            if getattr(function, "__unittest_skip__", False):
                names.add("skip")
        except Exception:  # an odd item: compared with the base like the others
            return ["unknown"]
        found = ["xfail"] if "xfail" in names else []
        return found + (["skip"] if names & {"skip", "skipif"} else [])

    def raiser_of(excinfo):
        # The innermost frame outside pytest and unittest that the skip or xfail came through.
        tb, found = excinfo[2], None
        while tb is not None:
            where = tb.tb_frame.f_code.co_filename
            if not where.startswith(pytest_folders):
                found = where
            tb = tb.tb_next
        return found or "?"

    watch_test_modules, check_namespaces, test_module_spaces = _test_modules(
        record, held, handed_names, startup_modules, is_canary
    )

    def gate(items):
        # After every call, the namespaces each of three checks watches (pytest's machinery, the internals the
        # call goes through, the test modules and their classes) are first looked at together: their version
        # tags (see _dict_versions) in one pass, read before the checks. Unchanged since the last call's, the
        # three have nothing to find. Without tags (another layout) every call runs all three. The namespaces a
        # verdict is decided from are read in the same pass, the first of them those no check watches (pytest
        # writes some between calls, _pytest.assertion.util for each test: they do not count against the three's
        # fast path): any of them written during the call is noted (see _call_writes).
        owners = [
            (
                vars(owner),
                owner.__name__ if isinstance(owner, module_type) else f"{owner.__module__}.{owner.__qualname__}",
            )
            for owner, _label, _names in watched_places
        ]
        spaces = [namespace for namespace, _label in owners + internals_spaces()] + test_module_spaces()
        watched_ids = {identity(underlying(space)) for space in spaces}
        decisive, alone = decisive_spaces(
            items, _pytest.unittest.TestCaseFunction, owners + internals_spaces(), watched_ids
        )
        unique: dict[int, Any] = {}
        for space in decisive + spaces:  # a class's dict once, whichever of its mappingproxies a check holds
            unique.setdefault(identity(underlying(space)), space)
        tags = [versions(space) for space in unique.values()] if versions is not None else [None]
        if None in tags:
            state["gate"] = None
            return
        state["gate"], state["gate_from"] = tuple(tags), alone
        state["gate_seen"] = list_(map_(value_of, tags))[alone:]
        state["gate_spaces"] = tuple(unique.values())  # held, so no other object takes one's address

    def varied_checks():
        # In a varied call's child: the checks made after every call, and the session end's of the standard library.
        compared_test(None)
        if state["gate"] is not None:
            writes_after(list_(map_(value_of, state["gate"])))
        builtins_rebound()
        check_machinery()
        internals_fast()
        check_namespaces()
        for label in standard_rebound():
            note_patched(f"standard library {label}")

    prepare_varied = collect_varied = None
    if varied:
        prepare_varied, collect_varied = _varied_calls(
            varied, (skip_exception, pytest.xfail.Exception), sign, record, varied_checks, relay, pytest.File
        )

    def collect_report(collector, saved=None):
        # Collection runs before the session is known (own["session"]): a collection during one of the run's own
        # calls is an inner session's.
        if collect_varied is None or window[0]:
            return None
        return collect_varied(collector, saved)

    def call_starts(item):
        if identity(item) not in own["items"]:
            return
        window[0] = True
        compared_test(item.nodeid)
        internals_called(item)
        # The machinery is checked after each call (before its report is made) and when the session
        # ends, so a patch made during a call is seen however soon it is undone.
        if select is None and not is_canary(item):
            check_test_function(item, at_call=True)
        writes_start(item)

    numbers = itertools.count()

    def call_ended(item, excinfo):
        if identity(item) not in own["items"]:
            return
        compared_test(None)
        if excinfo is None and getattr(item, "_excinfo", None):
            result = "raised"  # unittest failures are kept on the item, not raised from the call
        elif excinfo is None:
            result = "ok"
        elif isinstance(excinfo[1], skip_exception):
            result = "skipped"
        else:
            result = "raised"
        if excinfo is not None and isinstance(excinfo[1], outcome_exceptions):
            record["raisers"][item.nodeid] = raiser_of(excinfo)
        record["calls"][item.nodeid] = result
        nodeid = item.nodeid  # the line is dumps([number, nodeid, result]), written out: once per test
        entry = f"[{next(numbers)}, {quote(nodeid) if type(nodeid) is str else dumps(nodeid)}, {quote(result)}]"
        signature = sign(entry.encode("utf-8")) if sign is not None else ""
        os_write(log, (entry[:-1] + ", " + quote(signature) + "]\n").encode("utf-8"))
        now = list_(map_(value_of, state["gate"])) if state["gate"] is not None else None
        settled = now is not None and now[state["gate_from"] :] == state["gate_seen"]
        if now is not None:
            writes_after(now, settled)
        check_machinery(settled)
        if not settled:
            builtins_rebound()
            internals_fast()
            check_namespaces()
            if now is not None:
                state["gate_seen"] = now[state["gate_from"] :]
        window[0] = False

    def session_finish(session, exitstatus):
        if session is not own["session"]:
            return
        record["exitstatus"] = int(exitstatus)
        for label in standard_rebound():
            note_patched(f"standard library {label}")
        builtins_rebound()
        check_machinery()
        internals_full()
        check_namespaces()
        check_sources(state["pm"], ())

    def unconfigure(pytest_config):
        if pytest_config is not own["config"]:
            return
        check_machinery()
        junit = getattr(pytest_config.option, "xmlpath", None)
        if junit and isfile(junit):
            with open(junit, "rb") as handle:
                record["junit_sha256"] = sha256(handle.read()).hexdigest()
        record["finished"] = True
        write()

    def own_reach(reach):
        # The test-evidence run's tracer, for the run's own tests only (an inner session's run inside one's call).
        if reach is None:
            return None
        start, stop = reach
        return (lambda item: start(item) if identity(item) in own["items"] else False), stop

    return (
        configure,
        modify_items,
        collection_finish,
        call_ended,
        session_finish,
        unconfigure,
        call_starts,
        initial_conftests,
        collect_report if collect_varied is not None else None,
        own_reach(reach),
    )
