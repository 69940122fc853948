"""The varied run (``_varied_calls``): each selected test's call runs in a child forked for it with pytest's marks on
the process taken off (faulthandler, the exception hooks, the root logger's handlers, captured streams, warnings
recorded instead of shown,
``__main__``, ``sys.argv``, pytest's variables, the recursion limit; ``_relabel_command_line``: the command line the
kernel shows), runs the checks made after every call, and
sends its outcome and notes to the parent in one message signed with the run's key; the audit's notes are sent as
they are made. Collection runs with the same marks off."""

from typing import Any


def _relabel_command_line(main_file):
    # The kernel reads /proc/self/cmdline from the process's own argument memory, not from sys.argv: it says
    # pytest (and names the report). In the varied run that memory says a script's command instead (``python
    # main_file``, what is left of it zeroed), written once at the session's start, while the process is still
    # dumpable (its /proc/self/mem its own to open) and before the audit hook that refuses every opening of a
    # process's memory; the forked calls inherit it. Where it cannot be written, it stays as it was.
    import os
    import sys

    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start and arg_end, the 48th and 49th fields
        for program in (sys.executable, "python3"):
            text = os.fsencode(program) + b"\0" + os.fsencode(main_file) + b"\0"
            if 0 < len(text) <= end - start:
                with open("/proc/self/mem", "r+b", buffering=0) as memory:
                    memory.seek(start)
                    memory.write(text.ljust(end - start, b"\0"))
                return
    except (OSError, ValueError, IndexError):
        pass


