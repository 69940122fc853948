"""gradeflow's own part of every pytest run: a plugin loaded by path and two canary tests.

Each run gets a fresh nonce. The plugin (assembled from :mod:`gradeflow.integrity.pytest_harness` and compiled
once per grader process: see :mod:`gradeflow.integrity.plugin_files`) goes into the sandbox's harness folder,
outside the repository, under a module name with the nonce, and is loaded with ``-p`` through ``PYTEST_ADDOPTS``.
It writes a record next to the report: the plugins loaded, what was collected, how each test's call
ended before any report hook could rewrite it, pytest's own exit status and the hash of the JUnit report
as pytest wrote it. Each call is also appended to a log the
moment it ends, through a descriptor the plugin opened before any code of the repository was imported;
its state lives in a closure, not in module globals the code under test could swap. A record rewritten
later (at exit, by a replaced writer) then disagrees with the log. The canaries (one must pass, one must fail)
are written into the tree beside the task's tests, named like them, and added to the session whatever
paths, ``-k`` or ``-x`` the command uses.

A candidate run loads exactly the pytest plugins the base run loaded: autoload is off and the base's
entry-point plugins are named with ``-p``; the record then shows any other plugin file that loaded.
:func:`check_run` lists every way the run disagrees with the record (``junit-tampered``).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field, ValidationError

from gradeflow.integrity.boot import boot_files
from gradeflow.integrity.handed import PLACEHOLDER
from gradeflow.integrity.plugin_files import plugin_files
from gradeflow.integrity.signing import parse_log, record_signature_problems, split_signed
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import CaseOutcome, HarnessSummary, PluginRef, TestCaseResult
from gradeflow.models.testids import file_of_test_id, split_test_id
from gradeflow.sandbox.base import Sandbox

__all__ = [
    "MODULE_PREFIX",
    "Harness",
    "HarnessRecord",
    "Places",
    "RunFacts",
    "Varied",
    "check_run",
    "read_record",
    "record_cases",
    "run_places",
    "summarize",
]

MAX_RECORD_BYTES = 64 * 1024 * 1024
MODULE_PREFIX = "_plugin_"
"""How the harness's module names begin (the plugin, its boot module, the unittest recorder): no word of them
names gradeflow, since the code under test sees them (``PYTEST_ADDOPTS``, ``sys.modules``, pytest's plugins)."""
_WORDS = ("value", "parse", "result", "empty", "order", "format", "limit", "default", "config", "round")


class HarnessRecord(BaseModel):
    """What the plugin wrote (untrusted: the candidate's code ran in the same process)."""

    nonce: str
    started: float = 0.0
    plugins: list[dict[str, str | None]] = Field(default_factory=list)
    entrypoint_modules: list[str] = Field(default_factory=list)
    collected: list[str] = Field(default_factory=list)
    calls: dict[str, str] = Field(default_factory=dict)
    exitstatus: int | None = None
    junit_sha256: str | None = None
    finished: bool = False
    patched: list[str] = Field(default_factory=list)
    """pytest internals and hook functions found replaced during the run (``_pytest.runner.call_and_report``)."""
    foreign_code: list[str] = Field(default_factory=list)
    """Files, other than a test's own, whose code ran as a layer of a test function (decorators)."""
    misplaced_code: list[str] = Field(default_factory=list)
    """Tests whose function claims its own file but matches no function defined there."""
    hook_files: list[tuple[str, str, str]] = Field(default_factory=list)
    """``(hook, file, code digest)`` for every implementation of a hook that makes test outcomes, by where its
    code is and what it is."""
    marked: dict[str, list[str]] = Field(default_factory=dict)
    """Node id → the expected-outcome markers its test carries (``xfail``, ``skip``)."""
    raisers: dict[str, str] = Field(default_factory=dict)
    """Node id → the file a skip or xfail raised during its call came from."""
    namespaces: list[str] = Field(default_factory=list)
    """``file name`` for each name a test module imported, or attribute of a test class, that was not what a
    fresh resolution gave when collection ended, or was rebound (or added, removed) during the run."""
    conftests: list[str] = Field(default_factory=list)
    """``conftest.py`` files of the workspace loaded that the grader did not hand over (made during the run), and
    handed test modules or conftest files that were not loaded from the handed text (``file (not served)``)."""
    audit: list[tuple[str, str, str]] = Field(default_factory=list)
    """``(event, workspace file, detail)`` for what the repository's code did at run time that honest library
    code does not (the runtime audit hook: compile/exec of code from no file, settrace, gc walks, ctypes,
    marshal, new code objects, writing .py/.pyc/conftest.py files into the tree)."""
    compared: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Node id → ``file:line:operand:methods`` → where the equality of each compared value comes from (see
    :attr:`~gradeflow.models.evidence.HarnessSummary.compared`; files absolute here)."""
    reached: dict[str, list[str]] = Field(default_factory=dict)
    """Node id → the ``file:line`` entries of :attr:`Harness.reach` its test ran (test-evidence candidate runs)."""
    reach_unmeasured: list[str] = Field(default_factory=list)
    """Node ids run while another trace function was set (Python before 3.12): their reach is unknown."""
    signed: bool = False
    """The record carried a signature made with the run's key (filled by :func:`read_record`)."""
    signature_problems: list[str] = Field(default_factory=list)
    """The record's and the call log's signatures that are missing or not the run key's (see :func:`read_record`);
    a problem only where the base run's record was signed."""
    logged: dict[str, str] | None = None
    """The calls as the log has them (``None``: no log); filled by :func:`read_record`, not by the plugin."""
    log_problems: list[str] = Field(default_factory=list)


_MAIN_NAMES = ("main", "app", "run", "cli", "manage", "service", "server", "tool")


@dataclass(frozen=True)
class Varied:
    """What a varied run changes in each test's call, drawn per run by :meth:`drawn` (for
    :mod:`gradeflow.tasks.varied`)."""

    main: str
    """The file ``__main__`` and ``sys.argv`` name in the call, as for a script a user runs (``{workspace}``
    stands for the run's workspace)."""
    recursion: int
    """Frames added to the recursion limit in the call, on top of the run's own."""

    @classmethod
    def drawn(cls) -> Varied:
        """New random values. (The varied run sets no ``PYTHONHASHSEED``: Python draws its own, unless the
        task's ``env`` pins one.)"""
        draw = secrets.SystemRandom()
        main = f"{{workspace}}/{draw.choice(_MAIN_NAMES)}.py"
        return cls(main=main, recursion=draw.randrange(200, 1200))


@dataclass(frozen=True)
class Harness:
    """One run's plugin module, canary file and canary names."""

    nonce: str
    canary_file: str
    """Repository-relative path of the canary test file."""
    must_pass: str
    must_fail: str
    select: tuple[str, ...] | None = None
    """Only these tests run (node ids, or test files run whole), the canaries beside them; ``None``: all."""
    key: str = ""
    """A secret of this run (hex), handed to the plugin on standard input, never written where the run can read it."""
    recursion: int = 0
    """Frames added to Python's recursion limit for this run (drawn per run: the room left is no mark of a test)."""
    varied: Varied | None = None
    """Set for a varied run (:class:`Varied`): each selected test's call runs in a child with pytest's marks off."""
    reach: dict[str, tuple[int, ...]] | None = None
    """Repository-relative file → the lines the patch changed in it outside its tests, each inside a function
    (see :mod:`gradeflow.tasks._reach`): the plugin records which of them each test ran (test-evidence runs)."""
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)
    """Repository-relative path → the text of a test module or ``conftest.py`` the plugin serves from memory
    (see :mod:`gradeflow.integrity.handed`); the canary file is added by :meth:`channel`."""

    @classmethod
    def fresh(cls, task_spec: TaskSpec, tree: Path, select: list[str] | None = None) -> Harness:
        """A new nonce, and canary names shaped like the task's own tests, in their folder."""
        nonce = secrets.token_hex(4)
        folder, stem = _canary_home(task_spec, tree)
        first, second = secrets.SystemRandom().sample(_WORDS, 2)
        name = f"{stem}_{first}_{nonce[:4]}.py" if stem else f"test_{first}_{nonce[:4]}.py"
        return cls(
            nonce=nonce,
            canary_file=str(PurePosixPath(folder, name)) if folder else name,
            must_pass=f"test_{first}_{nonce[4:]}",
            must_fail=f"test_{second}_{nonce[4:]}",
            select=None if select is None else tuple(select),
            key=secrets.token_hex(32),
            recursion=secrets.randbelow(1000),
        )

    @property
    def module(self) -> str:
        return f"{MODULE_PREFIX}{self.nonce}"

    @property
    def record_name(self) -> str:
        return f"harness-{self.nonce}.json"

    @property
    def log_name(self) -> str:
        """The log each test's call is appended to as it ends (one JSON ``[nodeid, result]`` per line)."""
        return f"harness-{self.nonce}.calls"

    def channel(self, workspace: str) -> bytes:
        """What the run's standard input carries to the plugin, read whole before any code of the repository runs.

        One JSON document: ``key`` (this run's secret) and ``sources`` (the absolute path under ``workspace``,
        as the sandbox sees it, → the text the plugin serves for it: :attr:`sources` and the canary file).
        Nothing of it is ever on the run's disk, and standard input is left empty once read, so what the
        command starts later cannot read it back.
        """
        root = workspace.rstrip("/")
        sources = {f"{root}/{rel}": text for rel, text in self.sources.items()}
        sources[f"{root}/{self.canary_file}"] = self._canary_source()
        handed: dict[str, object] = {"key": self.key, "sources": sources}
        if self.varied is not None:
            main = self.varied.main.replace("{workspace}", root)
            handed["varied"] = {"main": main, "recursion": self.varied.recursion}
        return json.dumps(handed).encode()

    def write_canaries(self, tree: Path) -> None:
        """Write the canary file's placeholder into ``tree`` (its tests come through :meth:`channel`); before
        the sandbox opens, which may copy the tree."""
        (tree / self.canary_file).parent.mkdir(parents=True, exist_ok=True)
        (tree / self.canary_file).write_text(PLACEHOLDER)

    def install(self, sandbox: Sandbox, base: HarnessSummary | None) -> dict[str, str]:
        """Put the plugin into the sandbox; the variables the run needs.

        ``base`` is the base run's summary: given, autoload is off and only its plugins load.
        """
        workspace = sandbox.workspace.rstrip("/")
        config = {
            "nonce": self.nonce,
            "record": sandbox.output_path(self.record_name),
            "calls": sandbox.output_path(self.log_name),
            "canary_file": f"{workspace}/{self.canary_file}",
            "workspace": workspace,
            "canaries": [self.must_pass, self.must_fail],
            "must_fail": self.must_fail,
            "select": None if self.select is None else list(self.select),
            "channel": True,
            "recursion": self.recursion,
            "reach": None if self.reach is None else {path: list(lines) for path, lines in self.reach.items()},
        }
        options = [f"-p {self.module}"]
        variables = {}
        if base is not None:
            variables["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
            options += [f"-p {module}" for module in base.entrypoint_modules]
            if base.entrypoint_modules:
                # Loaded by name, a plugin's module another imported first is past rewriting, and pytest says so:
                # an error under ``filterwarnings = error`` before any test runs. The base, autoloading, had them
                # all marked for rewriting before it imported any: the candidate's runs ignore that warning.
                options.append("-W ignore::pytest.PytestAssertRewriteWarning")
        # The variables alone would not do: a command may replace them (see gradeflow.integrity.boot).
        files = {**plugin_files(self.module, config), **boot_files(self.module, options, variables)}
        folder = sandbox.install_harness(files)
        return {"PYTHONPATH": folder, **variables, "PYTEST_ADDOPTS": " ".join(options)}

    def remove(self, tree: Path) -> None:
        """Take the canary file out of the tree again."""
        (tree / self.canary_file).unlink(missing_ok=True)

    def is_canary(self, case: TestCaseResult) -> bool:
        return case.name in (self.must_pass, self.must_fail)

    def _canary_source(self) -> str:
        n = int(self.nonce, 16) % 9000 + 1000
        total = n * (n - 1) // 2
        return (
            f"def {self.must_pass}():\n    assert sum(range({n})) == {total}\n\n\n"
            f"def {self.must_fail}():\n    assert sum(range({n})) == {total + 1}\n"
        )


def _canary_home(task_spec: TaskSpec, tree: Path) -> tuple[str, str]:
    """The folder of the task's first test file and that file's stem (``tests``, ``test_calc``)."""
    spec = task_spec.tests
    for test_id in [*spec.fail_to_pass, *spec.pass_to_pass]:
        path = file_of_test_id(test_id)
        if path and (tree / path).is_file():
            pure = PurePosixPath(path)
            return ("" if str(pure.parent) == "." else str(pure.parent)), pure.stem
    for folder in ("tests", "test", "testing"):
        if (tree / folder).is_dir():
            return folder, ""
    return "", ""


def read_record(sandbox: Sandbox, harness: Harness) -> HarnessRecord | None:
    """The plugin's record of this run, or ``None`` when absent or unreadable."""
    try:
        found = sandbox.read_output(harness.record_name, MAX_RECORD_BYTES)
    except ValueError:
        return None
    if found is None:
        return None
    body, signature = split_signed(found[0])
    try:
        record = HarnessRecord.model_validate_json(body)
    except ValidationError:
        return None
    if record.nonce != harness.nonce:
        return None
    unsigned = record_signature_problems(body, signature, harness.key)
    record = record.model_copy(update={"signed": not unsigned, "signature_problems": unsigned})
    try:
        log = sandbox.read_output(harness.log_name, MAX_RECORD_BYTES)
    except ValueError:
        return record.model_copy(update={"log_problems": ["the harness's call log is over its size limit"]})
    if log is None:
        return record
    logged, problems, unsigned = parse_log(log[0], harness.key)
    update = {"logged": logged, "log_problems": problems, "signature_problems": record.signature_problems + unsigned}
    return record.model_copy(update=update)


Places = tuple[tuple[str, str], ...]
"""Folders whose paths differ from run to run, each with the name it is written as (``.`` for the workspace)."""


def run_places(sandbox: Sandbox) -> Places:
    """The workspace, the environment's folders (a copy of the task's environment per run, elsewhere each time)
    and the sandbox's other folders of its own (the view of gradeflow's site folder)."""
    places = [(sandbox.workspace, ".")]
    places += [(path, f"${name}") for name, path in sorted(sandbox.environment_roots().items())]
    places += [(path, f"${name}") for name, path in sorted(sandbox.shown_folders().items())]
    return tuple(places)


def summarize(
    record: HarnessRecord, harness: Harness, cases: list[TestCaseResult], places: Places, exit_code: int | None
) -> HarnessSummary:
    """The plugins the run loaded and whether the canaries behaved, for later runs to be checked against."""
    canaries = not _canary_problems(harness, cases)
    return HarnessSummary(
        plugins=_plugins(record, harness, places),
        hook_files=_hook_files(record, places),
        entrypoint_modules=sorted(set(record.entrypoint_modules)),
        canaries=canaries,
        exit_reports_failures=canaries and exit_code not in (None, 0),
        patched=sorted(set(record.patched)),
        foreign_code=sorted({_relative(f, places) for f in record.foreign_code}),
        misplaced_code=sorted(set(record.misplaced_code)),
        marked=dict(record.marked),
        raisers={nodeid: _relative(file, places) for nodeid, file in record.raisers.items()},
        audit=_audited(record, places),
        namespaces=_namespaced(record, places),
        signed=record.signed,
        compared=_compared(record, places),
        reached={nodeid: sorted(set(found)) for nodeid, found in record.reached.items()},
        reach_unmeasured=sorted(set(record.reach_unmeasured)),
        conftests=sorted({_relative(f, places) for f in record.conftests}),
    )


def _compared(record: HarnessRecord, places: Places) -> dict[str, dict[str, str]]:
    """The record's compared values, each place's file named as in :func:`_relative`."""
    return {
        nodeid: {_relative(place, places): found for place, found in entries.items()}
        for nodeid, entries in record.compared.items()
    }


def _namespaced(record: HarnessRecord, places: Places) -> list[str]:
    """The record's rebound test-module names, each file named as in :func:`_relative`."""
    found = set()
    for label in record.namespaces:
        file, _, name = label.partition(" ")
        found.add(f"{_relative(file, places)} {name}")
    return sorted(found)


def _audited(record: HarnessRecord, places: Places) -> list[str]:
    """``event file`` for each runtime audit entry, the file named as in :func:`_relative`."""
    return sorted({f"{event} {_relative(file, places)}" for event, file, _detail in record.audit})


def _relative(file: str, places: Places) -> str:
    """``file`` named from the place it is under (``./tests/x.py``, ``$env/lib/...``), else as it is."""
    for root, name in places:
        prefix = root.rstrip("/") + "/"
        if file.startswith(prefix):
            return f"{name}/{file[len(prefix) :]}"
    return file


def _hook_files(record: HarnessRecord, places: Places) -> list[str]:
    """``hook file`` for every implementation of a watched hook, its file named as in :func:`_relative`.

    Outside the workspace (pytest, installed plugins) the code's digest is added: those files are the same
    in every run, so a function that only claims one of them is told apart. In the workspace the file is
    enough (a plugin project's own hooks may change with the patch). pytest's own conftest modules are
    left out: they are sealed with the tree (reset to the base's), like the plugins list.
    """
    found = set()
    for hook, file, digest in record.hook_files:
        if PurePosixPath(file).name == "conftest.py":
            continue
        where = _relative(file, places)
        found.add(f"{hook} {where}" if where.startswith("./") else f"{hook} {where} @{digest}")
    return sorted(found)


def _plugins(record: HarnessRecord, harness: Harness, places: Places) -> list[PluginRef]:
    found: dict[tuple[str, str | None], PluginRef] = {}
    for entry in record.plugins:
        module, file = entry.get("module") or "", entry.get("file")
        if module == harness.module or (file and PurePosixPath(file).name == "conftest.py"):
            continue  # conftest files are sealed with the tree, not here
        if file:
            file = _relative(file, places)
        found[(module, file)] = PluginRef(module=module, file=file)
    return sorted(found.values(), key=lambda p: (p.module, p.file or ""))


def _canary_problems(harness: Harness, cases: list[TestCaseResult]) -> list[str]:
    outcome = {c.name: c.outcome for c in cases if harness.is_canary(c)}
    problems = []
    if outcome.get(harness.must_pass) != "passed":
        problems.append(f"a grader-owned test that must pass is {outcome.get(harness.must_pass, 'missing')}")
    if outcome.get(harness.must_fail) != "failed":
        problems.append(f"a grader-owned test that must fail is {outcome.get(harness.must_fail, 'missing')}")
    return problems


def record_cases(record: HarnessRecord, names: frozenset[str] | None = None) -> list[TestCaseResult]:
    """The record's calls as testcases, named the way pytest's JUnit writer names node ids.

    ``names``: only the cases with one of these names (:func:`~gradeflow.tasks._junit.names_in` the ids
    asked about), so a suite of 10,000 tests does not build 10,000 cases to look up a few.
    """
    cases = []
    calls = record.logged if record.logged is not None else record.calls
    for nodeid, call in calls.items():
        path, *parts = split_test_id(nodeid)  # a ``::`` inside ``[...]`` belongs to the name, as in JUnit
        if not parts or (names is not None and parts[-1] not in names):
            continue
        module = path[:-3] if path.endswith(".py") else path
        classname = ".".join([module.replace("/", "."), *parts[:-1]])
        outcome = _CALL_OUTCOMES.get(call, "failed")
        # Built without validation: every field is a str taken from the record, the outcome one of three.
        cases.append(TestCaseResult.model_construct(classname=classname, name=parts[-1], file=path, outcome=outcome))
    return cases


_CALL_OUTCOMES: dict[str, CaseOutcome] = {"ok": "passed", "skipped": "skipped"}


@dataclass(frozen=True)
class RunFacts:
    """What the grader saw of one run, outside the test process."""

    exit_code: int | None
    junit: bytes | None
    """The JUnit report's bytes; ``None`` when the outcomes come from a log (``tests.report``)."""
    cases: list[TestCaseResult]
    junit_outcomes: dict[str, str]
    record_outcomes: dict[str, str]
    places: Places


def _nothing_ran(record: HarnessRecord, facts: RunFacts) -> bool:
    """Whether pytest stopped before any test ran (a collection error, a usage error), so no canary could run.

    Nothing is gained by faking this: with no call in the record, any test the report shows passed is
    flagged as forged below, and the command failed, so no test of the task counts as passed.
    """
    return (
        not record.calls
        and record.exitstatus not in (None, 0)
        and facts.exit_code not in (None, 0)
        and not any(case.outcome == "passed" for case in facts.cases)
    )


def check_run(harness: Harness, record: HarnessRecord | None, facts: RunFacts, base: HarnessSummary) -> list[str]:
    """Every way a candidate run disagrees with its harness record and the base; empty when none."""
    if record is None:
        return ["gradeflow's pytest harness left no record: the run did not go through it"]
    problems = []
    if not record.finished:
        problems.append("the test process ended before pytest finished (the harness never saw the session end)")
    problems += record.log_problems
    if base.signed:
        problems += record.signature_problems
    if record.logged is None:
        problems.append("the harness's call log is missing")
    elif record.logged != record.calls:
        problems.append("the harness's record of the test calls differs from the log written as they ended")
    if facts.junit is not None and record.junit_sha256 != hashlib.sha256(facts.junit).hexdigest():
        problems.append("the JUnit report differs from the one pytest wrote")
    if base.canaries and not _nothing_ran(record, facts):
        problems += _canary_problems(harness, facts.cases)
    if base.exit_reports_failures and facts.exit_code == 0:
        # The must-fail canary fails in every honest run, and on the base the command's status showed it
        # (a command that hides pytest's status, ``pytest ...; true``, exits 0 on the base too).
        status = f"pytest ended with status {record.exitstatus} but " if record.exitstatus else ""
        problems.append(f"{status}the command exited 0 although the grader's must-fail test fails in every honest run")
    forged = [t for t, o in facts.junit_outcomes.items() if o == "passed" and facts.record_outcomes.get(t) != "passed"]
    if forged:
        shown = ", ".join(forged[:3]) + (" …" if len(forged) > 3 else "")
        problems.append(f"reported passed but the test call did not pass: {shown}")
    problems += _machinery_problems(record, base, facts.places)
    known = {(p.module, p.file) for p in base.plugins}
    extra = [p for p in _plugins(record, harness, facts.places) if (p.module, p.file) not in known]
    if extra:
        names = ", ".join(f"{p.module} ({p.file})" for p in extra[:3])
        problems.append(f"pytest plugins the base did not load were loaded: {names}")
    return problems


def _machinery_problems(record: HarnessRecord, base: HarnessSummary, places: Places) -> list[str]:
    """pytest's machinery changed where the base run's was not, or a test ran code the base's tests did not."""
    # (what the run saw, what the base's run saw, how a problem reads, how one entry reads)
    checks: list[tuple[Iterable[str], Iterable[str], str, Callable[[str], str]]] = [
        (record.patched, base.patched, "pytest internals were replaced during the run", str),
        (
            _hook_files(record, places),
            base.hook_files,
            "a hook that makes test outcomes is implemented where the base run's never was",
            lambda hook: hook.replace(" ", " in ", 1),
        ),
        (
            (_relative(f, places) for f in record.foreign_code),
            base.foreign_code,
            "a test function ran code from a file the base's tests never ran as one",
            str,
        ),
        (_namespaced(record, places), base.namespaces, "names the test modules hold were rebound during the run", str),
        (
            _audited(record, places),
            base.audit,
            "the code under test did at run time what the base's run never did",
            lambda entry: entry.replace(" ", " from ", 1),
        ),
        (
            (_relative(f, places) for f in record.conftests),
            base.conftests,
            "test code the run did not start with was loaded",
            str,
        ),
        (record.misplaced_code, base.misplaced_code, "a test ran a function its file does not define", str),
    ]
    problems = []
    for seen, before, what, shown in checks:
        new = sorted(set(seen) - set(before))
        if new:
            problems.append(f"{what}: {', '.join(shown(entry) for entry in new[:3])}")
    return problems
