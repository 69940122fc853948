"""Claimed classes (``_claimed_classes``): ``isinstance`` believes the class an object says it has (``__class__``), and
an object of the repository can say another (a ``__class__`` property, a ``__getattribute__`` answering for it, the
name built at run time where no scan reads it). The verdict helpers that decide by ``isinstance`` are wrapped before
anything of the repository is imported: pytest's check of a raised exception's type (``_pytest.raises`` on pytest 9),
``ExceptionInfo.errisinstance`` and unittest's ``assertIsInstance``. Where ``isinstance`` says yes and the object's own
type says no, and that type is the repository's, the helper answers as the type says (the test fails as it would for
the wrong class) and ``claimed class <module>.<name>`` is noted in ``patched``, which the grader compares with the base
run's. An object of elsewhere (``unittest.mock``'s ``spec``) is left as ``isinstance`` has it."""


def _claimed_classes(workspace, note):
    # Issue 33: a wrong exception class whose instances answer ``__class__`` with the expected one passed
    # ``pytest.raises(ZeroDivisionError)``. Each wrapper asks the object's own type (``type()``, which no attribute
    # of the object answers) whether it is of the expected class, and only when isinstance believed otherwise.
    # Their state is in keyword-only defaults, not closures: code under test reaches these functions, and a
    # closure's cells are read without an audit event (``__kwdefaults__`` is audited, and refused for the plugin's).
    import sys

    prefix = (workspace or "/nonexistent").rstrip("/") + "/"
    type_, issubclass_, isinstance_, getattr_, modules = type, issubclass, isinstance, getattr, sys.modules

    def claimed(value, expected):
        """The repository's class of ``value`` when it claims to be ``expected`` and is not, else ``None``."""
        kind = type_(value)
        try:
            if issubclass_(kind, expected):
                return None
        except TypeError:  # not a class or a tuple of classes: the helper's own check says so
            return None
        module = modules.get(getattr_(kind, "__module__", None) or "")
        file = getattr_(module, "__file__", None) or ""
        if not (isinstance_(file, str) and file.startswith(prefix)):
            return None
        label = f"claimed class {getattr_(kind, '__module__', '?')}.{getattr_(kind, '__qualname__', '?')}"
        note(label)
        return label

    raises = modules.get("_pytest.raises")
    check_raw_type = getattr_(raises, "_check_raw_type", None)
    if check_raw_type is not None:

        def _check_raw_type(expected_type, exception, *, _check=check_raw_type, _claimed=claimed):
            found = _check(expected_type, exception)
            if found is None and expected_type not in (None, ()):
                label = _claimed(exception, expected_type)
                if label is not None:
                    return f"{label}: not an instance of the expected class, though it says it is"
            return found

        setattr(raises, "_check_raw_type", _check_raw_type)  # noqa: B010 - raises is typed Module | None

    from _pytest._code.code import ExceptionInfo

    errisinstance = ExceptionInfo.errisinstance

    def _errisinstance(self, exc, *, _check=errisinstance, _claimed=claimed):
        return _check(self, exc) and _claimed(self.value, exc) is None

    ExceptionInfo.errisinstance = _errisinstance  # type: ignore[method-assign]

    import unittest

    assert_is_instance = unittest.TestCase.assertIsInstance

    def assertIsInstance(self, obj, cls, msg=None, *, _check=assert_is_instance, _claimed=claimed):
        _check(self, obj, cls, msg)
        label = _claimed(obj, cls)
        if label is not None:
            self.fail(self._formatMessage(msg, f"{label} is not an instance of {cls!r}, though it says it is"))

    unittest.TestCase.assertIsInstance = assertIsInstance  # type: ignore[method-assign]
