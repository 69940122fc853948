"""The runtime audit (PEP 578). ``install_audit`` adds a hook Python code cannot remove, before any code of the
repository is imported. It notes (the record's ``audit``, compared with the base run's) what a repository frame does
that honest library code does not: compile or exec of code from no file present at the start, trace and profile
functions, gc's object walks, marshal, new code or function objects, a source or bytecode file written, frames and a
test function's code read during a call, a test function's code or defaults assigned, a library function given
another file's code, a library module's class or a class's bases changed, a sandbox tell opened. It refuses
(``refused:...``, ``PermissionError``) what leads to the harness's own state: its functions' defaults and code, gc's
referents of them, every thread's frames, its guarded files, any process's memory, and ctypes."""

from typing import Any

import pytest


def _audit_hook(workspace, record, guarded, window, relay, own_native=(), recoded=None):
    # A PEP 578 audit hook (Python code cannot remove one): what code of the repository did at run time
    # that honest library code does not. Each entry is [event, the repository file whose frame made it,
    # what it was about]; the grader compares them with the base run's. compile/exec of code from no file
    # present when the run started, trace and profile functions, gc's object walks, marshal and new code
    # objects count when a workspace frame made the call itself (dataclasses or attrs compiling their code
    # for the repository's classes do not); ctypes, writing a .py or conftest.py file into the tree, or a .pyc
    # anywhere, count when a workspace frame is met before any of pytest's (pytest rewriting a test module,
    # the import system caching bytecode do not). The hook is a closure: nothing to swap.
    #
    # It also refuses (raises PermissionError, and notes ``refused:...``) what leads to the harness's own state
    # unless a frame of pytest's is met before any of the workspace's (or of code from no file present at the
    # start), so a thread of the repository's is refused too: reading the defaults or code of the plugin's
    # functions (where the signing key's MAC is held) or its hook generator's frame, gc's referents of those
    # functions, every thread's frames (``sys._current_frames``), writing, renaming, truncating or removing
    # the harness's ``guarded`` files (its record, the call log, by path or descriptor), and any process's
    # ``/proc/.../mem`` (or any file named ``mem``, and a link made to one). During a test's call (``window``),
    # ``sys._getframe`` and reads of ``tb_frame``, ``f_code`` or a generator's frame made by a workspace frame
    # itself are noted, compared with the base run like the rest; made by library code (``dis.distb``,
    # ``inspect.stack``, ``traceback.walk_stack``, ``pdb``), they are the repository's when a workspace frame is
    # met between the read and the test's frame (see ``through``).
    #
    # ``ctypes`` reaches the process's memory, the signing key's MAC included, so whatever is audited of it is
    # refused when the repository's code asks: importing ``ctypes``/``_ctypes`` (the harness leaves neither
    # loaded), a library or a symbol (``dlopen``, ``dlsym``: ``pythonapi``, libc's ``process_vm_readv``), an
    # object at an address or over a buffer (``from_address``, ``from_buffer``), ``string_at``,
    # ``PyObj_FromPtr``. The caller is the first frame outside the standard library (ctypes itself, threading,
    # functools: ways to call it for someone), the import system and pytest: refused when that is the
    # workspace's (or code from no file present at the start), or when there is none in a thread of its own
    # (an executor running ``string_at``); allowed for an installed package (numpy's own ctypes use).
    #
    # In a varied call's child, ``relay[0]`` sends each note to the parent at once (see ``_varied_calls``),
    # before the read it notes returns what it reads. ``own_native``: the plugin's own functions that call
    # ctypes (the dict version tags' reader), whose calls leave at once. ``recoded[0]`` is set when any function's
    # code is assigned (by anyone; asyncio does it to its own as it loads): the harness clears it as it checks
    # each test function when collection ends, and while it stays clear no test's call needs a second look.
    # Assigning a test function's code, defaults or keyword defaults (what the test runs, the inputs it takes)
    # is noted for the repository's frame that made it, as a read of its code is (see code_read).
    import _thread
    import os
    import sys
    import sysconfig

    import _pytest
    import pluggy

    prefix = workspace.rstrip("/") + "/"
    stop = (os.path.dirname(_pytest.__file__) + os.sep, os.path.dirname(pytest.__file__) + os.sep)
    passing = (*stop, os.path.dirname(pluggy.__file__) + os.sep)
    stdlib = sysconfig.get_paths()["stdlib"].rstrip("/") + os.sep
    native = frozenset(
        {
            "ctypes.dlopen",
            "ctypes.dlsym",
            "ctypes.dlsym/handle",
            "ctypes.cdata",
            "ctypes.cdata/buffer",
            "ctypes.string_at",
            "ctypes.wstring_at",
            "ctypes.call_function",
            "ctypes.PyObj_FromPtr",
        }
    )
    native_modules = frozenset({"ctypes", "_ctypes"})
    started, getframe, stat, isabs, join, getcwd = (
        record["started"],
        sys._getframe,
        os.stat,
        os.path.isabs,
        os.path.join,
        os.getcwd,
    )
    entries, seen, mtimes = record["audit"], set(), {}
    plain = frozenset(
        {
            "sys.settrace",
            "sys.setprofile",
            "sys.addaudithook",
            "gc.get_referrers",
            "gc.get_referents",
            "gc.get_objects",
            "marshal.loads",
            "marshal.load",
            "code.__new__",
            "function.__new__",
        }
    )
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    sources = (".py", ".pyc", ".pyo")
    # The files code reads to tell a sandbox or a container from a developer's machine: anything of pid 1 (its
    # name, command line, cgroup, mounts), a process's own cgroup and mount table, docker's and podman's marks.
    normpath, tell_marks, tell_tables = (
        os.path.normpath,
        frozenset({"/.dockerenv", "/run/.containerenv"}),
        frozenset({"cgroup", "mountinfo", "mounts"}),
    )

    # Each frame of a walk costs an audited read of its code (``f_code``), so what a file name says is worked
    # out once: 0 pytest's, 1 the workspace's (or, for ``untrusted``, code from no file present at the start), 2
    # neither. ``caller`` and ``untrusted`` differ only in which of pytest and the workspace wins for a file of both.
    callers: dict[str, int] = {}
    untrusted_files: dict[str, int] = {}

    def caller(frame):
        for _ in range(48):
            if frame is None:
                return None
            where = frame.f_code.co_filename
            kind = callers.get(where)
            if kind is None:
                kind = callers[where] = 1 if where.startswith(prefix) else 0 if where.startswith(stop) else 2
            if kind != 2:
                return where if kind else None
            frame = frame.f_back
        return None

    def tell_caller(frame):
        # Who asked for a sandbox tell: the first frame outside the standard library (``pathlib``, ``io``) when it
        # is the workspace's; an installed package reading one for itself (a CPU count from the cgroup) is not.
        for _ in range(16):
            if frame is None:
                return None
            where = frame.f_code.co_filename
            if where.startswith(prefix):
                return where
            if not where.startswith((stdlib, "<frozen ")) or "site-packages" in where:
                return None
            frame = frame.f_back
        return None

    def new_file(name):
        # No file, or one written after the harness started (a module the run itself made).
        if not isinstance(name, str) or not isabs(name):
            return True
        if name not in mtimes:
            try:
                mtimes[name] = stat(name).st_mtime > started
            except OSError:
                mtimes[name] = True
        return mtimes[name]

    def note(event, where, detail):
        key = (event, where)
        if relay[0] is not None:
            relay[0](event, where, str(detail)[:200])
        if key not in seen and len(entries) < 200:
            seen.add(key)
            entries.append([event, where, str(detail)[:200]])

    def sandbox_tell(args):
        # The file ``open`` reads when it is one of the sandbox tells above, else None (a cheap test first:
        # every import opens files).
        path = args[0] if args else None
        if isinstance(path, bytes):
            path = path.decode("utf-8", "replace")
        if not isinstance(path, str) or not ("proc" in path or path.endswith("env")):
            return None
        full = normpath(path if isabs(path) else join(getcwd(), path))
        if full in tell_marks or full == "/proc/1" or full.startswith("/proc/1/"):
            return full
        parts = full.split("/")
        if (
            len(parts) == 4
            and parts[1] == "proc"
            and parts[3] in tell_tables
            and (parts[2] in ("self", "thread-self") or parts[2].isdigit())
        ):
            return full
        return None

    def written_source(args):
        path, mode, flags = [*args, None, None, None][:3]
        if isinstance(path, bytes):
            path = path.decode("utf-8", "replace")
        if not isinstance(path, str) or not (path.endswith(sources) or path.endswith("conftest.py")):
            return None
        writing = any(c in mode for c in "wax+") if isinstance(mode, str) else isinstance(flags, int) and flags & writes
        if not writing:
            return None
        full = path if isabs(path) else join(getcwd(), path)
        return full if full.startswith(prefix) or full.endswith((".pyc", ".pyo")) else None

    busy: set[int]
    own, function_type, get_ident, busy = globals(), type(caller), _thread.get_ident, set()
    own_file = caller.__code__.co_filename
    module_type: Any
    module_type, code_type = type(sys), type(caller.__code__)
    module_dict, type_dict = module_type.__dict__["__dict__"].__get__, type.__dict__["__dict__"].__get__
    function_reads = frozenset({"__defaults__", "__kwdefaults__", "__code__"})
    generator_reads = {
        "gi_frame": "gi_frame",
        "gi_code": "gi_frame",
        "cr_frame": "cr_frame",
        "cr_code": "cr_frame",
        "ag_frame": "ag_frame",
        "ag_code": "ag_frame",
    }
    test_files: dict[str, bool]
    frame_reads, test_names, test_files = frozenset({"tb_frame", "f_code"}), ("test_", "conftest.py"), {}
    noted_reads = frame_reads | frozenset({"gi_frame", "cr_frame", "ag_frame"})
    tracing = frozenset({"sys.settrace", "sys.setprofile"})
    consumers, _kept = _keepers()  # _kept: the codes stay alive, so no other code takes their ids
    # Readers of a function's code that hand none of it back (a flag, the parameters' names): pytest asks each
    # test function through them several times a run, so they are told from the reading frame's code alone.
    flag_readers, _kept_readers = _keepers(_FLAG_READERS)
    own_native, _kept_native = _codes(own_native)
    identity = object.__hash__  # an object's address, as id() without its audited event (see _pytest_internals)
    attribute_reads = function_reads | frame_reads | frozenset(generator_reads)
    file_events = frozenset({"os.rename", "os.remove", "os.truncate", "os.link", "os.symlink"})
    # The hook runs for every audited event of the run (about a hundred thousand at 1,000 tests: ``builtins.id``,
    # ``object.__getattr__``, ``open``, ``import``), so the events it ignores leave after one lookup: 1 for
    # attribute reads, 2 for ``sys._getframe``, 3 for imports (one set lookup more), 4 for ``open``, 5 for attribute
    # writes, 0 for the rest it looks at (and ``ctypes.*``, told by its first letter first).
    kinds = dict.fromkeys(plain | file_events | {"compile", "exec", "open", "sys._current_frames"}, 0)
    kinds.update({"object.__getattr__": 1, "sys._getframe": 2, "import": 3, "open": 4, "object.__setattr__": 5})
    # An ``open`` matters only for a source or bytecode file, a process's memory, a guarded file (by its name
    # or its descriptor) or a sandbox tell: every other path (a test's temporary file) leaves after a look at it.
    open_marks = (*sources, "mem")
    guarded_names = frozenset(p.rpartition("/")[2] for p in guarded if type(p) is str)

    def hook(event, args):
        kind: Any
        if busy and get_ident() in busy:
            return  # the hook's own reads of frames and code (a walk makes one per frame): the first test
        # The two most frequent events by plain comparison (a fresh string each time: no hash to compute).
        if event == "object.__getattr__":
            kind = 1
        elif event == "builtins.id":
            return
        else:
            kind = kinds.get(event)
        if kind is None:
            if event[:1] != "c" or not event.startswith("ctypes."):
                return
        elif kind == 3:
            if not args:
                return
            if type(args[0]) is not str:  # never hash a str subclass here: its methods would run in the hook
                args = exact(args)
            if args[0] not in native_modules:
                return  # every other import: one set lookup
        elif kind == 4:
            target = args[0] if args else None
            if type(target) is str:
                if (
                    not target.endswith(open_marks)
                    and target.rpartition("/")[2] not in guarded_names
                    and "proc" not in target
                    and not target.endswith("env")
                ):
                    return  # neither a source, a memory or guarded file, nor a sandbox tell
            elif type(target) is int and target not in guarded:
                return
        elif kind == 1:
            name = args[1] if len(args) > 1 else None
            if name in frame_reads:
                if not window[0]:
                    return  # noted during a test's call only; the hook's own walks read frames' code often
            elif name not in attribute_reads:
                return
            elif name in function_reads:
                # pytest and inspect read functions' code and defaults thousands of times a run: what is not the
                # harness's own function leaves here, a test function's code (see test_function) after a look at
                # who reads it (see code_read), written out here: the readers are told apart in a few steps.
                target = args[0]
                if type(target) is not function_type:
                    return
                scope = target.__globals__
                if scope is not own:
                    if name == "__code__" and type(scope) is dict:  # a dict subclass's get would run its code
                        file = dict_get(scope, "__file__")
                        if type(file) is str and (test_files[file] if file in test_files else test_file(file)):
                            ident = get_ident()
                            busy.add(ident)
                            try:
                                frame = getframe(1)
                                code = frame.f_code
                                if identity(code) not in flag_readers and not (
                                    frame.f_globals is own and code.co_filename == own_file
                                ):
                                    code_read(frame, code)
                            finally:
                                busy.discard(ident)
                    return
        elif kind == 2 and not window[0]:
            return
        elif kind == 5:
            if len(args) > 2 and type(args[1]) is str:
                target, name = args[0], args[1]
                if type(target) is function_type:
                    if name == "__code__" and recoded is not None:
                        recoded[0] = True
                    if name in function_reads:
                        code_written(target, name, args[2])
                elif (name == "__class__" or name == "__bases__") and (
                    type(target) is module_type or issubclass(type(target), type)
                ):
                    class_written(target, name)
            return
        ident = get_ident()
        busy.add(ident)
        if kind != 1 and kind != 2:
            args = exact(args)
        try:  # the calling frame is taken only when needed: getframe(2) from the functions below
            if kind is None and identity(getframe(1).f_code) in own_native:
                return  # the plugin's own reading of a dict's version tag
            if event in native or event == "import":
                refuse_native(event, args)
            refused = forbidden(event, args)
            if refused is not None:
                refuse(event, refused)
            elif event == "sys._getframe" or event == "object.__getattr__":
                frame_taken(event, args)
            else:
                audited(event, args)
        finally:
            busy.discard(ident)

    str_copy, bytes_item, int_copy, whole = str.__str__, bytes.__getitem__, int.__index__, slice(None)
    plain_types, dict_get = (str, bytes, int, bool, type(None)), dict.get

    def exact(args):
        # The event's arguments as exact str, bytes and int: a subclass the repository handed over (a path, a
        # module name, a file name for compile) would run its own __hash__, __eq__ or startswith inside the
        # hook, where nothing of this thread is audited. Copies made by the base types' own C methods.
        # (issubclass of the real type, never isinstance: that may read a __class__ the repository defined.)
        return tuple(
            arg
            if type(arg) in plain_types
            else str_copy(arg)
            if issubclass(type(arg), str)
            else bytes_item(arg, whole)
            if issubclass(type(arg), bytes)
            else int_copy(arg)
            if issubclass(type(arg), int) and type(arg) is not bool
            else arg
            for arg in args
        )

    def harness_function(value):
        return type(value) is function_type and value.__globals__ is own

    def test_file(file):
        # A test module's file (``file``: its functions' globals' ``__file__``, an exact str): a test function's code
        # holds the test's inputs and expected values, hidden tests' too. Kept in ``test_files``.
        found = test_files.get(file)
        if found is None:
            name = file.rpartition("/")[2]
            found = test_files[file] = file.startswith(prefix) and (
                name.startswith("test_") or name.endswith("_test.py")
            )
        return found

    def owned(target, name):
        # The plugin's functions (the closures and the signing key's MAC hang off them) and its generator's frame.
        if name in function_reads:
            return harness_function(target)
        frame = getattr(target, generator_reads[name], None)
        return frame is not None and frame.f_globals is own

    def full_path(value):
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if isinstance(value, int):
            return value  # a descriptor: the call log's is guarded
        return (value if isabs(value) else join(getcwd(), value)) if isinstance(value, str) else None

    def forbidden(event, args):
        # What the event would reach that no honest code reaches, or None.
        if event == "object.__getattr__":
            return f"{args[1]} of the harness" if args[1] not in frame_reads and owned(args[0], args[1]) else None
        if event == "gc.get_referents":
            return "gc.get_referents of the harness" if any(map(harness_function, args[0] if args else ())) else None
        if event == "sys._current_frames":
            return "every thread's frames"
        if event == "open" and args:
            # A process's memory: ``/proc/<pid>/mem``, or ``mem`` opened relative to a descriptor of such a folder.
            path = full_path(args[0])
            if isinstance(path, str) and path.endswith("/mem"):
                return path
            return str(path) if path in guarded and writing(args) else None
        if event in file_events:
            hit = [str(p) for p in map(full_path, args[:2]) if p in guarded]
            if not hit and event == "os.symlink" and args and memory_link(args[0]):
                hit = [f"a link to {args[0]}"]
            return hit[0] if hit else None
        return None

    def memory_link(target):
        if isinstance(target, bytes):
            target = target.decode("utf-8", "replace")
        return isinstance(target, str) and (target == "mem" or target.endswith("/mem"))

    def refuse_native(event, args):
        # See the header: refused when the repository's code asks for ctypes, allowed for an installed package.
        frame: Any
        frame, seen_pytest = getframe(2), False
        while frame is not None:
            where = frame.f_code.co_filename
            if where.startswith(passing):
                seen_pytest = True
            elif not (where.startswith((stdlib, "<frozen ")) and "site-packages" not in where):
                if not (where.startswith(prefix) or new_file(where)):
                    return
                break
            frame = frame.f_back
        else:
            if seen_pytest:
                return
            where = "a thread of standard-library frames only"
        what = args[0] if event == "import" else ""
        note(f"refused:{event}", where, what)
        raise PermissionError(f"gradeflow's test harness refuses {event} {what} from {where}".rstrip())

    def writing(args):
        mode, flags = [*args, None, None, None][1:3]
        return any(c in mode for c in "wax+") if isinstance(mode, str) else isinstance(flags, int) and flags & writes

    def untrusted(frame, code=None):
        # The first workspace frame (or frame of code from no file present at the start) below pytest's, or the
        # bottom frame's file when the stack never reaches pytest (a thread of its own); None under pytest.
        # ``code``: ``frame``'s, when the caller has read it already.
        where = None
        while frame is not None:
            where = (frame.f_code if code is None else code).co_filename
            code = None
            kind = untrusted_files.get(where)
            if kind is None:
                kind = untrusted_files[where] = (
                    0
                    if where.startswith(stop)
                    else 1
                    if where.startswith(prefix) or (new_file(where) and not where.startswith("<frozen "))
                    else 2
                )
            if kind != 2:
                return where if kind else None
            frame = frame.f_back
        return where

    def culprit(where):
        # Whom a note of a test's code read or written names, from untrusted()'s answer: the repository's file
        # (not a test file: a test may look at or change itself), code from no file present at the start, or the
        # bottom frame's file of a thread whose stack meets neither pytest nor the repository (a worker of
        # ``concurrent.futures`` the repository handed the job); None under pytest.
        if where is None or (where.startswith(prefix) and where.rpartition("/")[2].startswith(test_names)):
            return None
        return where

    def refuse(event, what):
        where = untrusted(getframe(2))
        if where is None:
            return
        note(
            "refused:" + (f"object.__getattr__:{what.split()[0]}" if event == "object.__getattr__" else event),
            where,
            what,
        )
        raise PermissionError(f"gradeflow's test harness refuses {event} ({what}) from {where}")

    def code_read(frame, code=None):
        # A test function's code read by the repository (itself, or through inspect or dis), ``frame`` the reading
        # one: first workspace frame below pytest's, unless it is a test file's (a test may look at itself). The
        # harness's own checks (each test's function, at collection and at its call) read it too and hand no code
        # back: told by the reading frame alone, before a walk down the stack that costs an audited read per frame.
        # ``code``: the frame's, when the caller has read it and told those apart already.
        if code is None:
            code = frame.f_code
            if identity(code) in flag_readers or (frame.f_globals is own and code.co_filename == own_file):
                return
        where = culprit(untrusted(frame, code))
        if where is not None:
            note("object.__getattr__:__code__(of-a-test-function)", where, "")

    def code_written(target, name, value):
        # A test function's code, defaults or keyword defaults assigned (what the test runs, the inputs it takes),
        # or another file's code given to a function of pytest, of an installed package or of the standard
        # library (``RaisesExc.__exit__`` that no longer raises): noted for the first workspace frame below
        # pytest's, unless a test file's (a test may change itself). Code given with its own file's name kept
        # (``types.coroutine`` setting a flag as asyncio loads) is not noted; made by the repository, that code
        # object is (``code.__new__``).
        scope = target.__globals__
        if type(scope) is not dict:
            return
        file = dict_get(scope, "__file__")
        label = "of-a-test-function"
        if not (type(file) is str and test_file(file)):
            if name != "__code__" or type(value) is not code_type:
                return
            label = "of-a-library-function"
        ident = get_ident()
        busy.add(ident)
        try:
            if label != "of-a-test-function":
                before = target.__code__.co_filename
                if before == value.co_filename or (type(before) is str and before.startswith(prefix)):
                    return  # the same file's code, or a function of the repository's own
            where = culprit(untrusted(getframe(2)))
            if where is not None:
                note(f"object.__setattr__:{name}({label})", where, "" if label == "of-a-test-function" else before)
        finally:
            busy.discard(ident)

    def class_written(target, name):
        # A module's class, or a class's bases or metaclass, changed (a module whose attribute look-up hands out
        # another ``raises``, a test class given a base whose ``assertEqual`` accepts anything): noted for the
        # first workspace frame below pytest's, unless a test file's, when the module or class is not one of
        # the repository's own (a test module's counts as not) and the change is not made by that module's own
        # code (a module setting its own class at import, for lazy attributes).
        ident = get_ident()
        busy.add(ident)
        try:
            if type(target) is module_type:
                space = module_dict(target)
                kind = "module"
            else:
                owner = type_dict(target).get("__module__")
                owner = dict_get(sys.modules, owner) if type(owner) is str else None
                space = module_dict(owner) if type(owner) is module_type else None
                kind = "class"
            file = dict_get(space, "__file__") if type(space) is dict else None
            if type(file) is str and file.startswith(prefix) and not file.rpartition("/")[2].startswith(test_names):
                return  # the repository's own module or class
            frame = getframe(2)
            if space is not None and frame.f_globals is space:
                return
            where = culprit(untrusted(frame))
            if where is not None:
                note(f"object.__setattr__:{name}(of-a-{kind})", where, str(file))
        finally:
            busy.discard(ident)

    def frame_taken(event, args):
        if event == "object.__getattr__" and args[1] == "__code__":
            code_read(getframe(2))
            return
        # Test files are left out: a fixed test may reach its own frame reads where the base's failed before them.
        if not window[0] or (event != "sys._getframe" and args[1] not in noted_reads):
            return
        frame = getframe(2)
        where = frame.f_code.co_filename
        if not where.startswith(prefix):
            through(event, args, frame)
        elif not where.rpartition("/")[2].startswith(test_names):
            note(event if event == "sys._getframe" else f"object.__getattr__:{args[1]}", where, "")

    def innermost(frame):
        # The innermost workspace frame (not a test file's) between ``frame`` and pytest's, and the code of the
        # library frames on the way; None when a test file's or pytest's frame, or a look-up that keeps the
        # frame it reads (``consumers``: logging's, met first when code logs), comes first.
        chain: list[Any] = []
        while frame is not None and len(chain) < 48:
            code = frame.f_code
            where = code.co_filename
            if where.startswith(prefix):
                return None if where.rpartition("/")[2].startswith(test_names) else (frame, chain)
            if where.startswith(stop):
                return None
            if identity(code) in consumers:
                return farther(frame)
            chain.append(code)
            frame = frame.f_back
        return None

    def farther(keeper):
        # A look-up that keeps what it reads reads its own caller, unless told to read further out: logging's
        # ``stacklevel`` (``findCaller(stacklevel=3)``, ``log.info(..., stacklevel=3)``) hands back the name, file and
        # line of a frame that many calls out. When that frame is outside the repository's call (the test's, or
        # pytest's), the read is the innermost workspace frame's below the look-up, as if it took the frame itself
        # (a sixth blind red team's patch raised only when its caller's name began with "test"). Its reach is
        # taken at its widest: past the logging module's own frames, then ``stacklevel - 1`` more; with
        # ``stack_info`` (a record's ``stack_info``: the whole stack, written out) every frame.
        if keeper.f_code.co_name != "findCaller":
            return None
        given = keeper.f_locals
        level, whole = given.get("stacklevel", 1), given.get("stack_info", False)
        # Truth read without calling the object's own ``__bool__`` (it may be the repository's): only False, None
        # and 0 are taken for false.
        whole = not (whole is None or whole is False or (type(whole) is int and whole == 0))
        if not whole and (type(level) is not int or level <= 1):
            return None
        found = innermost(keeper.f_back)
        if found is None:
            return None
        culprit, chain = found
        reached = (culprit, [keeper.f_code, *chain])
        if whole:
            return reached if culprit.f_back is not None else None
        target, own = keeper.f_back, keeper.f_code.co_filename
        while target is not None and target.f_code.co_filename == own:
            target = target.f_back
        for _ in range(min(level, 400) - 1):
            if target is None:
                return None
            target = target.f_back
        return reached if outward(culprit, target) else None

    def through(event, args, frame):
        # A read made by library code on the repository's behalf: the frame it reads (or hands back) leads to the
        # test's (``f_back``, ``f_locals`` and ``f_globals`` raise no audit event), so the read is the innermost
        # workspace frame's, unless a library frame on the way only keeps what it read (logging's caller lookup,
        # namedtuple's module name). Any frame the standard library takes for it counts; an installed package's
        # counts when the frame is one outside the repository's own call (the test's, or pytest's).
        found = innermost(frame)
        if found is None:
            return
        culprit, chain = found
        if event == "sys._getframe":
            if all(standard(code.co_filename) for code in chain):
                note("sys._getframe(through-a-library)", culprit.f_code.co_filename, chain[0].co_filename)
                return
            target = args[0] if args else None
        else:
            target = args[0] if args[1] == "f_code" else getattr(args[0], args[1], None)
        if outward(culprit, target):
            label = "sys._getframe" if event == "sys._getframe" else f"object.__getattr__:{args[1]}"
            note(f"{label}(test-frame)", culprit.f_code.co_filename, chain[0].co_filename)

    def standard(where):
        return where.startswith("<frozen ") or (where.startswith(stdlib) and "-packages/" not in where)

    def outward(frame, target):
        # Whether ``target`` is a frame running outside ``frame``'s call: the test's, or one of pytest's.
        if target is None:
            return False
        frame = frame.f_back
        for _ in range(400):
            if frame is None:
                return False
            if frame is target:
                return True
            frame = frame.f_back
        return False

    def audited(event, args):
        detail: Any
        walk = False
        if event in plain:
            detail = ""
        elif event.startswith("ctypes."):
            detail, walk = "", True
        elif event == "compile":
            if len(args) < 2 or not new_file(args[1]):
                return
            detail = args[1]
        elif event == "exec":
            code = args[0] if args else None
            name = getattr(code, "co_filename", None)
            if not new_file(name):
                return
            detail = name
        elif event == "open":
            detail = written_source(args)
            if detail is None:
                detail = sandbox_tell(args)
                if detail is None:
                    return
                event = "open:sandbox-tell"  # read where the code under test looks to see if it is in a sandbox
                where = tell_caller(getframe(2))
                if where is not None:
                    note(event, where, detail)
                return
            elif "__pycache__" in detail and getframe(2).f_code.co_filename.startswith("<frozen importlib"):
                return  # the import system caching bytecode
            walk = True
        else:
            return
        frame = getframe(2)
        where = caller(frame) if walk else frame.f_code.co_filename
        if where is not None and where.startswith(prefix):
            note(event, where, detail)
        elif event in tracing and where is not None:
            # A trace or profile function set by a debugger of the library (bdb, pdb) that the repository started:
            # it is handed every frame of the test.
            found = innermost(frame)
            if found is not None:
                note(f"{event}(through-a-library)", found[0].f_code.co_filename, where)

    return hook


