"""The tables of the tamper scan: which modules, attribute chains, names and literals are suspect, and why.

A chain is a dotted name with its import aliases resolved (``import time as t; t.time`` is ``time.time``;
``getattr(os, '_exit')``, ``os.__dict__['_exit']`` and ``sys.modules['os']._exit`` are ``os._exit``).
Every rule gives a kind and a message; the scan adds the file and the line.
"""

from __future__ import annotations

import builtins

import re2

from gradeflow.models.evidence import TamperKind

__all__ = [
    "BUILTIN_NAMES",
    "CHAINS",
    "CLASS_SPOOF",
    "CODE_RUNNERS",
    "DYNAMIC_EXEC",
    "IMPORTERS",
    "MAIN_ONLY",
    "MODULE_LOOKUPS",
    "Rule",
    "identifier_rule",
    "literal_rules",
    "may_name_suspect_module",
    "module_rule",
    "names_pytest_module",
    "rebind_rule",
    "runner_rule",
]

Rule = tuple[TamperKind, str]
"""A finding's kind and message."""

_PYTEST = "reaches into pytest's machinery"
_EXITS = "exits the process at once, skipping the test runner's own reporting"
_REPLACES = "replaces the process, skipping the test runner's own reporting"
_FRAMES = "reads the call stack (how code reaches the test runner's frames)"
_RUNNER = "looks for the test runner (how code behaves one way under test and another for a real caller)"
_NAMES_RUNNER = "names {}: it " + _RUNNER
_NAMES_CURRENT_TEST = "names {}, pytest's mark of a running test: it " + _RUNNER
_ARGV = "reads the command line (where the report path is) outside a __main__ block"
_LOADS = "loads code from a file by its path, which the scan does not read"
_UNPICKLES = "unpickles data, which calls whatever functions the data names (code the scan cannot read)"
_YAML_CODE = "loads YAML whose python/object tags call any function they name (code the scan cannot read)"
_YAML_UNSAFE = (
    *("yaml.unsafe_load", "yaml.unsafe_load_all", "yaml.UnsafeLoader", "yaml.CUnsafeLoader"),
    *("yaml.Loader", "yaml.CLoader", "yaml.UnsafeConstructor", "yaml.Constructor"),
)
_RUNS_SOURCE = "runs Python source it is given as a string, which the scan cannot read"
_UNPICKLERS = (
    *(f"{module}.{name}" for module in ("pickle", "_pickle") for name in ("load", "loads", "Unpickler")),
    *("shelve.open", "dill.load", "dill.loads", "cloudpickle.load", "cloudpickle.loads", "joblib.load"),
    "pandas.read_pickle",
)

_MODULES: dict[str, Rule] = {
    "pytest": ("pytest-internals", f"imports pytest in code under test, which {_PYTEST}"),
    "_pytest": ("pytest-internals", f"imports pytest's internals, which {_PYTEST}"),
    "pluggy": ("pytest-internals", "imports pluggy, pytest's plugin system"),
    "xdist": ("pytest-internals", "imports pytest-xdist, a pytest plugin"),
    "atexit": ("atexit", "imports atexit: code that runs after the tests can rewrite their report"),
    "ctypes": ("ctypes", "imports ctypes, which can change the interpreter's memory"),
    "_ctypes": ("ctypes", "imports _ctypes, which can change the interpreter's memory"),
    "cffi": ("ctypes", "imports cffi, which can change the interpreter's memory"),
    "sitecustomize": ("startup-hook", "imports sitecustomize, which runs at interpreter start"),
    "usercustomize": ("startup-hook", "imports usercustomize, which runs at interpreter start"),
}

