"""Typed evidence the tasks gather and the graders score: nothing here runs or reads anything."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = [
    "CaseOutcome",
    "FunctionChange",
    "FunctionMetrics",
    "HarnessSummary",
    "InfrastructureEdit",
    "Outcome",
    "PatchTestsEvidence",
    "PatternEngine",
    "PatternEvidence",
    "PatternHit",
    "PatternMatches",
    "PerfEvidence",
    "PluginRef",
    "TamperEvidence",
    "TamperFinding",
    "TamperKind",
    "TestCaseResult",
    "TestRunEvidence",
    "TouchedLines",
    "UnitKind",
    "VariedRunEvidence",
]

CaseOutcome = Literal["passed", "failed", "error", "skipped", "xfailed"]
"""A testcase's outcome; ``xfailed`` is an expected failure (pytest's xfail, unittest's ``expectedFailure``)."""
Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "missing"]
"""A test's outcome; ``missing`` means it was absent from the report."""


class TestCaseResult(BaseModel):
    """One ``<testcase>`` of a JUnit report."""

    __test__ = False

    classname: str = ""
    name: str
    file: str | None = None
    outcome: CaseOutcome
    message: str = ""
    """The first line of the failure, error, skip or xfail message, cut short."""


class InfrastructureEdit(BaseModel):
    """A piece of test infrastructure (configuration or a code loader) the patch changed."""

    path: str
    what: str
    """``file`` for a whole file, else the section (``[tool.pytest]``, ``scripts.test``)."""


class PluginRef(BaseModel):
    """A pytest plugin a run loaded: its module and the file it came from (repository-relative when inside)."""

    module: str
    file: str | None = None


