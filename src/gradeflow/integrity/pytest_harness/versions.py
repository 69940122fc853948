"""CPython's dict version tags (PEP 509), the harness's cheap "was this namespace written to": ``_native`` loads ctypes
once (making the process undumpable too) and unloads it again, ``_dict_versions`` makes the tag reader after a
start-up self-test, and ``_held`` is the check run after every call that namespace entries still hold their values,
by identity and in C, compared only when a namespace's tag moved."""

from typing import Any


def _native(undumpable):
    # What the harness itself needs of ctypes, loaded once before any code of the repository runs: (if
    # ``undumpable``) prctl(PR_SET_DUMPABLE, 0), so /proc/<pid>/mem of this process is closed to every other process
    # of its user; and the reader of dicts' version tags (_dict_versions), or None. The ctypes modules this loads
    # are unloaded again: the repository's code finds none in sys.modules, and importing one is refused by the
    # audit hook (an installed package may still load it for itself).
    import sys

    loaded = set(sys.modules)
    versions = None
    try:
        import ctypes

        if undumpable:
            ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
        versions = _dict_versions(ctypes)
    except (ImportError, OSError, AttributeError):
        pass
    for name in [n for n in sys.modules if n not in loaded and n.partition(".")[0] in ("ctypes", "_ctypes")]:
        del sys.modules[name]
    return versions


def _dict_versions(ctypes):
    # CPython's dict version tag (PEP 509: a 64-bit number after the object's header and its size, given a new
    # value from a process-wide counter by every change of the dict, kept though deprecated since 3.12): a
    # function ``namespace -> reader`` whose ``value`` is that tag now (a class's mappingproxy: its class's dict).
    # No Python API reads it, so the reader is a ctypes word at the dict's address, made once per dict and held
    # only by the per-call checks. None where a dict of our own does not behave so (another layout, a build that
    # no longer counts): the checks then compare every value every time, as before.
    import gc

    offset, word, proxy = 3 * ctypes.sizeof(ctypes.c_ssize_t), ctypes.c_uint64, type(type.__dict__)

    def reader(namespace):
        if type(namespace) is proxy:
            inner = gc.get_referents(namespace)
            if len(inner) != 1 or type(inner[0]) is not dict:
                return None
            namespace = inner[0]
        if type(namespace) is not dict:
            return None
        return word.from_address(id(namespace) + offset)

    class Probe:
        pass

    def set_item(space, name, value):
        if type(space) is dict:
            space[name] = value
        else:
            setattr(Probe, name, value)

    for sample in ({}, {"kept": 1}, vars(Probe)):
        tag = reader(sample)
        if tag is None:
            return None
        readings = [tag.value]
        for name, value in (("a", 1), (None, None), ("a", 2), ("b", 3)):
            if name is not None:
                set_item(sample, name, value)
            readings.append(tag.value)
        # Each write gives a new tag, a read none.
        if not (readings[0] != readings[1] == readings[2] != readings[3] != readings[4]):
            return None
    # One counter for the whole process gives every write its tag (3.12 and 3.13 keep watcher flags in the low
    # bits, below the counter's step): a tag greater than one taken at some moment tells a write made since then,
    # even to a dict whose tag was never read before (see _call_writes).
    first: dict[int, int]
    second: dict[int, int]
    first, second = {}, {}
    earlier, later = reader(first), reader(second)
    first[0] = 1
    before = earlier.value
    second[0] = 1
    between = later.value
    first[0] = 2
    if not before < between < earlier.value:
        return None
    return reader


def _held(entries, versions=None):
    # A check that each ``(namespace, name, value)`` entry's name still holds its value, by identity; True when one
    # does not (or was removed). Made for checks run after every test call, so run in C: per namespace one
    # ``itemgetter`` of all its names (a dict's or a class's ``mappingproxy``), the values chained and compared by
    # ``is not``; no method of a value runs. Entries of one namespace come together (each caller lists a namespace's
    # entries in a row), so a run of entries of the same namespace is one group: no audited ``id()`` per entry.
    # With ``versions`` (see _dict_versions), the comparison runs only when one of the namespaces changed at all
    # since the last check that found every value in place: a namespace nothing wrote to holds what it held.
    from itertools import chain
    from operator import attrgetter, is_not, itemgetter

    try:
        from operator import call
    except ImportError:  # Python 3.10 and older (a task's own interpreter): the same, one Python frame more

        def call(function):  # type: ignore[misc]
            return function()

    groups: list[Any] = []
    for namespace, name, value in entries:
        if not groups or groups[-1][0] is not namespace:
            groups.append((namespace, [], []))
        groups[-1][1].append(name)
        groups[-1][2].append(value)
    spaces: Any
    getters: Any
    originals: Any
    spaces, getters, originals = [], [], []
    for namespace, names, values in groups:
        if len(names) == 1:  # an itemgetter of one name returns the value itself, not a tuple of one
            names, values = names * 2, values * 2
        spaces.append(namespace)
        getters.append(itemgetter(*names))
        originals += values
    spaces, getters, originals = tuple(spaces), tuple(getters), tuple(originals)
    any_, map_, flat, list_ = any, map, chain.from_iterable, list

    def changed():
        try:
            return any_(map_(is_not, flat(map_(call, getters, spaces)), originals))
        except Exception:  # a name removed: the caller's own walk tells which
            return True

    tags = tuple(versions(space) for space in spaces) if versions is not None and spaces else None
    if tags is None or None in tags:
        return changed
    value, seen = attrgetter("value"), list_(map_(attrgetter("value"), tags))

    def changed_since(*, _tags=tags, _seen=seen, _value=value, _changed=changed):
        # The tags are read before the values: a write made meanwhile leaves a tag the next check does not know.
        now = list_(map_(_value, _tags))
        if now == _seen:
            return False
        if _changed():
            return True
        _seen[:] = now
        return False

    return changed_since