CHAINS: dict[str, Rule] = {
    "types.CodeType": ("function-internals", "builds a code object (how a function's code is swapped in place)"),
    "types.CellType": ("function-internals", "builds a closure cell (how a function's state is swapped)"),
    "gc.get_objects": ("gc-objects", "walks every live object (how code finds pytest's Config)"),
    "gc.get_referrers": ("gc-objects", "walks the objects referring to another (how code finds pytest's Config)"),
    "gc.get_referents": ("gc-objects", "walks the objects another refers to"),
    "gc.callbacks": ("gc-objects", "hooks the garbage collector"),
    "object.__subclasses__": ("gc-objects", "walks every class (how code finds pytest's classes)"),
    "sys.settrace": ("settrace", "installs a trace function that sees every frame of the test run"),
    "sys.setprofile": ("settrace", "installs a profile function that sees every call of the test run"),
    "threading.settrace": ("settrace", "installs a trace function in every thread"),
    "threading.setprofile": ("settrace", "installs a profile function in every thread"),
    "threading.settrace_all_threads": ("settrace", "installs a trace function in every thread"),
    "threading.setprofile_all_threads": ("settrace", "installs a profile function in every thread"),
    "sys.monitoring": ("settrace", "uses sys.monitoring, which sees every call of the test run"),
    "sys.addaudithook": ("settrace", "installs an audit hook that sees every file the test run opens"),
    "sys._getframe": ("frame-walk", _FRAMES),
    "sys._current_frames": ("frame-walk", "reads every thread's call stack"),
    "inspect.currentframe": ("frame-walk", _FRAMES),
    "inspect.stack": ("frame-walk", _FRAMES),
    "inspect.getouterframes": ("frame-walk", "reads the calling frames"),
    "traceback.walk_stack": ("frame-walk", _FRAMES),
    **{f"traceback.{name}": ("frame-walk", _FRAMES) for name in ("extract_stack", "format_stack", "print_stack")},
    "traceback.StackSummary.extract": ("frame-walk", _FRAMES),
    "inspect.trace": ("frame-walk", "reads the frames an exception passed through"),
    "inspect.getinnerframes": ("frame-walk", "reads the frames an exception passed through"),
    "sys._getframemodulename": ("frame-walk", "reads the module of a calling frame"),
    # faulthandler writes every thread's call stack (each frame's file and function) to a file or pipe the code
    # reads back, now or on a signal it sends itself: a stack read no frame attribute or audit event shows
    # (``enable`` alone dumps only as the process dies: honest code calls it, and nothing is left to read it).
    **{
        f"faulthandler.{name}": ("frame-walk", "writes the call stack out, to be read back")
        for name in ("dump_traceback", "register")  # dump_traceback_later: an os-exit finding below
    },
    "atexit.register": ("atexit", "registers code that runs after the tests, when it can rewrite their report"),
    "atexit._run_exitfuncs": ("atexit", "runs the exit handlers by hand"),
    "threading._register_atexit": ("atexit", "registers code that runs after the tests"),
    "weakref.finalize": ("atexit", "registers a finalizer, which also runs at interpreter exit"),
    "signal.signal": ("atexit", "installs a signal handler (code that runs when the process is signalled)"),
    "signal.setitimer": ("atexit", "arms a timer signal (code that runs later, out of the tests' flow)"),
    "os._exit": ("os-exit", _EXITS),
    "posix._exit": ("os-exit", _EXITS),
    "nt._exit": ("os-exit", _EXITS),
    "os.abort": ("os-exit", _EXITS),
    "signal.raise_signal": ("os-exit", "signals its own process, skipping the test runner's own reporting"),
    "signal.pthread_kill": ("os-exit", "signals its own process, skipping the test runner's own reporting"),
    "faulthandler.dump_traceback_later": ("os-exit", "arms a timer that can exit the process later"),
    **{f"os.{name}": ("os-exit", _REPLACES) for name in ("execl", "execle", "execlp", "execlpe")},
    **{f"os.{name}": ("os-exit", _REPLACES) for name in ("execv", "execve", "execvp", "execvpe")},
    "sys.argv": ("argv-read", _ARGV),
    "sys.orig_argv": ("argv-read", _ARGV),
    "sys.meta_path": ("import-hook", "changes the import machinery, which can rewrite any module on import"),
    "sys.path_hooks": ("import-hook", "changes the import machinery, which can rewrite any module on import"),
    "site.addsitedir": ("startup-hook", "adds a site folder, whose .pth files run code"),
    "site.getsitepackages": ("startup-hook", "finds site-packages, where a .pth file or sitecustomize runs at start"),
    "site.getusersitepackages": ("startup-hook", "finds the user site folder, where a .pth file runs at start"),
    "site.USER_SITE": ("startup-hook", "names the user site folder, where a .pth file runs at start"),
    "importlib.metadata.Distribution": ("entry-points", "builds packaging metadata, which can declare plugins"),
    "importlib.metadata.DistributionFinder": ("entry-points", "adds a finder of packaging metadata"),
    "importlib.metadata.MetadataPathFinder": ("entry-points", "adds a finder of packaging metadata"),
    "importlib.metadata.PathDistribution": ("entry-points", "builds packaging metadata, which can declare plugins"),
    "importlib.machinery.SourceFileLoader": ("dynamic-exec", _LOADS),
    "importlib.machinery.SourcelessFileLoader": ("dynamic-exec", _LOADS),
    "importlib.machinery.ExtensionFileLoader": ("dynamic-exec", _LOADS),
    "importlib.util.spec_from_file_location": ("dynamic-exec", _LOADS),
    "runpy.run_path": ("dynamic-exec", "runs a file as a script, which the scan does not follow"),
    "zipimport.zipimporter": ("dynamic-exec", "imports code from an archive, which the scan does not read"),
    "runpy.run_module": ("dynamic-exec", "runs a module as a script, main block included"),
    "marshal.loads": ("dynamic-exec", "loads a code object, which runs without a source the scan can read"),
    "marshal.load": ("dynamic-exec", "loads a code object, which runs without a source the scan can read"),
    **{chain: ("dynamic-exec", _UNPICKLES) for chain in _UNPICKLERS},
    **{chain: ("dynamic-exec", _YAML_CODE) for chain in _YAML_UNSAFE},
    **{f"code.{name}": ("dynamic-exec", _RUNS_SOURCE) for name in ("InteractiveInterpreter", "InteractiveConsole")},
    "code.interact": ("dynamic-exec", _RUNS_SOURCE),
    "trace.Trace": ("dynamic-exec", "traces code it runs from a string (Trace.run), which the scan cannot read"),
    "logging.config.fileConfig": ("dynamic-exec", "reads a logging file whose handler arguments are run with eval"),
    "logging.config.listen": ("dynamic-exec", "takes logging configuration (code, with fileConfig) from a socket"),
    "pytest.hookimpl": ("pytest-internals", "marks a pytest hook implementation"),
    "pytest.hookspec": ("pytest-internals", "marks a pytest hook specification"),
}

