"""Change reach (``_change_reach``): which of the lines the patch changed outside its tests each selected test ran, in a
function's code, through ``sys.monitoring`` (Python 3.12+) or a trace function: the record's ``reached``."""

from typing import Any


def _change_reach(config, record):
    # The test-evidence candidate run's tracer: which of the lines the patch changed outside its tests (``reach``:
    # repository-relative file -> line numbers, every one inside a function) each selected test ran, from its
    # setup to its teardown, in the code of a function (a module or class body run by an import does not count).
    # ``record["reached"]``: node id -> ``file:line`` entries; ``record["reach_unmeasured"]``: the node ids run
    # while another trace function was set (Python before 3.12). Returns (start, stop), or None without ``reach``.
    # Only those files are looked at: sys.monitoring (3.12+) turns off every other line after its first event; the
    # trace function (3.11) tells a frame's file by its globals' ``__file__`` before reading its code.
    import os
    import sys

    wanted, workspace = config.get("reach"), config.get("workspace")
    if not wanted or not workspace:
        return None
    realpath, join, isabs, cwd, dict_get = os.path.realpath, os.path.join, os.path.isabs, os.getcwd(), dict.get
    targets = {realpath(join(workspace, rel)): (rel, frozenset(lines)) for rel, lines in wanted.items()}
    reached: dict[str, list[str]]
    unmeasured: list[str]
    files: dict[str, Any]
    reached, unmeasured, files, hits, canaries = {}, [], {}, set(), frozenset(config.get("canaries") or ())
    record["reached"], record["reach_unmeasured"] = reached, unmeasured

    def target(name):
        if type(name) is not str:
            return None
        found = files.get(name, files)
        if found is files:
            found = files[name] = targets.get(realpath(name if isabs(name) else join(cwd, name)))
        return found

    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        tool = None
        for candidate in (4, 3):
            if monitoring.get_tool(candidate) is None:
                monitoring.use_tool_id(candidate, "gradeflow-reach")
                tool = candidate
                break
        if tool is None:
            monitoring = None
    if monitoring is not None:
        line_event, disable = monitoring.events.LINE, monitoring.DISABLE

        def on_line(code, line):
            found = target(code.co_filename)
            if found is not None and code.co_flags & 2 and line in found[1]:  # 2: CO_NEWLOCALS, a function's code
                hits.add(f"{found[0]}:{line}")
            return disable

        monitoring.register_callback(tool, line_event, on_line)

        def begin():
            monitoring.set_events(tool, line_event)
            return True

        def end():
            monitoring.set_events(tool, 0)
            monitoring.restart_events()
    else:

        def tracer(frame, event, arg):
            scope = frame.f_globals
            if event != "call" or type(scope) is not dict or target(dict_get(scope, "__file__")) is None:
                return None
            code = frame.f_code
            found = target(code.co_filename)
            if found is None or not code.co_flags & 2:
                return None
            rel, lines = found

            def local(frame, event, arg):
                if event == "line" and frame.f_lineno in lines:
                    hits.add(f"{rel}:{frame.f_lineno}")
                return local

            return local

        def begin():
            if sys.gettrace() is not None:
                return False
            sys.settrace(tracer)
            return True

        def end():
            sys.settrace(None)

    def start(item):
        if item.name in canaries:
            return False
        hits.clear()
        if not begin():
            unmeasured.append(item.nodeid)
            return False
        return True

    def stop(item):
        end()
        reached[item.nodeid] = sorted(hits)

    return start, stop
