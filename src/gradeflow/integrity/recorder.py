"""gradeflow's own result recorder for unittest-based runners (Django's ``runtests.py``, ``python -m unittest``).

A log the test command prints is forgeable: the candidate's code writes to the same stream (a patch that
prints ``test_x (m.C) ... ok``). So when a task reads its outcomes from a unittest-style log
(``tests.report: django-log``), every run also gets this recorder, and an outcome the log claims is kept
only when the recorder saw the same: a test the log says passed and the recorder did not see pass is a
forged report (``junit-tampered``).

How it records. The sandbox starts every interpreter through the harness folder (see
:mod:`gradeflow.integrity.boot`); there the recorder's ``.pth`` imports the recorder module at interpreter
start, before any code of the repository runs. It reads the run's key from standard input (the grader's
channel, never on the run's disk; standard input is then empty for whatever starts later) and keeps it,
the file it writes and the functions it calls in closures. An import hook wraps
``unittest.result.TestResult``'s outcome methods (``addSuccess``, ``addFailure``, ``addError``,
``addSkip``, ``addExpectedFailure``, ``addUnexpectedSuccess``, ``addSubTest``) the moment ``unittest.result``
is first imported: every runner's result class (``TextTestResult``, Django's) reaches them through
``super()``. Each outcome is one line ``[sequence, test id, outcome, HMAC-SHA256]``, written with
``os.write`` to a file opened at start.

What it does not stop: code of the repository that walks the stack to the result object and calls its
methods with a made-up test, or a runner whose result class reports without ``super()`` (its tests are then
missing from the record, and their passing log lines unconfirmed). The pytest harness's other checks
(canaries, the varied run, the audit of the test calls) need pytest and do not apply to these runs; the
tests component says so.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass

from gradeflow.integrity.harness import MODULE_PREFIX
from gradeflow.models.evidence import CaseOutcome, TestCaseResult

__all__ = ["RecordedRun", "Recorder", "read_recorded"]

_OUTCOMES: dict[str, CaseOutcome] = {
    "passed": "passed",
    "failed": "failed",
    "error": "error",
    "skipped": "skipped",
    "xfailed": "xfailed",
}

_SOURCE = '''"""Records every unittest outcome of this run, signed with the run's key."""


def _start(path):
    import hashlib
    import hmac
    import importlib.machinery
    import json
    import os
    import sys

    try:
        handed = json.loads(sys.stdin.buffer.read() or b"null")
        key = bytes.fromhex(handed["key"])
    except Exception:
        return  # not the run's first interpreter, or no channel: nothing to sign with
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    write, dumps, mac, sha256 = os.write, json.dumps, hmac.new, hashlib.sha256
    count = [0]

    def record(test, outcome):
        try:
            ident = test.id()
        except Exception:
            ident = None
        if not isinstance(ident, str):
            ident = "?"
        entry = [count[0], ident, outcome]
        count[0] += 1
        signed = dumps(entry).encode("utf-8")
        write(fd, (dumps([*entry, mac(key, signed, sha256).hexdigest()]) + "\\n").encode("utf-8"))

    outcomes = (
        ("addSuccess", "passed"),
        ("addFailure", "failed"),
        ("addError", "error"),
        ("addSkip", "skipped"),
        ("addExpectedFailure", "xfailed"),
        ("addUnexpectedSuccess", "failed"),
    )

    def wrap(cls):
        for name, outcome in outcomes:
            original = cls.__dict__.get(name)
            if original is None:
                continue

            def method(self, test, *args, _original=original, _outcome=outcome):
                record(test, _outcome)
                return _original(self, test, *args)

            setattr(cls, name, method)
        sub = cls.__dict__.get("addSubTest")
        if sub is not None:

            def addSubTest(self, test, subtest, err, _original=sub):
                if err is not None:
                    failure = getattr(test, "failureException", AssertionError)
                    record(test, "failed" if issubclass(err[0], failure) else "error")
                return _original(self, test, subtest, err)

            cls.addSubTest = addSubTest

    class Hook:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name != "unittest.result":
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return None
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                wrap(module.TestResult)

            spec.loader.exec_module = exec_module
            return spec

    loaded = sys.modules.get("unittest.result")
    if loaded is not None:
        wrap(loaded.TestResult)
    else:
        sys.meta_path.insert(0, Hook())


_start(__PATH__)
del _start
'''


@dataclass(frozen=True)
class RecordedRun:
    """What the recorder saw: each test id's outcomes, and every line that is not one signed entry."""

    cases: list[TestCaseResult]
    problems: list[str]


@dataclass(frozen=True)
class Recorder:
    """One run's recorder: a fresh module name, key and output file name."""

    nonce: str
    key: str

    @classmethod
    def fresh(cls) -> Recorder:
        return cls(nonce=secrets.token_hex(4), key=secrets.token_hex(32))

    @property
    def module(self) -> str:
        return f"{MODULE_PREFIX}{self.nonce}_unittest"

    @property
    def log_name(self) -> str:
        return f"recorder-{self.nonce}.jsonl"

    def files(self, path: str) -> dict[str, bytes]:
        """The harness folder's files: a ``.pth`` and the module it imports, which writes to ``path``."""
        source = _SOURCE.replace("__PATH__", json.dumps(path))
        return {f"{self.module}.pth": f"import {self.module}\n".encode(), f"{self.module}.py": source.encode()}

    def channel(self) -> bytes:
        """The run's standard input: the key, read whole by the first interpreter the command starts."""
        return json.dumps({"key": self.key}).encode()


def read_recorded(data: bytes, key: str, max_cases: int) -> RecordedRun:
    """The recorder's file as cases (``classname`` and ``name`` from unittest's ``module.Class.test``), with
    every line that is not an entry signed with ``key`` in its place listed as a problem (the first three)."""
    cases: list[TestCaseResult] = []
    problems: list[str] = []
    secret = bytes.fromhex(key)
    for number, line in enumerate(data.splitlines()):
        try:
            sequence, ident, outcome, signature = json.loads(line)
            if not isinstance(ident, str) or outcome not in _OUTCOMES or not isinstance(signature, str):
                raise ValueError
        except (ValueError, TypeError):
            problems.append(f"line {number + 1} of gradeflow's recorder file is not an entry it writes")
            continue
        signed = json.dumps([sequence, ident, outcome]).encode("utf-8")
        expected = hmac.new(secret, signed, hashlib.sha256).hexdigest()
        if sequence != number or not hmac.compare_digest(signature, expected):
            problems.append(f"line {number + 1} of gradeflow's recorder file is not signed with the run's key")
            continue
        if len(cases) < max_cases:
            classname, _, name = ident.rpartition(".")
            cases.append(TestCaseResult(classname=classname, name=name, outcome=_OUTCOMES[outcome]))
    return RecordedRun(cases=cases, problems=problems[:3])