MAIN_ONLY = frozenset({"sys.argv", "sys.orig_argv", "signal.signal", "signal.setitimer"})
"""Chains that a script's ``if __name__ == "__main__":`` block (or a ``__main__.py``) may use."""

DYNAMIC_EXEC = frozenset({"exec", "eval", "compile"})
"""Builtins that run code given as a value; a literal (or a string folded from literals) is scanned instead."""

CODE_RUNNERS: dict[str, tuple[tuple[int, str], ...]] = {
    **{f"timeit.{name}": ((0, "stmt"), (1, "setup")) for name in ("timeit", "repeat", "Timer")},
    **{f"{module}.{name}": ((0, "statement"),) for module in ("cProfile", "profile") for name in ("run", "runctx")},
    **{f"pdb.{name}": ((0, "statement"),) for name in ("run", "runctx")},
    "pdb.runeval": ((0, "expression"),),
    "codeop.compile_command": ((0, "source"),),
    "code.compile_command": ((0, "source"),),
}
"""Standard functions that compile and run code given as a string: (position, keyword) of each such argument.
Checked like ``exec``'s (a literal is scanned; a lambda or a function of the module passed to timeit is fine)."""

IMPORTERS = frozenset(
    {"__import__", "importlib.import_module", "importlib.__import__", "pkgutil.resolve_name", "pydoc.locate"}
)
"""Calls that import the module their first argument names: a literal is checked like an ``import``, a
computed name whose known prefix could still be a suspect module is a finding."""

