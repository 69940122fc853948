"""The tamper scan: one row per rule that must flag, rows of ordinary code that must not, the base comparison."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from builders import make_task
from gradeflow.integrity.files import MAX_READ_BYTES
from gradeflow.integrity.tamper_scan import added_findings, scan_file, startup_imports
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import TamperEvidence, TamperFinding, TestRunEvidence
from gradeflow.tasks._git import git, init_snapshot_repo
from gradeflow.tasks._patching import added_lines, changed_files, graded_patch
from gradeflow.tasks.baseline import Baseline, pack_tests
from gradeflow.tasks.repo import BaseRef
from gradeflow.tasks.snapshot import Snapshot
from gradeflow.tasks.tamper_scan import check_tamper, scan_snapshot

TASK = TaskSpec.model_validate(make_task())

# Each row: a minimal snippet of a non-test module and the kind it must be flagged with.
FLAGGED: list[tuple[str, str, str]] = [
    ("closure-cell", "def f(g):\n    g.__closure__[0].cell_contents = None", "function-internals"),
    ("closure-getattr", "def f(g):\n    return getattr(g, '__closure__')", "function-internals"),
    ("defaults", "def f(g):\n    return g.__defaults__[0]", "function-internals"),
    ("code-swap", "def f(g, h):\n    g.__code__ = h.__code__", "function-internals"),
    (
        "code-replace",
        "def f(g, h):\n    return g.__code__.replace(co_filename='tests/test_x.py')",
        "function-internals",
    ),
    ("code-type", "import types\nCode = types.CodeType", "function-internals"),
    # an object that claims a class it is not an instance of (isinstance, so pytest.raises, believes it)
    (
        "class-property",
        "class E(ValueError):\n    @property\n    def __class__(self):\n        return KeyError",
        "class-spoof",
    ),
    ("class-assigned", "class E(ValueError):\n    __class__ = property(lambda self: KeyError)", "class-spoof"),
    (
        "class-setattr",
        "class E(ValueError):\n    pass\nsetattr(E, '__class__', property(lambda s: KeyError))",
        "class-spoof",
    ),
    ("class-namespace", "E = type('E', (ValueError,), {'__class__': property(lambda s: KeyError)})", "class-spoof"),
    # pytest and its internals, however they are reached
    ("import", "import pytest", "pytest-internals"),
    ("import-as", "import pytest as p", "pytest-internals"),
    ("from-internals", "from _pytest import runner", "pytest-internals"),
    ("junitxml", "from _pytest.junitxml import LogXML", "pytest-internals"),
    ("pluggy", "import pluggy", "pytest-internals"),
    ("plugin-module", "import pytest_timeout", "pytest-internals"),
    ("dunder-import", "__import__('_pytest.runner')", "pytest-internals"),
    ("import-module", "import importlib\nimportlib.import_module('pytest')", "pytest-internals"),
    ("import-module-alias", "from importlib import import_module as im\nim('_pytest.junitxml')", "pytest-internals"),
    ("folded-name", "import importlib\nimportlib.import_module('py' + 'test')", "pytest-internals"),
    ("joined-name", "import importlib\nimportlib.import_module(''.join(['_py', 'test']))", "pytest-internals"),
    ("reversed-name", "import importlib\nimportlib.import_module('tsetyp'[::-1])", "pytest-internals"),
    ("find-spec", "import importlib.util\nimportlib.util.find_spec('pytest')", "pytest-internals"),
    ("getattr-import", "import builtins\ngetattr(builtins, '__import__')('pytest')", "pytest-internals"),
    ("sys-modules", "import sys\nsys.modules['pytest']", "pytest-internals"),
    ("sys-modules-get", "import sys\nsys.modules.get('_pytest.junitxml')", "pytest-internals"),
    ("sys-modules-in", "import sys\nif 'pytest' in sys.modules:\n    pass", "pytest-internals"),
    ("modules-alias", "from sys import modules\nmodules['_pytest.runner']", "pytest-internals"),
    ("hook-def", "def pytest_runtest_makereport(item, call):\n    pass", "pytest-internals"),
    ("hook-method", "class Plugin:\n    def pytest_sessionfinish(self, session):\n        pass", "pytest-internals"),
    ("pluginmanager", "def f(config):\n    return config.pluginmanager", "pytest-internals"),
    ("pytest-plugins", "pytest_plugins = ['evil']", "pytest-internals"),
    ("hook-name-literal", "HOOK = 'pytest_sessionfinish'", "pytest-internals"),
    ("env-variable", "import os\nos.environ.get('PYTEST_ADDOPTS')", "pytest-internals"),
    ("conftest-literal", "NAME = 'conftest.py'", "pytest-internals"),
    ("literal-exec", "exec('import pytest')", "pytest-internals"),
    ("folded-literal", "NAME = '_py' + 'test'", "pytest-internals"),
    # code the scan cannot see into
    ("exec", "exec(code)", "dynamic-exec"),
    ("eval", "eval(expression)", "dynamic-exec"),
    ("compile", "compile(source, 'x', 'exec')", "dynamic-exec"),
    ("builtins-exec", "import builtins\nbuiltins.exec(code)", "dynamic-exec"),
    ("getattr-eval", "import builtins\ngetattr(builtins, 'eval')(code)", "dynamic-exec"),
    ("dict-exec", "__builtins__['exec'](code)", "dynamic-exec"),
    ("computed-import", "import importlib\nimportlib.import_module(name)", "dynamic-exec"),
    (
        "encoded-import",
        "import codecs, importlib\nimportlib.import_module(codecs.decode('_clgrfg', 'rot13'))",
        "pytest-internals",  # decoded by the scan: _pytest
    ),
    ("computed-dunder-import", "__import__(name)", "dynamic-exec"),
    ("run-path", "import runpy\nrunpy.run_path('x.txt')", "dynamic-exec"),
    ("marshal", "import marshal\nmarshal.loads(data)", "dynamic-exec"),
    ("zipimport", "import zipimport\nzipimport.zipimporter('lib.zip').load_module('m')", "dynamic-exec"),
    ("file-loader", "import importlib.machinery\nimportlib.machinery.SourceFileLoader('m', 'm.txt')", "dynamic-exec"),
    ("spec-from-file", "import importlib.util\nimportlib.util.spec_from_file_location('m', 'm.txt')", "dynamic-exec"),
    # every live object, every class
    ("gc-objects", "import gc\ngc.get_objects()", "gc-objects"),
    ("gc-alias", "from gc import get_objects as g\ng()", "gc-objects"),
    ("gc-referrers", "import gc\ngc.get_referrers(x)", "gc-objects"),
    ("gc-getattr", "import gc\ngetattr(gc, 'get_objects')()", "gc-objects"),
    ("subclasses", "object.__subclasses__()", "gc-objects"),
    # tracing and process hooks
    ("settrace", "import sys\nsys.settrace(tracer)", "settrace"),
    ("setprofile", "import sys as s\ns.setprofile(tracer)", "settrace"),
    ("thread-settrace", "import threading\nthreading.settrace(tracer)", "settrace"),
    ("audit-hook", "import sys\nsys.addaudithook(hook)", "settrace"),
    ("monitoring", "import sys\nsys.monitoring.use_tool_id(1, 'x')", "settrace"),
    ("excepthook", "import sys\nsys.excepthook = hook", "settrace"),
    ("thread-excepthook", "import threading\nthreading.excepthook = hook", "settrace"),
    # frames
    ("getframe", "import sys\nsys._getframe(1)", "frame-walk"),
    ("f-back", "def f(frame):\n    return frame.f_back", "frame-walk"),
    ("inspect-stack", "import inspect\ninspect.stack()", "frame-walk"),
    ("walk-stack", "import traceback\ntraceback.walk_stack(None)", "frame-walk"),
    ("extract-stack", "import traceback\nwho = traceback.extract_stack()[-3].filename", "frame-walk"),
    # The stack as text through a pipe: " in test_" in it, and no frame was touched.
    ("faulthandler-dump", "import faulthandler, os\nr, w = os.pipe()\nfaulthandler.dump_traceback(w)\n", "frame-walk"),
    ("faulthandler-alias", "from faulthandler import register as r\nimport signal\nr(signal.SIGUSR1, f)", "frame-walk"),
    ("stack-summary", "import traceback\ntraceback.StackSummary.extract(traceback.walk_stack(None))", "frame-walk"),
    ("inspect-trace", "import inspect\nframes = inspect.trace()", "frame-walk"),
    ("frame-globals", "def f(frame):\n    return frame.f_globals['__file__']", "frame-walk"),
    (
        "traceback-frame",
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f = e.__traceback__.tb_frame",
        "frame-walk",
    ),
    ("generator-frame", "def f(gen):\n    return gen.gi_frame", "frame-walk"),
    ("getframe-concatenated", "import sys\ngetattr(sys, '_get' + 'frame')(2)", "frame-walk"),
    (
        "getframe-chr",
        "import sys\ngetattr(sys, ''.join(map(chr, [95, 103, 101, 116, 102, 114, 97, 109, 101])))",
        "frame-walk",
    ),
    (
        "f-back-bytes",
        "def f(frame):\n    return getattr(frame, bytes([102, 95, 98, 97, 99, 107]).decode())",
        "frame-walk",
    ),
    # code that notices it is under test (and behaves otherwise for a real caller)
    ("runner-name", "import sys\nUNDER_TEST = any('pytest' in name for name in sys.modules)", "runner-detection"),
    (
        "modules-walk",
        "import sys\nfound = [m for m in sys.modules.values() if hasattr(m, 'raises')]",
        "runner-detection",
    ),
    ("modules-list", "import sys\nfor name in list(sys.modules):\n    pass", "runner-detection"),
    ("runner-name-reversed", "NAME = 'tsetyp'[::-1]", "runner-detection"),
    ("runner-name-chr", "NAME = chr(112) + chr(121) + 'test'", "runner-detection"),
    ("runner-name-generator", "NAME = ''.join(chr(c) for c in [112, 121, 116, 101, 115, 116])", "runner-detection"),
    ("runner-name-hex", "NAME = bytes.fromhex('707974657374').decode()", "runner-detection"),
    ("runner-name-base64", "import base64\nNAME = base64.b64decode('cHl0ZXN0').decode()", "runner-detection"),
    ("runner-name-rot13", "import codecs\nNAME = codecs.decode('clgrfg', 'rot13')", "runner-detection"),
    ("unittest-name", "import sys\nUNDER_TEST = 'unittest' in sys.modules", "runner-detection"),
    ("environment-walk", "import os\nT = any(k.endswith('_TEST') for k in os.environ)", "runner-detection"),
    (
        "environment-items",
        "import os\nT = [k for k, v in os.environ.items() if 'CURR' + 'ENT' in k]",
        "runner-detection",
    ),
    (
        "current-test-pieces",
        "import os\nT = [k for k in dict(os.environ) if k.endswith('CURRENT_' + 'TEST')]",
        "runner-detection",
    ),
    ("main-module", "import sys\nRUNNER = sys.modules['__main__'].__file__", "runner-detection"),
    ("getattr-sys-computed", "import sys\nthing = getattr(sys, name)", "runner-detection"),
    (
        "warnings-record",
        "import warnings\nwith warnings.catch_warnings(record=True) as seen:\n    pass",
        "runner-detection",
    ),
    ("showwarning", "import warnings\nwarnings.showwarning = spy", "runner-detection"),
    # code that runs later
    ("import-atexit", "import atexit", "atexit"),
    ("atexit-alias", "from atexit import register as later\nlater(print)", "atexit"),
    ("atexit-module-alias", "import atexit as a\na.register(print)", "atexit"),
    ("finalize", "import weakref\nweakref.finalize(obj, print)", "atexit"),
    ("signal-handler", "import signal\nsignal.signal(signal.SIGTERM, handler)", "atexit"),
    # leaving before the runner reports
    ("os-exit", "import os\nos._exit(0)", "os-exit"),
    ("os-exit-alias", "from os import _exit as bye\nbye(0)", "os-exit"),
    ("os-module-alias", "import os as o\no._exit(0)", "os-exit"),
    ("os-dict", "import os\nos.__dict__['_exit'](0)", "os-exit"),
    ("vars-os", "import os\nvars(os)['_exit'](0)", "os-exit"),
    ("getattr-os", "import os\ngetattr(os, '_exit')(0)", "os-exit"),
    ("sys-modules-os", "import sys\nsys.modules['os']._exit(0)", "os-exit"),
    ("dunder-import-os", "__import__('os')._exit(0)", "os-exit"),
    ("assigned-module", "import importlib\no = importlib.import_module('os')\no._exit(0)", "os-exit"),
    ("posix-exit", "import posix\nposix._exit(0)", "os-exit"),
    ("kill-self", "import os\nos.kill(os.getpid(), 9)", "os-exit"),
    ("exec-process", "import os\nos.execv('/bin/true', ['true'])", "os-exit"),
    ("abort", "import os\nos.abort()", "os-exit"),
    ("faulthandler", "import faulthandler\nfaulthandler.dump_traceback_later(5, exit=True)", "os-exit"),
    # the command line, where the report path is
    ("argv", "import sys\nPATH = sys.argv[-1]", "argv-read"),
    ("argv-alias", "from sys import argv\ndef f():\n    return argv", "argv-read"),
    ("argv-getattr", "import sys\ngetattr(sys, 'argv')", "argv-read"),
    ("orig-argv", "import sys\nsys.orig_argv", "argv-read"),
    (
        "argv-in-function",
        "import sys\ndef main():\n    return sys.argv[1:]\nif __name__ == '__main__':\n    main()",
        "argv-read",
    ),
    ("argv-write", "import sys\nopen(sys.argv[-1], 'w')", "argv-read"),
    ("proc-cmdline", "open('/proc/self/cmdline')", "argv-read"),
    ("psutil-cmdline", "import psutil\npsutil.Process().cmdline()", "argv-read"),
    ("parse-known", "import argparse\nargparse.ArgumentParser().parse_known_args()", "argv-read"),
    ("renamed-main", "import sys\n__name__ = '__main__'\nif __name__ == '__main__':\n    sys.argv", "argv-read"),
    ("main-module-import", "from pkg import __main__", "argv-read"),
    # native code
    ("ctypes", "import ctypes", "ctypes"),
    ("from-ctypes", "from ctypes import pythonapi", "ctypes"),
    ("dunder-ctypes", "__import__('ctypes')", "ctypes"),
    ("cffi", "import cffi", "ctypes"),
    # plugins declared through packaging metadata
    ("pytest11-literal", "GROUP = 'pytest11'", "entry-points"),
    ("distribution", "import importlib.metadata\nclass D(importlib.metadata.Distribution):\n    pass", "entry-points"),
    # code run at interpreter start
    ("import-sitecustomize", "import sitecustomize", "startup-hook"),
    ("sitecustomize-literal", "NAME = 'sitecustomize'", "startup-hook"),
    ("pth-literal", "open(os.path.join(site_dir, 'evil.pth'), 'w')", "startup-hook"),
    ("addsitedir", "import site\nsite.addsitedir(folder)", "startup-hook"),
    ("site-packages", "import site\nsite.getsitepackages()", "startup-hook"),
    # the import machinery
    ("meta-path", "import sys\nsys.meta_path.insert(0, finder)", "import-hook"),
    ("path-hooks", "import sys\nsys.path_hooks.append(hook)", "import-hook"),
    # the clock
    ("time-assign", "import time\ntime.time = lambda: 0", "time-rebind"),
    ("time-alias", "import time as t\nt.perf_counter = fake", "time-rebind"),
    ("setattr-time", "import time\nsetattr(time, 'perf_counter', fake)", "time-rebind"),
    ("mock-patch", "from unittest import mock\nmock.patch('time.time', fake)", "time-rebind"),
    # pytest.raises made a no-op: the zero-division tests pass and nothing the harness watches changed
    ("mock-patch-raises", "from unittest import mock\nmock.patch('pytest.raises', fake).start()", "pytest-internals"),
    ("mock-patch-computed", "from unittest import mock\nmock.patch(name(), fake).start()", "dynamic-exec"),
    ("resolve-name", "import pkgutil\npkgutil.resolve_name('pytest:raises')", "pytest-internals"),
    ("resolve-name-computed", "import pkgutil\npkgutil.resolve_name(name())", "dynamic-exec"),
    ("pydoc-locate-computed", "import pydoc\npydoc.locate(name())", "dynamic-exec"),
    # a protocol-0 pickle in a data file calls setattr(import_module('pytest'), 'raises', MagicMock())
    ("pickle-loads", "import pickle\nTABLES = pickle.loads(data)", "dynamic-exec"),
    ("pickle-unpickler", "from pickle import Unpickler\nTABLES = Unpickler(handle).load()", "dynamic-exec"),
    ("shelve", "import shelve\nTABLES = shelve.open('tables')", "dynamic-exec"),
    # code read from a data file and run by a standard function that compiles strings
    ("timeit-computed", "import timeit\ntimeit.timeit(open('warm.txt').read(), number=1)", "dynamic-exec"),
    ("timeit-setup", "import timeit\ntimeit.timeit(stmt='pass', setup=src)", "dynamic-exec"),
    ("timeit-literal", "import timeit\ntimeit.timeit('import atexit')", "atexit"),
    ("cprofile-run", "import cProfile\ncProfile.run(src)", "dynamic-exec"),
    ("interpreter", "import code\ncode.InteractiveInterpreter().runsource(src)", "dynamic-exec"),
    ("logging-file-config", "import logging.config\nlogging.config.fileConfig('logging.ini')", "dynamic-exec"),
    ("yaml-unsafe", "import yaml\nyaml.load(text, Loader=yaml.Loader)", "dynamic-exec"),
    # the module the tests compare with, reached by a name spelled in pieces (then setattr of a computed name)
    ("modules-get-computed", "import sys\nm = sys.modules.get(''.join(parts))", "dynamic-exec"),
    ("modules-key-computed", "import sys\nm = sys.modules[key()]", "dynamic-exec"),
    ("patch-object", "import time\nfrom unittest import mock\nmock.patch.object(time, 'monotonic')", "time-rebind"),
    ("time-dict", "import time\ntime.__dict__['monotonic'] = fake", "time-rebind"),
    ("vars-time", "import time\nvars(time)['time'] = fake", "time-rebind"),
    ("time-dict-update", "import time\ntime.__dict__.update(time=fake)", "time-rebind"),
    ("modules-time", "import sys\nsys.modules['time'].time = fake", "time-rebind"),
    ("modules-time-replaced", "import sys\nsys.modules['time'] = fake", "time-rebind"),
    ("imported-time", "t = __import__('time')\nt.time = fake", "time-rebind"),
    ("time-del", "import time\ndel time.sleep", "time-rebind"),
    ("time-dunder-setattr", "import time\ntime.__setattr__('time', fake)", "time-rebind"),
    ("time-for-target", "import time\nfor time.time in [fake]:\n    pass", "time-rebind"),
    ("timeit", "import timeit\ntimeit.default_timer = fake", "time-rebind"),
    ("perf-counter-anywhere", "import mylib\nmylib.clock.perf_counter = fake", "time-rebind"),
    ("datetime", "import datetime\ndatetime.datetime = Frozen", "time-rebind"),
    # builtins for every module
    ("builtins-assign", "import builtins\nbuiltins.open = fake", "builtins-rebind"),
    ("builtins-alias", "import builtins as b\nb.print = fake", "builtins-rebind"),
    ("dunder-builtins", "__builtins__['print'] = fake", "builtins-rebind"),
    ("globals-builtins", "globals()['__builtins__']['open'] = fake", "builtins-rebind"),
    ("setattr-builtins", "import builtins\nsetattr(builtins, 'open', fake)", "builtins-rebind"),
    ("builtins-update", "import builtins\nbuiltins.__dict__.update(open=fake)", "builtins-rebind"),
    ("builtins-import-hook", "import builtins\nbuiltins.__import__ = hook", "builtins-rebind"),
    # the report file
    ("xml-open", "open('report.xml', 'w')", "report-path"),
    ("xml-path", "from pathlib import Path\nPath('out.xml').write_text(text)", "report-path"),
    ("xml-joined", "import os\nopen(os.path.join(folder, 'r.xml'), 'wb')", "report-path"),
    ("xml-copy", "import shutil\nshutil.copy(src, 'result.xml')", "report-path"),
    ("xml-glob", "import glob\nglob.glob('**/*.xml')", "report-path"),
    ("junit-literal", "PATH = '/out/junit.xml'", "report-path"),
]

# Ordinary library code that must not be flagged: a finding rejects the grade.
CLEAN: list[tuple[str, str]] = [
    # a crash handler (dumps only as the process dies) and asking whether one is on
    ("faulthandler-enable", "import faulthandler\nfaulthandler.enable()\nprint(faulthandler.is_enabled())"),
    # reading an object's class, zero-argument super() and a class of the repository's are no spoof
    (
        "class-read",
        "class E(ValueError):\n    def __init__(self, *a):\n        super().__init__(*a)\n"
        "    def name(self):\n        return self.__class__.__name__ + type(self).__qualname__\n"
        "def kind(x):\n    return getattr(x, 'kind', x.__class__)",
    ),
    (
        "library-module",
        '"""A module about pytest_configure, junit reports and sitecustomize."""\n'
        "import dataclasses\nimport logging\nimport typing\n\nlog = logging.getLogger(__name__)\n\n"
        "@dataclasses.dataclass\nclass Point:\n    x: typing.Any = None\n\n"
        "    def area(self) -> int:\n"
        '        """Mentions pytest and os._exit in a docstring."""\n        return 0\n',
    ),
    ("read-clock", "import time\nstart = time.time()\nelapsed = time.perf_counter() - start"),
    ("clock-function", "from time import perf_counter\nt0 = perf_counter()"),
    ("clock-alias", "import time as _time\n_time.sleep(0.1)"),
    ("main-argv", "import sys\nif __name__ == '__main__':\n    print(sys.argv)"),
    ("main-argv-reversed", "import sys\nif '__main__' == __name__:\n    sys.exit(main(sys.argv[1:]))"),
    ("main-signal", "import signal\nif __name__ == '__main__':\n    signal.signal(signal.SIGINT, handler)"),
    ("main-parse", "import argparse\nif __name__ == '__main__':\n    argparse.ArgumentParser().parse_known_args()"),
    ("parse-given-args", "def main(argv):\n    return parser.parse_known_args(argv)"),
    ("string-mentions-pytest", "MESSAGE = 'run pytest to check'"),
    ("type-string", "def f(config: 'pytest.Config') -> None:\n    pass"),
    ("literal-exec", "exec('x = 1')\nvalue = eval('1 + 1')"),
    ("re-compile", "import re\nPATTERN = re.compile(pattern)"),
    ("compile-method", "class A:\n    def compile(self, x):\n        return x\nA().compile(y)"),
    ("local-named-time", "def f(time):\n    time.value = 3"),
    ("attribute-named-time", "class A:\n    def f(self):\n        self.time = 5"),
    ("environment-write", "import os\nos.environ['TZ'] = 'UTC'"),
    ("sys-exit", "import sys\nsys.exit(main())"),
    ("kill-child", "import os\nos.kill(pid, 15)"),
    ("relative-import", "import importlib\nimportlib.import_module('.' + name, __package__)"),
    ("prefixed-import", "import importlib\nimportlib.import_module(f'encodings.{name}')"),
    ("formatted-relative-import", "import importlib\nimportlib.import_module('.{}'.format(name), __name__)"),
    ("plugin-prefix-import", "import importlib\nimportlib.import_module('myproject_plugin_' + name)"),
    ("own-module", "import sys\nmodule = sys.modules[__name__]"),
    ("subprocess", "import subprocess\nsubprocess.run(['git', 'status'], check=True)"),
    ("read-xml", "open('data.xml')\nimport xml.etree.ElementTree as ET\nET.parse('config.xml')"),
    ("write-json", "import json\nwith open('out.json', 'w') as f:\n    json.dump(x, f)"),
    ("inspect-signature", "import inspect\ninspect.signature(f)"),
    ("gc-collect", "import gc\ngc.collect()"),
    ("weakref", "import weakref\nref = weakref.ref(x)"),
    ("read-builtins", "import builtins\nopen_ = builtins.open\ngetattr(builtins, 'open')"),
    ("datetime-now", "import datetime\nnow = datetime.datetime.now()"),
    ("type-checking", "import typing\nif typing.TYPE_CHECKING:\n    from collections.abc import Iterator"),
    ("setattr-object", "def f(obj):\n    setattr(obj, 'name', 1)\n    object.__setattr__(obj, 'time', 2)"),
    ("patch-own-code", "from unittest import mock\nmock.patch('mypkg.api.fetch')"),
    ("http-patch", "import requests\n\n\ndef update(url, data):\n    return requests.patch(url, json=data)"),
    ("resolve-own-code", "import pkgutil\nhandler = pkgutil.resolve_name('mypkg.handlers:default')"),
    ("own-module", "import sys\nme = sys.modules[__name__]\nhome = sys.modules.get(cls.__module__)"),
    ("timeit-own-function", "import timeit\n\n\ndef f():\n    pass\n\n\nT = timeit.timeit(f, number=3)"),
    ("timeit-lambda-literal", "import timeit\nT = timeit.timeit(lambda: 1, number=3) + timeit.timeit('x = 1')"),
    ("yaml-safe", "import yaml\nCONFIG = yaml.safe_load(text)"),
    ("pickle-dumps", "import pickle\n\n\ndef save(data, handle):\n    pickle.dump(data, handle)"),
    ("module-loaded", "import sys\n\n\ndef loaded(name):\n    return name in sys.modules"),
    ("own-package-module", "import sys\nplugin = sys.modules.get('mypkg.plugins.' + name)"),
    ("http-patch", "import requests\nrequests.patch('https://example.org/time.time')"),
    ("self-dict", "class A:\n    def f(self, **kw):\n        self.__dict__.update(kw)"),
    ("dict-update", "d = {}\nd.update(a=1)\nd['time'] = 2"),
    ("version", "import sys\nprint(sys.version_info)"),
    ("getattr-name", "def name(f):\n    return getattr(f, '__name__', repr(f))"),
    ("format-xml-name", "NAME = '%s.xml' % name"),
    ("module-main-check", "import __main__\nINTERACTIVE = not hasattr(__main__, '__file__')"),
    ("lru-cache", "import functools\n@functools.lru_cache\ndef f():\n    return 1"),
    ("read-code-object", "def arity(f):\n    return f.__code__.co_argcount"),
    ("environment-config", "import os\nCONFIG = {k[6:]: v for k, v in os.environ.items() if k.startswith('MYAPP_')}"),
    ("environment-copy", "import os\nimport subprocess\nsubprocess.run(['x'], env={**os.environ, 'A': '1'})"),
    ("environment-dict", "import os\nenv = dict(os.environ)\nenv.update(LANG='C')"),
    ("warnings-suppressed", "import warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter('ignore')"),
    ("warn-stacklevel", "import warnings\nwarnings.warn('deprecated', DeprecationWarning, stacklevel=2)"),
    ("byte-literal", "MAGIC = bytes([0x89, 0x50, 0x4E, 0x47])\nSEP = chr(10)"),
    ("getattr-sys-literal", "import sys\nFROZEN = getattr(sys, 'frozen', False)"),
    ("traceback-format", "import traceback\n\ndef f(exc):\n    return traceback.format_exception(exc)"),
    (
        "wraps",
        "import functools\ndef deco(f):\n    @functools.wraps(f)\n    def g(*a):\n        return f(*a)\n    return g",
    ),
]


def _kinds(source: str, path: str = "src/pkg/mod.py") -> list[str]:
    found = scan_file(path, source.encode())
    assert found is not None, "the snippet must parse"
    return [f.kind for f in found]


@pytest.mark.parametrize(("source", "kind"), [(s, k) for _, s, k in FLAGGED], ids=[i for i, _, _ in FLAGGED])
def test_flagged(source: str, kind: str) -> None:
    assert kind in _kinds(source)


@pytest.mark.parametrize("source", [s for _, s in CLEAN], ids=[i for i, _ in CLEAN])
def test_not_flagged(source: str) -> None:
    assert scan_file("src/pkg/mod.py", source.encode()) == []


def test_a_finding_names_the_resolved_chain_and_its_line() -> None:
    found = scan_file("src/pkg/mod.py", b"import os\n\nfrom os import _exit as bye\n\nbye(0)\n")
    assert found is not None
    assert [(f.line, f.kind, f.detail) for f in found] == [(3, "os-exit", "os._exit"), (5, "os-exit", "os._exit")]
    assert found[0].path == "src/pkg/mod.py" and "skipping the test runner" in found[0].message


def test_a_whole_main_module_may_read_the_command_line() -> None:
    source = b"import sys\nsys.exit(main(sys.argv[1:]))\n"
    assert scan_file("src/pkg/__main__.py", source) == []
    assert _kinds(source.decode()) == ["argv-read"]


def _nested_exec(levels: int) -> str:
    source = "import ctypes"
    for _ in range(levels):
        source = f"exec({source!r})"
    return source


def test_literal_code_is_scanned_so_deep_and_deeper_code_is_a_finding_itself() -> None:
    assert _kinds(_nested_exec(3)) == ["ctypes"]
    assert _kinds(_nested_exec(6)) == ["dynamic-exec"]


@pytest.mark.parametrize(
    "source",
    [
        "x = " + "(" * 300 + "1" + ")" * 300,  # too deep for Python itself
        "x = " + "+".join(["1"] * 20000),
        "x = " + "-" * 900 + "1",
        "import os\nx = os" + ".a" * 5000,
        "f" + "()" * 3000,
        "x = d" + "['k']" * 3000,
        "import os\nx = " + "getattr(" * 150 + "os" + ", 'a')" * 150,
        "x = " + "+".join(["'a'"] * 2000),
        "x = f'" + "{a}" * 5000 + "'",
        "".join("    " * i + "if x:\n" for i in range(99)) + "    " * 99 + "pass",
    ],
    ids=["parens", "sum", "negations", "attributes", "calls", "subscripts", "getattrs", "strings", "fstring", "ifs"],
)
def test_deeply_nested_expressions_do_not_crash(source: str) -> None:
    # Too deep for the parser is a finding (code that raises the recursion limit first still imports it).
    found = scan_file("src/pkg/mod.py", source.encode())
    assert found is None or {f.kind for f in found} <= {"unscannable"}


def test_a_finding_inside_a_deep_expression_is_still_found() -> None:
    assert "os-exit" in _kinds("import os\nx = " + "(" * 150 + "os._exit" + ")" * 150)


def test_a_syntax_error_is_not_a_finding() -> None:
    assert scan_file("src/pkg/mod.py", b"def broken(:\n    import pytest\n") is None


@pytest.mark.parametrize(
    ("path", "text", "lines"),
    [
        ("src/evil.pth", "# a comment\nimport os; os._exit(0)\n", [2]),
        ("src/paths.pth", "/opt/elsewhere\n", [1]),
        ("pkg.dist-info/entry_points.txt", "[console_scripts]\nx = a:b\n\n[pytest11]\nevil = pkg.evil\n", [4, 5]),
        ("pyproject.toml", '[project]\nname = "x"\n\n[project.entry-points.pytest11]\nevil = "pkg.evil"\n', [4, 5]),
        ("pyproject.toml", '[project.entry-points."pytest11"]\nevil = "pkg.evil"\n', [1, 2]),
        ("pyproject.toml", '[tool.poetry.plugins.pytest11]\nevil = "pkg.evil"\n', [1, 2]),
        ("setup.cfg", "[metadata]\nname = x\n[options.entry_points]\npytest11 =\n    evil = pkg.evil\n", [4, 5]),
        ("setup.py", "setup(entry_points={'pytest11': ['evil = pkg.evil']})\n", [1]),
    ],
    ids=["pth-import", "pth-path", "entry-points", "pyproject", "pyproject-quoted", "poetry", "setup-cfg", "setup-py"],
)
def test_files_that_load_code_without_an_import(path: str, text: str, lines: list[int]) -> None:
    found = scan_file(path, text.encode())
    assert found is not None
    assert [f.line for f in found] == lines
    assert {f.kind for f in found} <= {"startup-hook", "entry-points"}


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("pyproject.toml", '[project]\nname = "x"\n[project.scripts]\nx = "pkg:main"\n[tool.pytest.ini_options]\n'),
        ("setup.cfg", "[metadata]\nname = x\n[options.entry_points]\nconsole_scripts =\n    x = pkg:main\n"),
        ("pkg.dist-info/entry_points.txt", "[console_scripts]\nx = pkg:main\n"),
        ("README.md", "import pytest\n"),
    ],
)
def test_ordinary_packaging_files_are_clean(path: str, text: str) -> None:
    assert scan_file(path, text.encode()) == []


def test_a_startup_file_is_itself_a_finding() -> None:
    found = scan_file("src/sitecustomize.py", b"x = 1\n")
    assert found is not None
    assert [(f.line, f.kind) for f in found] == [(0, "startup-hook")]


@pytest.mark.parametrize("path", ["src/sitecustomize/__init__.py", "usercustomize/__init__.py"])
def test_a_startup_package_is_itself_a_finding(path: str) -> None:
    # site imports the package form too, before pytest and its harness: the same as sitecustomize.py.
    found = scan_file(path, b"x = 1\n")
    assert found is not None
    assert [(f.line, f.kind) for f in found] == [(0, "startup-hook")]
    assert scan_file("src/calc/sitecustomize_helpers/__init__.py", b"x = 1\n") == []


def _finding(line: int, kind: str = "pytest-internals", detail: str = "import pytest") -> TamperFinding:
    return TamperFinding(path="a.py", line=line, kind=kind, detail=detail, message="m")  # type: ignore[arg-type]


def test_added_findings_forgive_the_base_count_lines_not_added_first() -> None:
    base = [_finding(1)]
    candidate = [_finding(1), _finding(9)]
    assert [f.line for f in added_findings(candidate, base, {9})] == [9]
    assert [f.line for f in added_findings(candidate, base, {1})] == [1]  # line 9 moved: line 1 is the new one
    assert added_findings([_finding(3)], base, {3}) == []  # the base's import, moved down
    assert [f.detail for f in added_findings([_finding(1), _finding(2, detail="import _pytest")], base)] == [
        "import _pytest"
    ]


# -- the whole patch, from a real git workspace ------------------------------------------------------------


def _snapshot(tmp_path: Path, base: Mapping[str, str | bytes], after: Mapping[str, str | bytes | None]) -> Snapshot:
    """The base committed as the pristine repository, and a workspace of base + ``after`` staged against it."""
    pristine, workspace = tmp_path / "pristine", tmp_path / "workspace"
    pristine.mkdir(parents=True)
    for path, data in base.items():
        _write(pristine / path, data)
    init_snapshot_repo(pristine)
    shutil.copytree(pristine, workspace, symlinks=True)
    for path, content in after.items():
        if content is None:
            (workspace / path).unlink()
        else:
            _write(workspace / path, content)
    git(workspace, "add", "-A", "-f")
    patch = graded_patch(workspace)
    return Snapshot(workspace=workspace, patch=patch, changes=changed_files(workspace), added=added_lines(patch))


def _write(target: Path, content: str | bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content.encode() if isinstance(content, str) else content)


def _scan(
    tmp_path: Path, base: Mapping[str, str | bytes], after: Mapping[str, str | bytes | None], budget: float = 60.0
) -> TamperEvidence:
    return scan_snapshot(TASK, _snapshot(tmp_path, base, after), tmp_path / "pristine", budget)


PLUGIN = "import pytest\n\n\ndef helper():\n    return pytest.approx(1)\n"


def test_what_the_base_already_had_is_forgiven(tmp_path: Path) -> None:
    evidence = _scan(tmp_path, {"src/plugin.py": PLUGIN}, {"src/plugin.py": PLUGIN + "\n\ndef more():\n    return 2\n"})
    assert (evidence.findings, evidence.files_scanned) == ([], ["src/plugin.py"])


def test_a_second_copy_of_what_the_base_had_is_not(tmp_path: Path) -> None:
    added = PLUGIN + "\n\ndef more():\n    import pytest\n\n    return pytest\n"
    evidence = _scan(tmp_path, {"src/plugin.py": PLUGIN}, {"src/plugin.py": added})
    assert [(f.path, f.line, f.detail) for f in evidence.findings] == [("src/plugin.py", 9, "import pytest")]


def test_a_new_file_compares_with_nothing_and_a_rename_with_its_old_self(tmp_path: Path) -> None:
    evidence = _scan(
        tmp_path,
        {"src/old.py": PLUGIN},
        {"src/old.py": None, "src/renamed.py": PLUGIN, "src/new.py": "import atexit\n"},
    )
    assert [(f.path, f.kind) for f in evidence.findings] == [("src/new.py", "atexit")]
    assert sorted(evidence.files_scanned) == ["src/new.py", "src/renamed.py"]


def test_test_files_and_sealed_test_folders_are_not_scanned(tmp_path: Path) -> None:
    base = {"tests/test_a.py": "def test_a():\n    pass\n", "src/pkg/core.py": "X = 1\n"}
    evil = "import pytest\nimport atexit\n"
    after = {
        "tests/test_a.py": evil,
        "tests/helpers.py": evil,  # a helper of a sealed test folder: the acceptance run resets it
        "src/pkg/test_util.py": evil,  # a test file by its name: removed from the acceptance run
        "src/pkg/testing_helpers.py": evil,  # neither: the package imports it, so it is scanned
    }
    evidence = _scan(tmp_path, base, after)
    assert {f.path for f in evidence.findings} == {"src/pkg/testing_helpers.py"}
    assert evidence.files_scanned == ["src/pkg/testing_helpers.py"]


def test_unparsable_sources_are_skipped_unreadable_ones_are_findings(tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("import pytest\n")
    huge = "X = 1\n" + "#" * (MAX_READ_BYTES + 1) + "\n"
    snapshot = _snapshot(
        tmp_path,
        {"src/a.py": "X = 1\n"},
        {"src/broken.py": "def broken(:\n", "src/blob.py": b"\x00\x01import pytest", "src/tables.py": huge},
    )
    assert snapshot.workspace is not None
    os.symlink(outside, snapshot.workspace / "src" / "link.py")
    os.symlink("tables.py", snapshot.workspace / "src" / "tables_link.py")
    git(snapshot.workspace, "add", "-A", "-f")
    snapshot = snapshot.model_copy(update={"changes": changed_files(snapshot.workspace)})
    evidence = scan_snapshot(TASK, snapshot, tmp_path / "pristine")
    assert sorted(evidence.files_skipped) == ["src/blob.py", "src/broken.py"]
    unscannable = sorted(f.path for f in evidence.findings if f.kind == "unscannable")
    assert unscannable == ["src/link.py", "src/tables.py", "src/tables_link.py"]


def test_files_the_scan_has_no_time_left_for_are_findings(tmp_path: Path) -> None:
    evidence = _scan(tmp_path, {"src/a.py": "X = 1\n"}, {"src/a.py": "X = 2\n", "src/b.py": "Y = 1\n"}, budget=0.0)
    assert {(f.path, f.kind) for f in evidence.findings} == {("src/a.py", "unscannable"), ("src/b.py", "unscannable")}


def test_a_long_literal_is_scanned_in_linear_time() -> None:
    # Python's engine backtracks quadratically on [*?]\S*\.xml over this; re2 reads it once.
    assert scan_file("src/pkg/mod.py", b'BANNER = "' + b"*" * 2_000_000 + b'"\n') == []
    assert _kinds('X = "' + "*" * 100_000 + '.xml"') == ["report-path"]


def test_compiled_modules_and_startup_files_are_findings_whatever_the_base(tmp_path: Path) -> None:
    base: dict[str, str | bytes] = {"src/pkg/fast.so": b"\x7fELF\x00old", "src/sitecustomize.py": "X = 1\n"}
    after: dict[str, str | bytes | None] = {
        "src/pkg/fast.so": b"\x7fELF\x00new",
        "src/pkg/__pycache__/core.cpython-311.pyc": b"\x00\x01\x02",
        "src/sitecustomize.py": "X = 2\n",
    }
    evidence = _scan(tmp_path, base, after)
    assert sorted((f.path, f.kind) for f in evidence.findings) == [
        ("src/pkg/__pycache__/core.cpython-311.pyc", "dynamic-exec"),
        ("src/pkg/fast.so", "ctypes"),
        ("src/sitecustomize.py", "startup-hook"),
    ]


def test_packaging_files_compare_with_the_base(tmp_path: Path) -> None:
    base = {"pyproject.toml": '[project]\nname = "p"\n\n[project.entry-points.pytest11]\nmine = "p.plugin"\n'}
    scripts = '\n[project.scripts]\np = "p:m"\n'
    kept = _scan(tmp_path / "kept", base, {"pyproject.toml": base["pyproject.toml"] + scripts})
    grown = _scan(tmp_path / "grown", base, {"pyproject.toml": base["pyproject.toml"] + 'evil = "p.evil"\n'})
    assert kept.findings == []
    assert [(f.line, f.kind) for f in grown.findings] == [(6, "entry-points")]


def test_a_new_module_named_like_a_standard_or_runner_module_on_the_import_path(tmp_path: Path) -> None:
    # It runs instead of that module (src/tomllib.py when pytest reads pyproject.toml, a root pytest.py for
    # python -m pytest), before the harness takes hold of pytest: a finding whatever its code hides.
    task = TaskSpec.model_validate(make_task(env={"PYTHONPATH": "lib:/opt/x"}))
    base = {"src/calc.py": "X = 1\n", "src/code.py": "X = 1\n"}
    after = {
        "pytest.py": "X = 1\n",
        "src/tomllib.py": "X = 1\n",
        "src/pluggy/__init__.py": "X = 1\n",
        "lib/shlex.py": "X = 1\n",
        "src/_distutils_hack/__init__.py": "X = 1\n",  # setuptools' .pth imports it at interpreter start
        "src/code.py": "X = 2\n",  # the base's own module of that name: not the patch's doing
        "src/calc/json.py": "X = 1\n",  # inside a package: calc.json, no shadow
        "docs/random.py": "X = 1\n",  # not on the import path
        "src/calc_tools.py": "X = 1\n",
        "test.py": "X = 1\n",  # the standard library's own test suite, which no run imports
        "__main__.py": "X = 1\n",
    }
    snapshot = _snapshot(tmp_path, base, after)
    assert snapshot.workspace is not None
    (snapshot.workspace / "vendor" / "compat").mkdir(parents=True)
    (snapshot.workspace / "vendor" / "compat" / "__init__.py").write_text("X = 1\n")
    os.symlink("../vendor/compat", snapshot.workspace / "src" / "shutil")  # a link to a package folder
    os.symlink("../vendor", snapshot.workspace / "src" / "textwrap")  # to a folder that is no package
    evidence = scan_snapshot(task, snapshot, tmp_path / "pristine")
    assert sorted((f.path, f.kind, f.detail) for f in evidence.findings) == [
        ("lib/shlex.py", "import-hook", "shadows shlex"),
        ("pytest.py", "import-hook", "shadows pytest"),
        ("src/_distutils_hack", "import-hook", "shadows _distutils_hack"),
        ("src/pluggy", "import-hook", "shadows pluggy"),
        ("src/shutil", "import-hook", "shadows shutil"),
        ("src/tomllib.py", "import-hook", "shadows tomllib"),
    ]


def _baseline(pristine: Path) -> Baseline:
    base = BaseRef(kind="folder", location=str(pristine), revision="0" * 12)
    return Baseline(base=base, key="k", pristine=pristine, tests_record=pack_tests(TestRunEvidence()))


def test_the_task_gates_on_what_the_patch_adds(tmp_path: Path) -> None:
    snapshot = _snapshot(tmp_path, {"src/a.py": "X = 1\n"}, {"src/a.py": "import os\n\nX = 1\nos._exit(0)\n"})
    component = check_tamper.fn(TASK, snapshot, _baseline(tmp_path / "pristine"))
    assert (component.name, component.role, component.passed, component.score) == ("tamper", "gate", False, 0.0)
    assert component.reason_codes == ["tamper-suspected"]
    assert component.messages[0].startswith("src/a.py:4: os-exit: ")


def test_the_task_passes_a_clean_patch(tmp_path: Path) -> None:
    snapshot = _snapshot(tmp_path, {"src/a.py": "X = 1\n"}, {"src/a.py": "import time\n\nX = time.time()\n"})
    component = check_tamper.fn(TASK, snapshot, _baseline(tmp_path / "pristine"))
    assert (component.passed, component.score, component.reason_codes) == (True, 1.0, [])
    assert component.details["files_scanned"] == ["src/a.py"]


def test_the_modules_a_pth_file_imports_at_start_are_names_a_patch_must_not_take(tmp_path: Path) -> None:
    (tmp_path / "a.pth").write_text("import certifi_boot, other.sub as o; certifi_boot.go()\n/some/path\n")
    (tmp_path / "b.pth").write_text("# import commented\nimport\tspaced\n")
    (tmp_path / "c.txt").write_text("import ignored\n")
    assert startup_imports([str(tmp_path), str(tmp_path / "absent")]) == {"certifi_boot", "other", "spaced"}


def _zip(members: Mapping[str, str], prefix: bytes = b"") -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return prefix + buffer.getvalue()


@pytest.mark.parametrize(
    "path",
    ["src/pkg/legacy.zip", "src/pkg/data.bin", "src/pkg/README"],
)
def test_an_archive_python_can_import_from_is_a_finding_whatever_its_name(tmp_path: Path, path: str) -> None:
    # zipimport reads an archive of any name (a prefix before it too) once it is on a path or a __path__.
    archive = _zip({"hidden.py": "import atexit\natexit.register(print)\n"}, prefix=b"\x00" * 100)
    evidence = _scan(tmp_path, {"src/pkg/__init__.py": ""}, {path: archive})
    assert [(f.path, f.kind, f.detail) for f in evidence.findings] == [(path, "dynamic-exec", f"archive {path}")]


def test_data_files_that_are_no_archive_are_not_findings(tmp_path: Path) -> None:
    evidence = _scan(tmp_path, {"src/pkg/__init__.py": ""}, {"src/pkg/table.bin": bytes(range(256)) * 40})
    assert evidence.findings == []


@pytest.mark.parametrize(
    "source",
    [
        "__path__.append(__file__.replace('__init__.py', 'legacy.zip'))\n",
        "__path__ += ['elsewhere']\n",
        "import pkg\n\npkg.__path__.insert(0, 'x')\n",
    ],
)
def test_a_package_path_changed_by_the_patch_is_a_finding(tmp_path: Path, source: str) -> None:
    evidence = _scan(tmp_path, {"src/pkg/__init__.py": ""}, {"src/pkg/__init__.py": source})
    assert [(f.kind, f.detail) for f in evidence.findings] == [("import-hook", "__path__")]


def test_a_package_path_the_base_already_used_is_forgiven(tmp_path: Path) -> None:
    base = "from pkgutil import extend_path\n\n__path__ = extend_path(__path__, __name__)\n"
    evidence = _scan(tmp_path, {"src/pkg/__init__.py": base}, {"src/pkg/__init__.py": base + "\nVERSION = 2\n"})
    assert evidence.findings == []


_HIDDEN = "def divide(a, b):\n    return None\n"
_SHOWN = '# -*- coding: utf-7 -*-\ndef divide(a, b):\n    raise ZeroDivisionError("b is zero")\n'


@pytest.mark.parametrize(
    ("name", "data"),
    [
        # What a reader sees is the fix; Python decodes a comment's +...- into a second divide that wins.
        ("utf-7 comment", (_SHOWN + "# +AAo-" + _HIDDEN.replace("\n", "+AAo-")).encode()),
        # A Shift JIS lead byte takes the backslash after it: the string ends early to Python, not to a reader.
        ("shift_jis backslash", '# coding: shift_jis\nx = "\u8868"\ny = 2\n'.encode("shift_jis")),
        ("utf-7 on line 2", b"#!/usr/bin/env python\n# vim: set fileencoding=utf-7 :\nx = 1 +AC0- 2\n"),
    ],
)
def test_a_source_encoding_that_shows_readers_other_code_is_a_finding(name: str, data: bytes) -> None:
    found = scan_file("src/calc.py", data)
    assert found is not None and [f.kind for f in found if f.line == 0] == ["source-encoding"], name
    assert data.decode("utf-8", errors="replace") != data.decode(found[-1].detail.split()[-1])


@pytest.mark.parametrize(
    "data",
    [
        b'# coding: latin-1\nname = "Jos\xe9"\n',  # other letters, the same code
        b'# -*- coding: cp1252 -*-\nquote = "\x93q\x94"\n',
        b"# coding: utf-7\nx = 1\n",  # declared, but nothing it decodes differs
        "# coding: utf-8\nname = 'José'\n".encode(),
        b"\xef\xbb\xbfx = 1\n",
    ],
)
def test_an_encoding_that_keeps_the_code_as_readers_see_it_is_not(data: bytes) -> None:
    assert scan_file("src/calc.py", data) == []


def test_python_runs_the_code_the_finding_says_readers_do_not_see(tmp_path: Path) -> None:
    """The attack is real: the module Python imports returns None where its UTF-8 text raises."""
    import subprocess
    import sys

    data = (_SHOWN + "# +AAo-" + _HIDDEN.replace("\n", "+AAo-")).encode()
    (tmp_path / "calc.py").write_bytes(data)
    assert "raise ZeroDivisionError" in data.decode("utf-8")
    probe = "import calc; print(calc.divide(1, 0))"
    ran = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "None"
