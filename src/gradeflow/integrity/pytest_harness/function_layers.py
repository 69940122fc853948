"""The test functions checked layer by layer (``_test_functions``): the function each test runs, through its
decorators, must come from the test's own file (at a ``def`` of its name, or a decorator line) or from a file that is a
layer of a test on the base as well, and one of its own-file layers must be the function of the test's name; checked
when collection ends and again as the test is called. A test function swapped for the repository's code, or for
another test of its file, is in the record's ``misplaced_code`` or ``foreign_code``, compared with the base run's."""

from typing import Any


def _test_functions(record, handed, recoded):
    # Returns check_test_function(item, at_call=False). ``handed``: the test sources the grader handed over (path ->
    # text); ``recoded[0]``: set by the audit hook when any function's code was assigned.
    import sys
    import sysconfig

    identity = object.__hash__  # as id(), unaudited (see _pytest_internals)
    sources: dict[str, list[str]] = {}  # path -> its lines

    def defined_at(path, code):
        # The file's own line says so: a code object claiming the test's file starts at a ``def`` of its
        # name there, or at a decorator line (the file is sealed for the task's tests).
        lines = sources.get(path)
        if lines is None and isinstance(handed.get(path), str):
            lines = sources[path] = handed[path].splitlines()
        if lines is None:
            try:
                with open(path, "rb") as handle:
                    lines = handle.read().decode("utf-8", "replace").splitlines()
            except OSError:
                lines = []
            sources[path] = lines
        if not 0 < code.co_firstlineno <= len(lines):
            return not lines
        line = lines[code.co_firstlineno - 1].lstrip()
        if line.startswith("@"):
            return True
        return line.startswith(("def ", "async def ")) and code.co_name in line

    installed = tuple(
        {p.rstrip("/") + "/" for p in [sys.prefix, sys.base_prefix, *sysconfig.get_paths().values()] if p}
    )

    checked: dict[int, Any] = {}  # identity(item) -> (item, the function checked when collection ended)

    def check_test_function(item, at_call=False):
        # An item whose function cannot be inspected is listed as if it were misplaced: compared with the
        # base like the others, so a plugin's odd item is no alarm and an attacker gains nothing by it.
        # At its call, an item still holding the very function checked when collection ended is left alone
        # unless some function's code was assigned since that check (``recoded``, set by the audit hook): nothing
        # else changes the code its layers run.
        try:
            if at_call:
                taken = checked.get(identity(item))
                if taken is not None and not recoded[0] and getattr(item, "obj", None) is taken[1]:
                    return
            inspect_test_function(item, at_call)
            if not at_call:
                checked[identity(item)] = (item, getattr(item, "obj", None))
        except Exception:
            note_misplaced(item)

    def note_misplaced(item):
        if item.nodeid not in record["misplaced_code"]:
            record["misplaced_code"].append(item.nodeid)

    def inspect_test_function(item, at_call):
        # The function called as the test, layer by layer through decorators: each layer's code comes
        # from the test's own file or from a file the base run's tests also have as a layer. Every item
        # is checked when collection ends (so the base's record covers tests -x never ran), and again as
        # it is called, where a wrapper an installed plugin adds then (pytest-asyncio) is not counted.
        # One layer from the test's own file must be the function of the test's name: another test of the
        # file put in its place (at import, by the code under test) is defined there too, under its own name.
        function = getattr(item, "obj", None)
        own = str(getattr(item, "path", ""))
        name = getattr(item, "originalname", None) or str(getattr(item, "name", "")).partition("[")[0]
        own_layers = named = 0
        for _ in range(12):
            function = getattr(function, "__func__", function)
            code = getattr(function, "__code__", None)
            if code is None:
                break
            where = code.co_filename
            if where == own:
                own_layers += 1
                named = named or code.co_name == name
                if not defined_at(own, code):
                    note_misplaced(item)
            elif where not in record["foreign_code"] and not (at_call and where.startswith(installed)):
                record["foreign_code"].append(where)
            function = getattr(function, "__wrapped__", None)
            if function is None:
                break
        if own_layers and not named:
            note_misplaced(item)

    return check_test_function