MODULE_LOOKUPS = frozenset({"importlib.util.find_spec", "pkgutil.get_loader", "pkgutil.find_loader"})
"""Calls whose literal first argument names a module, checked like an ``import`` (a computed one is not)."""

BUILTIN_NAMES = frozenset({*dir(builtins), "__builtins__", "__builtin__"})
"""Names a module can use without importing them; any other unbound name is taken for a local variable."""

_CLOCK_CHAINS = frozenset({"datetime.datetime", "datetime.date", "timeit.default_timer"})
_CLOCK_NAMES = frozenset({"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time"})
_HOOKS = frozenset({"sys.excepthook", "sys.unraisablehook", "sys.breakpointhook", "threading.excepthook"})
_WARNING_HOOKS = frozenset({"warnings.showwarning", "warnings.formatwarning", "warnings._showwarnmsg"})


def rebind_rule(chain: str) -> Rule | None:
    """The rule for assigning, deleting or patching ``chain`` (resolved): the clock, builtins, process hooks,
    pytest's own names (``mock.patch('pytest.raises')``)."""
    root, _, rest = chain.partition(".")
    if root == "time" or chain in _CLOCK_CHAINS or (rest and chain.rsplit(".", 1)[1] in _CLOCK_NAMES):
        return "time-rebind", f"rebinds the clock ({chain}), which the test runner reads"
    if root == "builtins":
        return "builtins-rebind", f"rebinds a builtin ({chain}) for every module of the run"
    if chain in _HOOKS:
        return "settrace", f"replaces {chain}, a process hook that runs outside the tests' own flow"
    if chain in _WARNING_HOOKS:
        return "runner-detection", f"replaces {chain}, which is handed the file that called (a test's): it {_RUNNER}"
    if names_pytest_module(chain):
        return "pytest-internals", f"replaces {chain}, which the tests call to check an outcome ({_PYTEST})"
    return None


_IDENTIFIERS: dict[str, Rule] = {
    name: ("pytest-internals", f"names pytest's {name}, which {_PYTEST}")
    for name in ("pluginmanager", "PytestPluginManager", "pytest_plugins", "LogXML")
}
"""pluggy's own names (``hookimpl``, ``HookimplMarker``) are left out: a project on pluggy uses them for its
own plugins, and ``import pluggy`` is itself a finding."""

_ATTRIBUTES: dict[str, Rule] = {
    "f_back": ("frame-walk", "climbs the call stack (how code reaches the test runner's frames)"),
    "f_locals": ("frame-walk", "reads another frame's variables"),
    "cmdline": ("argv-read", "reads a process's command line (where the report path is)"),
    "__closure__": ("function-internals", "reaches into a function's closure (where a plugin keeps its state)"),
    "cell_contents": ("function-internals", "reads or rewrites a closure cell (where a plugin keeps its state)"),
    "__defaults__": ("function-internals", "reaches into a function's default arguments"),
    "__kwdefaults__": ("function-internals", "reaches into a function's default arguments"),
    "f_globals": ("frame-walk", "reads another frame's module (which file called: a test's?)"),
    "tb_frame": ("frame-walk", "takes a frame from a traceback (how code reaches its callers' frames)"),
    **{name: ("frame-walk", "takes a generator's frame") for name in ("gi_frame", "cr_frame", "ag_frame")},
}
"""Attribute names that are suspect only as attributes (a variable called ``cmdline`` is fine)."""

CLASS_SPOOF: Rule = (
    "class-spoof",
    "defines __class__ for its objects: isinstance (pytest.raises, pytest.warns, assertIsInstance) then believes "
    "a class the object is not an instance of",
)
"""A ``def __class__`` or a ``__class__ =`` in a class body, or ``"__class__"`` named as a string (``setattr``, a
``type()`` namespace). Reading ``obj.__class__`` is no finding."""