class HarnessSummary(BaseModel):
    """The compact part of the harness record a later run is checked against (the base's plugins)."""

    plugins: list[PluginRef] = Field(default_factory=list)
    """Every plugin module loaded, conftest files and the harness itself excluded."""
    entrypoint_modules: list[str] = Field(default_factory=list)
    """Modules loaded through ``pytest11`` entry points: the candidate's runs load exactly these, by name."""
    canaries: bool = False
    """Whether the grader's canary tests ran with the expected outcomes."""
    exit_reports_failures: bool = False
    """Whether the command's exit status showed the must-fail canary's failure (non-zero) on the base.

    When it did, a candidate run exiting 0 hid a failure: the must-fail canary always fails.
    """
    patched: list[str] = Field(default_factory=list)
    """pytest internals the base run's own code replaced (a plugin's legitimate patch); others are tampering."""
    foreign_code: list[str] = Field(default_factory=list)
    """Files whose code ran as a layer of a test function on the base (decorators from libraries or helpers)."""
    misplaced_code: list[str] = Field(default_factory=list)
    """Tests whose function matched no definition in its own file on the base too (made by a factory)."""
    hook_files: list[str] = Field(default_factory=list)
    """``hook file`` for each implementation of a hook that makes test outcomes on the base (where its code
    is, not what its plugin says it is); one from another file in a candidate's run is tampering."""
    marked: dict[str, list[str]] = Field(default_factory=dict)
    """Node id → the expected-outcome markers the test carries (``xfail``, ``skip`` for skip/skipif, unittest's
    decorators included); tests carrying none are left out."""
    raisers: dict[str, str] = Field(default_factory=dict)
    """Node id → the file a skip or xfail raised during the test's call came from (named as ``foreign_code``)."""
    namespaces: list[str] = Field(default_factory=list)
    """``file name`` for each name a test module imported (or attribute of a test class) that differed from a
    fresh resolution when collection ended, or was rebound during the run; one the base lacks is tampering."""
    audit: list[str] = Field(default_factory=list)
    """``event file`` for what the repository's code did at run time that honest library code does not (the
    harness's audit hook: ``compile``/``exec`` of code from no file, ``sys.settrace``, ``gc.get_objects``,
    ``ctypes.*``, ``marshal.loads``, ``code.__new__``, ``open`` writing a .py/.pyc/conftest.py); one the base
    run did not have is tampering."""
    compared: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Node id → ``file:line:operand:methods`` → ``r type (Class.method)`` or ``e type``: each value the test's
    assertions compared during its call (``==``, ``in``, ordering, a bare assert's truth, ``self.assertEqual``),
    and whether the methods deciding that comparison are defined by a class of the repository (``r``) or
    elsewhere (``e``: builtins, the standard library, installed packages)."""
    reached: dict[str, list[str]] = Field(default_factory=dict)
    """Node id → ``file:line`` of each line the patch changed outside its tests (inside a function) that the test
    ran, from its setup to its teardown, in a function's code: filled in test-evidence candidate runs only."""
    reach_unmeasured: list[str] = Field(default_factory=list)
    """Node ids whose reach could not be recorded (another trace function was set, Python before 3.12)."""
    conftests: list[str] = Field(default_factory=list)
    """``conftest.py`` files loaded that the run did not start with, and test modules not loaded from the text
    the grader handed over (named as ``foreign_code``); one the base run lacks is tampering."""
    signed: bool = False
    """The run's record was signed with its key (the plugin read the grader's channel); then a candidate's
    record and call log must be signed too."""


class VariedRunEvidence(BaseModel):
    """The varied re-run of the tests a candidate passed: the same command and harness, each test's call in a
    forked child with pytest's marks on the process taken off or changed (see :mod:`gradeflow.tasks.varied`)."""

    tests: list[str] = Field(default_factory=list)
    """The test ids run again: the fail_to_pass tests (else the pass_to_pass tests) that passed."""
    outcomes: dict[str, Outcome] = Field(default_factory=dict)
    """Their outcomes in the varied run (``missing`` where it reported none)."""
    problem: str | None = None
    """Why the varied run gave no usable report (timed out, no report, a report its harness contradicts)."""
    tampered: str | None = None
    """How the varied run's report or harness record shows tampering (what
    :func:`~gradeflow.integrity.harness.check_run` found; notes made in a forked call count as the main run's do),
    graded ``junit-tampered``; ``None`` when it shows none."""
    duration: float = 0.0


class TestRunEvidence(BaseModel):
    """What one run of the test command showed."""

    __test__ = False

    exit_code: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    disk_full: bool = False
    """The sandbox's writable space (``environment.disk``) filled up during the run."""
    cpu_throttled: bool = False
    """The run wanted more CPU than ``environment.cpus`` and was held back (a slow or timed-out run may owe it
    to that); ``False`` where the sandbox does not tell (see ``CommandResult.cpu_throttled``)."""
    duration: float = 0.0
    junit_found: bool = False
    junit_error: str | None = None
    """Why the report could not be read (malformed, too large, written before the run)."""
    junit_too_large: bool = False
    """The report is over the byte or testcase cap (``junit.MAX_JUNIT_BYTES``, ``MAX_JUNIT_TESTCASES``)."""
    junit_tampered: bool = False
    """The report contradicts the run (passes from a failing command, written before the run started)."""
    cases: list[TestCaseResult] = Field(default_factory=list)
    outcomes: dict[str, Outcome] = Field(default_factory=dict)
    """Outcome of every test id the task names (fail_to_pass, pass_to_pass, quarantine)."""
    output_tail: str = ""
    """The end of the command's output, for messages."""
    harness: HarnessSummary | None = None
    """What gradeflow's pytest harness saw; ``None`` when it did not run (not pytest, or nothing recorded)."""
    harness_not_joined: str | None = None
    """Why pytest ran (its JUnit report is there) without the whole harness: with no harness record (the
    harness could not join it), or with one but without the grader's channel (nothing served, nothing signed)."""
    varied: VariedRunEvidence | None = None
    """The varied re-run of the passed tests (acceptance runs only); ``None`` when none ran."""
    report: str = "junit"
    """Where the outcomes were read: ``junit``, or the log format of ``tests.report``."""
    confirmed_by: str | None = None
    """For outcomes read from a log: what confirmed them (``harness``: gradeflow's pytest harness;
    ``recorder``: its unittest recorder); ``None`` when nothing could (the tests component says so)."""


UnitKind = Literal["function", "lambda", "class", "module"]
"""What a measured unit is: a ``def``/``async def``, a ``lambda``, or a class's or module's own code."""
"""What a measured unit is: a ``def``/``async def``, a ``lambda``, or a class's or module's own code."""


class FunctionMetrics(BaseModel):
    """Size and complexity of one measured unit: a function or method, a lambda, a class or module body."""

    path: str
    name: str
    """Qualified name within the module, e.g. ``Report.render`` or ``outer.inner``; ``outer.<lambda>``,
    ``<class Report>`` and ``<module>`` for the other kinds."""
    lineno: int
    length: int
    """Lines from the ``def`` (``lambda``, ``class``) line, decorators excluded, to the last line of the
    unit; a module's lines up to its last statement. Limited for functions and lambdas only."""
    complexity: int
    """Cyclomatic complexity: 1 plus one per decision point."""
    kind: UnitKind = "function"
    """``function`` (``def`` or ``async def``), ``lambda``, or the own code of a ``class`` or ``module`` body."""


class PerfEvidence(BaseModel):
    """Interleaved benchmark timings, in seconds."""

    baseline: list[float] = Field(default_factory=list)
    candidate: list[float] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    """Runs that failed or produced no timing, with why."""
    unchanged: bool = False
    """The submission changes nothing, so nothing was timed: identical code is not faster."""
    baseline_wall: list[float] = Field(default_factory=list)
    """With ``timing: reported``: the wall-clock seconds of the same base runs, measured from outside."""
    candidate_wall: list[float] = Field(default_factory=list)
    """With ``timing: reported``: the wall-clock seconds of the same candidate runs."""
    implausible: list[str] = Field(default_factory=list)
    """Candidate runs that reported a figure that is no time at all (non-finite, not positive), with it."""
    mismatches: list[str] = Field(default_factory=list)
    """Candidate runs whose output ``perf.check`` or ``perf.compare_output`` rejected, with why."""
    modified: list[str] = Field(default_factory=list)
    """Sealed benchmark files the patch (or the candidate's setup) changed; every run used the base's."""


TamperKind = Literal[
    "argv-read",
    "atexit",
    "builtins-rebind",
    "class-spoof",
    "ctypes",
    "dynamic-exec",
    "entry-points",
    "frame-walk",
    "function-internals",
    "gc-objects",
    "import-hook",
    "os-exit",
    "pytest-internals",
    "report-path",
    "runner-detection",
    "settrace",
    "source-encoding",
    "startup-hook",
    "time-rebind",
    "unscannable",
]
"""What a tamper finding reaches for: pytest's machinery, the process's hooks, the clock, code loaders,
whether a test runner is running (``runner-detection``: code that behaves one way under test), an object's
claimed class (``class-spoof``: ``isinstance`` believes a ``__class__`` that is not the object's type), or a
source encoding under which Python runs other code than the file's text shows (``source-encoding``)."""


class TamperFinding(BaseModel):
    """One piece of added code that reaches into the test machinery."""

    path: str
    """Repository-relative path of the changed file."""
    line: int
    """1-based line of the finding (0 for a finding about the whole file)."""
    kind: TamperKind
    detail: str
    """What was matched (a module, an attribute chain, a literal); with ``kind``, the key compared with the base."""
    message: str
    """One sentence for a person: what the code does and why it is suspect."""


class TamperEvidence(BaseModel):
    """The tamper scan of a patch: findings the patch adds (those already in the base are left out)."""

    findings: list[TamperFinding] = Field(default_factory=list)
    files_scanned: list[str] = Field(default_factory=list)
    """Changed non-test files that were read and parsed."""
    files_skipped: list[str] = Field(default_factory=list)
    """Changed files of a scanned type that could not be read or parsed (binary, too large, a syntax error)."""


PatternEngine = Literal["re2", "re"]
"""``re2``: google-re2, linear in the text; ``re``: Python's engine, in a child process with a time bound."""


class PatternHit(BaseModel):
    """Where a pattern matched."""

    path: str
    """Repository-relative path of the file, after the patch."""
    line: int
    """1-based line in the file after the patch."""


class PatternMatches(BaseModel):
    """What one forbidden or required pattern matched, gathered by the constraints task."""

    kind: Literal["forbidden", "required"]
    pattern: str
    path: str | None = None
    """The file a required pattern is searched in; ``None`` for a forbidden one (every added line)."""
    engine: PatternEngine
    hits: list[PatternHit] = Field(default_factory=list)
    """Forbidden: every added line that matches. Required: the first match, when there is one."""
    error: str | None = None
    """Why matching did not finish (it ran past the time bound, or the matcher failed); then ``hits`` is empty."""


class PatternEvidence(BaseModel):
    """Every pattern of the task's constraints, matched: forbidden ones on the patch's added lines, required
    ones in their file."""

    matches: list[PatternMatches] = Field(default_factory=list)
    timeout: float
    """Seconds each pattern Python's ``re`` matches may take before it counts as timed out."""


class TouchedLines(BaseModel):
    """The lines a patch adds to and removes from one file."""

    old_path: str | None = None
    """The path before the patch (differs on a rename; ``None`` for an added file)."""
    added: set[int] = Field(default_factory=set)
    """Line numbers, after the patch, of the added lines."""
    removed: set[int] = Field(default_factory=set)
    """Line numbers, before the patch, of the removed lines."""


class FunctionChange(BaseModel):
    """A touched function: its metrics before and after (``None`` where it does not exist)."""

    path: str
    name: str
    before: FunctionMetrics | None = None
    after: FunctionMetrics | None = None


class PatchTestsEvidence(BaseModel):
    """The patch's own tests and what they did on the base and on the candidate."""

    __test__ = False

    files: list[str] = Field(default_factory=list)
    """Test files the patch adds or changes."""
    selected: list[str] = Field(default_factory=list)
    """What was run: pytest node ids of touched tests, or the path of a test file the patch adds."""
    base: TestRunEvidence | None = None
    """The run on the pristine base with only the patch's test files added."""
    candidate: TestRunEvidence | None = None
    """The run on the candidate workspace."""
    reach: dict[str, list[int]] | None = None
    """Repository-relative file → the lines the patch changed in it outside its tests, each inside a function: a
    test proves the change only if its candidate run ran one of them (see
    :attr:`HarnessSummary.reached`). ``None``: not measured, the task's runs have no harness (not pytest)."""