# The standard library's functions that take a frame to read a name or a line from it and hand nothing of it
# back: logging's caller lookup, the module name of a namedtuple, a TypeVar, an enum made by a call.
_KEEPERS = (
    ("logging", "Logger.findCaller"),
    ("collections", "namedtuple"),
    ("typing", "_caller"),
    ("enum", "EnumType._create_"),
    ("enum", "EnumMeta._create_"),
    ("warnings", "warn"),
)
# Those that read a function's code and hand back a flag of it, or its parameters' names (readable without it).
_FLAG_READERS = (("inspect", "_has_code_flag"), ("inspect", "_signature_from_function"))


def _keepers(paths=_KEEPERS):
    # The ids of the code of the standard functions at ``paths`` (module, dotted name), taken before any code of
    # the repository was imported, and the codes themselves (held, so that no other code takes their ids).
    import importlib

    found = []
    for module, path in paths:
        value: Any = importlib.import_module(module)
        for part in path.split("."):
            value = getattr(value, part, None)
        found.append(value)
    return _codes(found)


def _codes(functions):
    # The identities of the functions' codes, as the hook tells them, and the codes.
    found = [code for code in (getattr(f, "__code__", None) for f in functions) if code is not None]
    return frozenset(map(object.__hash__, found)), tuple(found)


def install_audit(workspace, record, guarded, window, relay, own_native=(), recoded=None):
    import sys

    if workspace:
        sys.addaudithook(_audit_hook(workspace, record, guarded, window, relay, own_native, recoded))