_LITERALS: list[tuple[re2._Regexp, TamperKind, str]] = [
    (re2.compile(r"^__class__$"), "class-spoof", "names {} (how an object claims a class isinstance then believes)"),
    (re2.compile(r"\bpytest_[A-Za-z]\w*"), "pytest-internals", "names the pytest hook {}"),
    (re2.compile(r"\b(?:pluginmanager|hookimpl|hookspec|_pytest|LogXML)\b"), "pytest-internals", "names pytest's {}"),
    (re2.compile(r"\bconftest\b"), "pytest-internals", "names {}, the file pytest loads as a plugin"),
    (re2.compile(r"\bPYTEST_[A-Z_]+"), "pytest-internals", "names pytest's environment variable {}"),
    (re2.compile(r"(?i)junit"), "report-path", "names the JUnit report ({})"),
    (re2.compile(r"(?i)[*?]\S*\.xml\z"), "report-path", "is a pattern of XML files ({}), as reports are"),
    (re2.compile(r"pytest11"), "entry-points", "names the {} entry-point group, which pytest loads plugins from"),
    (re2.compile(r"\b(?:site|user)customize\b"), "startup-hook", "names {}, which runs at interpreter start"),
    (re2.compile(r"\.pth\z"), "startup-hook", "names a {} file, whose import lines run at interpreter start"),
    (re2.compile(r"/cmdline\b"), "argv-read", "reads a process's command line ({})"),
    (re2.compile(r"\A(?:_?pytest|py\.test|PYTEST|unittest|xdist)[._]?\z"), "runner-detection", _NAMES_RUNNER),
    (re2.compile(r"(?i)current_?test"), "runner-detection", _NAMES_CURRENT_TEST),
]
"""Patterns over a literal's text, on re2: linear in the text, so no literal makes the scan slow (Python's
engine took quadratic time on ``[*?]\\S*\\.xml`` over a million ``*``). re2's ``\\b`` and ``\\w`` are ASCII."""

_PYTEST_MODULE = re2.compile(r"\A(?:_?pytest|pluggy|xdist)(?:\.|\z)|\Apytest_\w|junitxml")


def module_rule(module: str) -> Rule | None:
    """The rule for importing ``module`` (``_pytest.junitxml`` falls under ``_pytest``), if any."""
    root = module.split(".", 1)[0]
    if root.startswith("pytest_"):
        return "pytest-internals", f"imports the pytest plugin {root}, which {_PYTEST}"
    return _MODULES.get(root)


def may_name_suspect_module(prefix: str) -> bool:
    """Whether a module name known only to start with ``prefix`` could be one :func:`module_rule` flags."""
    if prefix.startswith("."):
        return False  # a relative import stays inside the package
    root, dot, _ = prefix.partition(".")
    if dot:
        return module_rule(root) is not None
    return any(name.startswith(root) for name in (*_MODULES, "pytest_")) or root.startswith("pytest_")


def identifier_rule(name: str, attribute: bool = False) -> Rule | None:
    """The rule for a def, a name or (``attribute``) an attribute called ``name``: pytest's hooks, frame walking."""
    if name.startswith("pytest_"):
        return "pytest-internals", f"names the pytest hook {name}, which {_PYTEST}"
    return _IDENTIFIERS.get(name) or (_ATTRIBUTES.get(name) if attribute else None)


def literal_rules(text: str) -> list[tuple[TamperKind, str, str]]:
    """(kind, detail, message) for each suspect token of a string literal (hook names, report, loaders)."""
    found: dict[tuple[TamperKind, str], str] = {}
    for pattern, kind, message in _LITERALS:
        for match in pattern.finditer(text):
            token = match.group(0).lower() if kind == "report-path" else match.group(0)
            found.setdefault((kind, token[:80]), message.format(repr(token[:80])))
    return [(kind, detail, message) for (kind, detail), message in found.items()]


def runner_rule(what: str) -> Rule:
    """The rule for code that looks for the test runner in a way no single name shows: ``what`` it does."""
    return "runner-detection", f"{what}: it {_RUNNER}"


def names_pytest_module(name: str) -> bool:
    """Whether a module key (of ``sys.modules``, say) is pytest's, pluggy's, a pytest plugin's or the JUnit writer's."""
    return bool(_PYTEST_MODULE.search(name))