def _varied_calls(settings, outcomes, sign, record, checks, relay, file_collector):
    # The varied run (Harness.varied): each selected test's call runs in a child forked for it, where the marks
    # pytest and the grader leave on a process are taken away or changed first, so code that behaves only
    # when it notices a test run shows it (in the process itself, marks put back after, when other threads run).
    # The child runs the per-call checks (``checks``) and reports how the call ended, with what the record's notes
    # gained in it, in one message on a pipe: a nonce drawn for the call and the run's signature (``sign``), so
    # the code under test cannot write one in its place. The parent merges the notes into its record and raises
    # the same kind of outcome, so the record and the report read as for any call. Fixtures run in the parent.
    # What the code under test can reach of this without an audited read (``item.runtest``) holds its state in
    # keyword-only defaults, whose reads the audit hook refuses: no closure leads to ``sign`` or a nonce. The
    # reads that do lead there (frames, gc walks) are the audit hook's notes, and in the child each note is sent
    # at once, signed (``relay``), before the read returns: code that forges the child's message after one has
    # not unsent it. A note that cannot be sent on the call's pipe (closed, or another file put in its place)
    # ends the child at once with status ``lost``: the call fails.
    import _thread
    import builtins
    import faulthandler
    import hmac
    import json
    import logging
    import os
    import sys
    import threading
    import types
    import warnings

    main_file, extra = str(settings.get("main") or "main.py"), max(int(settings.get("recursion") or 0), 0)
    # Python's own thread hook: ``threading.__excepthook__`` from 3.10, ``_thread._excepthook`` before.
    thread_hook = getattr(threading, "__excepthook__", None) or _thread._excepthook
    # Python's own way of showing a warning, taken before pytest records warnings around each test (it puts a
    # list's ``append`` in its place): a call in a plain process shows them, it does not record them.
    shown = warnings._showwarnmsg_impl  # type: ignore[attr-defined]
    show_warning = shown if isinstance(shown, types.FunctionType) else None
    skip_exception, xfail_exception = outcomes
    fork, pipe, read, write, close, waitpid, exit_ = os.fork, os.pipe, os.read, os.write, os.close, os.waitpid, os._exit
    fstat, lost, relayed_most = os.fstat, 70, 32
    set_blocking, active_count, urandom, same = os.set_blocking, threading.active_count, os.urandom, hmac.compare_digest
    signaled, exited, signal_of, status_of = os.WIFSIGNALED, os.WIFEXITED, os.WTERMSIG, os.WEXITSTATUS
    dumps, loads = json.dumps, json.loads
    capturing = frozenset({"capsys", "capsysbinary", "capfd", "capfdbinary"})
    module_type = types.ModuleType
    environ, marking_variables = os.environ, ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    # The record's note collections a call can add to, most telling first: the budget of a message is shared
    # among them entry by entry, so many entries of one kind cannot crowd out another kind's first.
    noted = ("patched", "namespaces", "conftests", "misplaced_code", "foreign_code", "hook_files", "plugins", "audit")
    budget = 16384  # bytes of notes in one message: with the rest, well inside a pipe's buffer
    test_folders = set()

    def unmark(item):
        names = frozenset(getattr(item, "fixturenames", ()) or ())
        faulthandler.disable()
        threading.excepthook = thread_hook
        sys.unraisablehook = sys.__unraisablehook__
        sys.excepthook = sys.__excepthook__
        if show_warning is not None and "recwarn" not in names:
            warnings._showwarnmsg_impl = show_warning  # type: ignore[attr-defined]
        if "caplog" not in names:
            root = logging.getLogger()
            for handler in list(root.handlers):
                if type(handler).__module__.startswith("_pytest."):
                    root.removeHandler(handler)
        if not names & capturing and sys.__stdout__ is not None and sys.__stderr__ is not None:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        # The child is thrown away: pytest's own ``__main__`` is emptied in place (code that took it at import
        # holds that object) and made a script's, and sys.modules names it again.
        main = sys.modules.get("__main__")
        if not isinstance(main, module_type):
            main = module_type("__main__")
        vars(main).clear()
        vars(main).update(
            __name__="__main__",
            __file__=main_file,
            __builtins__=builtins,
            __doc__=None,
            __spec__=None,
            __package__=None,
            __loader__=None,
        )
        sys.modules["__main__"] = main
        sys.argv = [main_file]
        sys.orig_argv = [sys.executable, main_file]
        sys.setrecursionlimit(sys.getrecursionlimit() + extra)
        # pytest's options and the grader's in the environment (the processes a call starts get them back from
        # the harness's site folder).
        for name in marking_variables:
            environ.pop(name, None)

    def taken():
        main = sys.modules.get("__main__")
        return (
            faulthandler.is_enabled(),
            threading.excepthook,
            sys.unraisablehook,
            sys.excepthook,
            list(logging.getLogger().handlers),
            sys.stdout,
            sys.stderr,
            main,
            dict(vars(main)) if isinstance(main, module_type) else None,
            sys.argv,
            getattr(sys, "orig_argv", None),
            sys.getrecursionlimit(),
            {name: environ[name] for name in marking_variables if name in environ},
            warnings._showwarnmsg_impl,  # type: ignore[attr-defined]
        )

    def put_back(saved):
        (
            enabled,
            thread_hook,
            unraisable,
            excepthook,
            handlers,
            out,
            err,
            main,
            main_vars,
            argv,
            orig,
            limit,
            env,
            show,
        ) = saved
        warnings._showwarnmsg_impl = show  # type: ignore[attr-defined]
        if enabled and sys.__stderr__ is not None:
            faulthandler.enable(file=sys.__stderr__)
        threading.excepthook, sys.unraisablehook, sys.excepthook = thread_hook, unraisable, excepthook
        logging.getLogger().handlers[:] = handlers
        sys.stdout, sys.stderr = out, err
        if main_vars is not None:
            vars(main).clear()
            vars(main).update(main_vars)
            sys.modules["__main__"] = main
        sys.argv = argv
        if orig is not None:
            sys.orig_argv = orig
        sys.setrecursionlimit(limit)
        environ.update(env)

    def in_process(item, runtest):
        # Another thread is running (a fixture's server): a forked child would have none of it. The call then
        # runs here with the same marks taken off, put back after it (its CPU time is the session's).
        saved = taken()
        try:
            unmark(item)
            runtest()
        finally:
            put_back(saved)

    def described(exc):
        try:
            return f"{type(exc).__name__}: {exc}"[:300]
        except BaseException:
            return type(exc).__name__

    def sizes(nodeid):
        compared = record.get("compared")
        entries = compared.get(nodeid) if isinstance(compared, dict) else None
        return {key: len(record.get(key) or ()) for key in noted}, dict(entries or {})

    def gained(nodeid, before):
        counts, compared_before = before
        queues = [(key, list((record.get(key) or [])[counts[key] :])) for key in noted]
        compared = record.get("compared")
        entries = compared.get(nodeid) if isinstance(compared, dict) else None
        queues.append(
            (
                "compared",
                [[place, found] for place, found in (entries or {}).items() if compared_before.get(place) != found],
            )
        )
        found: dict[str, list[Any]]
        found, size, index = {}, 0, 0
        while any(index < len(entries) for _key, entries in queues):
            for key, entries in queues:
                if index < len(entries):
                    cost = len(dumps(entries[index])) + 2
                    if size + cost <= budget:
                        found.setdefault(key, []).append(entries[index])
                        size += cost
            index += 1
        return found

    def signed(payload):
        return sign(payload) if sign is not None else ""

    def send(writer, fields):
        payload = dumps(fields)
        data = (payload + " " + signed(payload.encode("utf-8")) + "\n").encode("utf-8")
        return write(writer, data) == len(data)

    def relaying(writer, nonce):
        sent: set[Any]
        pipe_file, sent = fstat(writer)[1:3], set()

        def relayed(event, where, detail):
            if (event, where) in sent or len(sent) >= relayed_most:
                return
            sent.add((event, where))
            try:
                if fstat(writer)[1:3] == pipe_file and send(writer, [nonce, "note", [event, where, detail]]):
                    return
            except OSError:
                pass
            exit_(lost)

        return relayed

    def uncaptured(item):
        # In the child (thrown away, never resumed): pytest's capture of the descriptors ends, as when no test
        # runs: standard input, output and error are the process's own again and the copies pytest kept of them
        # (the lowest descriptors above 2) and its temporary files are closed, unless the test asks for capsys
        # or capfd.
        if frozenset(getattr(item, "fixturenames", ()) or ()) & capturing:
            return
        try:
            capman = item.config.pluginmanager.getplugin("capturemanager")
            multi = getattr(capman, "_global_capturing", None)
            if multi is None:
                return
            capman.suspend_global_capture(in_=True)
            for capture in (multi.in_, multi.out, multi.err):
                file = getattr(capture, "tmpfile", None)
                numbers = (
                    getattr(capture, "targetfd_save", None),
                    getattr(capture, "targetfd_invalid", None),
                    file.fileno() if file is not None and hasattr(capture, "targetfd_save") else None,
                )
                for number in numbers:
                    if isinstance(number, int) and number > 2:
                        close(number)
        except BaseException:
            pass
        if sys.__stdin__ is not None:
            sys.stdin = sys.__stdin__

    def tests_behind():
        # The folders of the test files pytest put first on sys.path go last (still found, no longer first):
        # a process no test runs in starts with its script's folder or the working folder there.
        sys.path[:] = [p for p in sys.path if p not in test_folders] + [p for p in sys.path if p in test_folders]

    def collecting(collector, saved=None):
        # Collection (the repository's modules imported) with the marks off as in a call, so what a module notes
        # at import time is a plain process's too: pytest's capture of a test file's collection suspended, the
        # process's own streams, hooks and logging; faulthandler left off for the session.
        if not isinstance(collector, file_collector):
            return None
        capman = collector.config.pluginmanager.getplugin("capturemanager")
        if saved is not None:
            put_back(saved)
            if capman is not None:
                capman.resume_global_capture()
            return None
        faulthandler.disable()
        if capman is not None:
            capman.suspend_global_capture(in_=True)
        saved = taken()
        unmark(None)
        return saved

    def child(item, runtest, writer, nonce):
        before = sizes(item.nodeid)
        set_blocking(writer, False)  # a message the pipe cannot hold is cut, never a hang
        relay[0] = relaying(writer, nonce)
        result = ["raised", "the call did not finish"]
        try:
            unmark(item)
            uncaptured(item)
            tests_behind()
            runtest()
            result = ["raised", "a unittest failure"] if getattr(item, "_excinfo", None) else ["ok", ""]
        except skip_exception as exc:
            result = ["skipped", described(exc)]
        except xfail_exception as exc:
            result = ["xfailed", described(exc)]
        except BaseException as exc:
            result = ["raised", described(exc)]
        finally:
            try:
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except BaseException:
                        pass
                try:
                    checks()
                except BaseException:
                    pass
                send(writer, [nonce, result[0], result[1], gained(item.nodeid, before)])
            finally:
                exit_(0)

    def merge(notes, nodeid):
        for key, entries in notes.items():
            if key == "compared":
                target = record["compared"].setdefault(nodeid, {})
                target.update({str(place): str(found) for place, found in entries})
            elif key in noted:
                target = record.setdefault(key, [])
                for entry in entries:
                    if entry not in target and (key != "audit" or len(target) < 200):
                        target.append(entry)

    def verified(line, nonce):
        # The message's fields when it is this call's, signed with the run's key; else why not.
        payload, _, signature = line.rpartition(b" ")
        if sign is not None and not same(signed(payload), signature.decode("ascii", "replace")):
            return None, "a message not signed with the run's key"
        try:
            fields = loads(payload)
        except ValueError:
            return None, "a malformed message"
        if isinstance(fields, list) and len(fields) == 3 and fields[1] == "note":
            entry = fields[2]
            if not (isinstance(entry, list) and len(entry) == 3 and all(isinstance(part, str) for part in entry)):
                return None, "a malformed message"
        elif not (
            isinstance(fields, list)
            and len(fields) == 4
            and isinstance(fields[3], dict)
            and fields[1] in ("ok", "raised", "skipped", "xfailed")
            and isinstance(fields[2], str)
        ):
            return None, "a malformed message"
        if fields[0] != nonce:
            return None, "a message of another call"
        return fields, None

    def judged(data, status, nonce, nodeid):
        # (kind, detail): the call's one signed result, or "raised" with what was wrong. The notes of every line
        # that is this call's (relayed notes, the result's) are merged, whatever else came.
        *lines, cut = data.split(b"\n")
        results = []
        for fields, problem in (verified(line, nonce) for line in lines):
            if fields is not None:
                merge({"audit": [fields[2]]} if fields[1] == "note" else fields[3], nodeid)
            if fields is None or fields[1] != "note":
                results.append((fields, problem))
        if signaled(status):
            return "raised", f"the forked call's process was killed by signal {signal_of(status)}"
        if exited(status) and status_of(status) == lost:
            return "raised", "the forked call's pipe to the harness was closed or replaced during the call"
        if not exited(status) or status_of(status):
            return "raised", f"the forked call's process exited with status {status_of(status)}"
        if not results:
            return "raised", "the forked call ended without saying how" + (" (a cut message)" if cut else "")
        if len(results) > 1 or cut:
            return "raised", f"the forked call's process wrote {len(results) + bool(cut)} messages, not one"
        fields, problem = results[0]
        if fields is None:
            return "raised", f"the forked call's process wrote {problem}"
        return fields[1], fields[2]

    def call(item, runtest):
        if active_count() > 1:
            return in_process(item, runtest)
        nonce = urandom(16).hex()
        reader, writer = pipe()
        pid = fork()
        if pid == 0:
            close(reader)
            child(item, runtest, writer, nonce)
        close(writer)
        # The child's message fits the pipe's buffer: waited for first, read after, so a process the call left
        # behind holding the pipe cannot keep the session waiting.
        status = waitpid(pid, 0)[1]
        set_blocking(reader, False)
        chunks, size = [], 0
        try:
            while size <= 4 * budget:
                chunk = read(reader, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except BlockingIOError:
            pass
        close(reader)
        kind, detail = judged(b"".join(chunks), status, nonce, item.nodeid)
        if kind == "ok":
            return
        if kind == "skipped":
            raise skip_exception(f"in gradeflow's varied run: {detail}")
        if kind == "xfailed":
            raise xfail_exception(f"in gradeflow's varied run: {detail}")
        raise AssertionError(f"in gradeflow's varied run (pytest's marks taken off the process): {detail}")

    def prepare(items):
        for item in items:
            path = getattr(item, "path", None)
            if path is not None:
                test_folders.add(os.path.dirname(str(path)))
            runtest = getattr(item, "runtest", None)
            if runtest is not None:
                item.runtest = forked(item, runtest)

    def forked(item, runtest):
        # What ``item.runtest`` becomes: reachable by the code under test, so its state is in keyword-only
        # defaults (no closure leads on to ``call``'s).
        def run(*, _item=item, _runtest=runtest, _call=call):
            return _call(_item, _runtest)

        return run

    return prepare, collecting
