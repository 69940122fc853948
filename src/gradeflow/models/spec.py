"""The task spec (what to grade against) and the submission (what is graded): frozen, unknown keys rejected."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

import re2
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gradeflow.config import SANDBOX_KINDS, SandboxKind, TaskType, cache_dir

__all__ = [
    "PATCH_PARAMETER_BYTES",
    "SANDBOX_KINDS",
    "ConstraintsSpec",
    "CustomGraderSpec",
    "Decision",
    "EnvironmentSpec",
    "GradingSpec",
    "PerfSpec",
    "QualitySpec",
    "RequiredPattern",
    "ReviewSpec",
    "Role",
    "SandboxKind",
    "Status",
    "Submission",
    "TaskSpec",
    "TaskType",
    "TestsSpec",
    "is_utf8",
    "nothing_to_score",
    "parse_size",
    "patch_bytes",
]

Role = Literal["objective", "gate"]
Status = Literal["graded", "inconclusive"]
Decision = Literal["merge-candidate", "human-review", "retry", "rejected", "inconclusive"]

_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|git@)", re.IGNORECASE)
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([bkmg]?)b?$", re.IGNORECASE)
MAX_TIMEOUT = 86_400
ROOT_PATTERN = r"^(host|debian:[a-z][a-z0-9-]{1,30}|docker:[A-Za-z0-9][A-Za-z0-9._/:@-]{0,255})$"
"""``environment.root``: the host's system, a Debian release, or a docker image's filesystem."""
"""The longest command timeout a task spec may set, in seconds (a day)."""


def _resolve(value: str | None, info: ValidationInfo) -> str | None:
    """Resolve a relative path against the task file's folder (passed as validation context)."""
    if value is None or _URL.match(value):
        return value
    base = (info.context or {}).get("base_dir")
    path = Path(value).expanduser()
    if base is not None and not path.is_absolute():
        path = Path(base) / path
    return str(path.resolve()) if base is not None else value


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RequiredPattern(_Spec):
    """A regular expression that must match somewhere in one file of the graded workspace."""

    path: str
    """File path relative to the repository root."""
    pattern: str
    """Regular expression searched in the whole file, ``^``/``$`` at each line (see the constraints task for
    the engine: google-re2 where it reads the pattern the way Python's ``re`` would, else ``re`` with a time bound)."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        _check_regex(value)
        return value


def _check_regex(value: str) -> None:
    """A pattern must compile in google-re2 or in Python's ``re``; the constraints task picks the engine."""
    quiet = re2.Options()
    quiet.log_errors = False
    try:
        re2.compile(value, quiet)
        return
    except re2.error:
        pass
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {value!r}: {exc}; neither re2 nor re compiles it") from None


class TestsSpec(_Spec):
    """How the acceptance tests are run and which test ids decide the grade."""

    __test__ = False  # not a pytest test class

    report: Literal["junit", "pytest-log", "django-log", "sympy-log"] = "junit"
    """Where the per-test outcomes are read. ``junit``: the JUnit XML report the command writes to ``{junit}``.
    Else the command's output (standard output and error together) in that format: ``pytest-log`` (pytest's
    ``-rA`` summary), ``django-log`` (Django's ``runtests.py --verbosity 2``, or any unittest runner at
    ``-v``), ``sympy-log`` (sympy's ``bin/test --verbose``). A log is forgeable by the code it tests, so its
    outcomes are confirmed by what gradeflow records itself (the pytest harness; for ``django-log`` a recorder
    in unittest's result class); ``sympy-log`` has no recorder and the tests component says so."""
    command: str
    """Shell command run from the repository root; ``{junit}`` is replaced by a path outside the repository."""
    fail_to_pass: list[str] = Field(default_factory=list)
    """Tests that fail on the base and must pass after the patch (pytest node ids or ``classname::name``)."""
    pass_to_pass: list[str] = Field(default_factory=list)
    """Tests that pass on the base and must keep passing."""
    last_run_of: dict[str, list[str]] = Field(default_factory=dict)
    """Names that stand for several tests, each read as the test of its list that ran last: the name's
    outcome is that test's outcome in the run (``missing`` when none of them ran), wherever the name is
    listed (``fail_to_pass``, ``pass_to_pass``, ``quarantine``). SWE-bench's name for a Django test with a
    docstring is the docstring's first line, and its log parser keeps the status printed last under a
    line several tests print; an imported task lists such a line with the ids of the tests it starts."""
    hidden: str | None = None
    """Folder copied over the repository root for the test run only, then removed."""
    hidden_patch: str | None = None
    """A patch file applied wherever ``hidden`` is copied in (the base and acceptance runs), after it: for
    hidden tests that delete or rename files (a SWE-bench test patch). Each file it touches is reset to the
    base first; relative to the task file."""
    hidden_edits: Literal["fail", "reset"] = "fail"
    """What a patch's edits to the files the hidden tests replace (``hidden``'s files and the files
    ``hidden_patch`` touches) count for. ``fail``: they are edits to protected tests and test infrastructure,
    failed gates as anywhere else. ``reset``: SWE-bench's procedure, which imported tasks follow: such a file
    is reset to the base and the hidden tests laid over it before every run (as always), and the edit is
    reported, not failed; the patch's other edits under test folders are kept in the runs, as SWE-bench keeps
    them (``conftest.py`` files, protected files and test configuration are still reset; an edit to test
    configuration or a code loader is reported, not failed, as SWE-bench applies it); the result's
    ``strict_reading`` says what the ``fail`` reading would decide, from a run with the kept edits reset."""
    partial_credit: bool = True
    """Score k/n of fail_to_pass; when off, any failing fail_to_pass scores 0."""
    require_all_pass_to_pass: bool = False
    """When on, one broken pass_to_pass test scores 0; otherwise the score shrinks by the broken share."""
    timeout: float = Field(default=600, gt=0, le=MAX_TIMEOUT)
    """Seconds before the whole test command (and every process it started) is killed (at most a day)."""
    quarantine: list[str] = Field(default_factory=list)
    """Known-flaky test ids: their outcomes are reported but never scored."""
    skipped_pass_to_pass: Literal["broken", "kept"] = "broken"
    """A pass_to_pass test skipped on the candidate: ``broken`` unless it is skipped on the base too, or
    ``kept`` whatever the base did (SWE-bench's rule, which imported tasks follow)."""
    pass_to_pass_failing_on_base: Literal["broken", "set-aside"] = "broken"
    """A pass_to_pass test that does not pass on the pristine base (failed, error or missing there, in this
    environment). ``broken``: scored as any other, so a candidate cannot pass while it fails (``gradeflow task
    validate`` names such a test, an authoring error). ``set-aside``: listed in the tests component's
    ``failing_on_base`` with a message and not scored, for lists made in another environment (SWE-bench's:
    a test that needs a network route or a shared-memory folder this sandbox lacks fails on the base and
    under the gold patch alike); imported tasks get it."""
    xfail: Literal["fail", "pass"] = "fail"
    """How an expected failure (pytest's xfail, outcome ``xfailed``) on the candidate counts. ``fail``: not
    a pass, so a fail_to_pass test xfailed is not fixed and a pass_to_pass test xfailed is broken unless
    it is xfailed on the base too. ``pass``: as a pass for both lists (SWE-bench's rule, which imported
    tasks follow)."""
    test_files: list[str] = Field(default_factory=lambda: ["**/test_*.py", "**/*_test.py", "**/conftest.py"])
    """Globs of test files: the ones a patch adds or changes are its own tests (the test evidence)."""
    evidence_command: str | None = None
    """Runs only the patch's own tests: ``{junit}`` and ``{tests}`` (their pytest node ids, shell-quoted)
    are replaced; when omitted, ``command`` with the node ids appended."""
    infrastructure: list[str] = Field(default_factory=list)
    """Globs of more test infrastructure, sealed to the base like the documented default set (test configuration
    and code loaders, docs/concepts/integrity.md): reset for every run, an edit is a gate failure."""
    infrastructure_editable: list[str] = Field(default_factory=list)
    """Globs of test infrastructure this task's patch may change (a pytest plugin project's own config):
    neither reset nor a gate failure."""
    varied_run: bool = True
    """Once a candidate's required tests passed, run them again with pytest's marks off the process (each
    call in a forked child) and send a test that then does not pass to review; off, a passing grade costs
    one pytest start less and code that behaves only under a test runner goes unnoticed."""
    publish_hidden_details: bool = False
    """With hidden tests, the published result says passed/failed per declared test id and nothing else
    about the run (exit code, counts, durations, messages); on, everything is published as without them."""

    @field_validator("command")
    @classmethod
    def _has_junit(cls, value: str, info: ValidationInfo) -> str:
        if info.data.get("report", "junit") == "junit" and "{junit}" not in value:
            raise ValueError(
                "tests.command must contain the placeholder {junit} (where the JUnit XML goes), "
                "or tests.report must name the log format the command prints"
            )
        return value

    _resolve_hidden = field_validator("hidden", "hidden_patch")(_resolve)

    @model_validator(mode="after")
    def _last_run_names_listed(self) -> TestsSpec:
        listed = {*self.fail_to_pass, *self.pass_to_pass, *self.quarantine}
        for name, ids in self.last_run_of.items():
            if not ids or name in ids or name not in listed:
                raise ValueError(
                    f"tests.last_run_of[{name!r}] must list test ids other than the name itself, and the name "
                    "must be listed in fail_to_pass, pass_to_pass or quarantine"
                )
        return self

    def expanded(self, test_ids: list[str]) -> list[str]:
        """``test_ids`` with each name of :attr:`last_run_of` followed by the ids it stands for, without repeats:
        every test a run must hold for those ids to be decided."""
        return list(dict.fromkeys(t for test_id in test_ids for t in (test_id, *self.last_run_of.get(test_id, ()))))


class ConstraintsSpec(_Spec):
    """Rules the diff must respect; each declared rule is one check of the constraints gate."""

    protected: list[str] = Field(default_factory=list)
    """Extra protected globs; files named by the test ids are always protected."""
    allowed_files: list[str] | None = None
    """When set, every changed file must match one of these globs."""
    max_files_changed: int | None = Field(default=None, ge=0)
    """The most files a patch may change."""
    max_lines_changed: int | None = Field(default=None, ge=0)
    """Added plus removed lines."""
    forbidden_patterns: list[str] = Field(default_factory=list)
    """Regexes that must not match any added line of a changed file."""
    required_patterns: list[RequiredPattern] = Field(default_factory=list)
    """Patterns that must match in a file of the graded workspace, each one check."""
    allow_new_tests: bool = False
    """When on, a test file the patch adds (``tests.test_files``) breaks neither ``protected`` nor
    ``allowed_files``; it is still removed before the acceptance run."""

    @field_validator("forbidden_patterns")
    @classmethod
    def _compile_all(cls, values: list[str]) -> list[str]:
        for value in values:
            _check_regex(value)
        return values


class QualitySpec(_Spec):
    """Limits on every unit of code (functions, lambdas, class and module bodies) of the graded workspace."""

    paths: list[str] = Field(default_factory=lambda: ["**/*.py"])
    """Globs of the Python files measured, relative to the repository root."""
    max_function_length: int | None = Field(default=None, gt=0)
    """Lines from ``def`` (or ``lambda``) to the last line of the body; functions and lambdas only."""
    max_cyclomatic_complexity: int | None = Field(default=None, gt=0)
    """For every unit: functions, lambdas, each class body's and the module's own code."""


class PerfSpec(_Spec):
    """A benchmark compared between the pristine base and the candidate."""

    command: str
    """The benchmark, run from the repository root; ``{seed}`` is a fresh random number for each pair of runs."""
    timing: Literal["wall", "reported"] = "wall"
    """``wall``: timed from outside the process; ``reported``: the last stdout line ``{"seconds": x}``."""
    runs: int = Field(default=5, ge=1, le=100)
    """Interleaved baseline/candidate pairs; the minimum of each side is compared."""
    noise_floor: float = Field(default=1.15, gt=1.0)
    """A speed-up below this is measurement noise and scores 0."""
    min_speedup: float = Field(default=4.0, gt=1.0)
    """The speed-up that passes and scores 1 (greater than ``noise_floor``; scored on a log scale between)."""
    timeout: float = Field(default=600, gt=0, le=MAX_TIMEOUT)
    """Seconds allowed for one benchmark run (at most a day)."""
    check: str | None = None
    """A command run after each timed run, in the same sandbox; a non-zero exit is ``perf-output-mismatch``."""
    compare_output: bool = False
    """Each run's stdout (its ``{"seconds": x}`` line excluded) must hash like the base's, or ``perf-output-mismatch``.

    Only stdout up to 64 KiB can be compared; for more, use ``check``."""
    sealed: list[str] = Field(default_factory=list)
    """Globs of benchmark files reset to the base, besides the files ``command`` and ``check`` name."""

    @model_validator(mode="after")
    def _ordered(self) -> PerfSpec:
        if self.min_speedup <= self.noise_floor:
            raise ValueError("perf.min_speedup must be greater than perf.noise_floor")
        return self


class GradingSpec(_Spec):
    """How components combine into one score."""

    profile: str = "default"
    """A profile shipped in ``gradeflow/profiles/`` or a path to a profile YAML file."""
    weights: dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]] = Field(default_factory=dict)
    """Weights of objective components by name (finite, at least 0, not all 0); unlisted objectives weigh 1."""
    pass_threshold: float | None = Field(default=None, ge=0, le=1)
    """Minimum score to pass; the profile's value when omitted."""

    @field_validator("weights")
    @classmethod
    def _positive_sum(cls, value: dict[str, float]) -> dict[str, float]:
        if value and sum(value.values()) <= 0:
            raise ValueError("the weights sum to 0, so nothing would be scored")
        return value

    @field_validator("profile")
    @classmethod
    def _resolve_profile(cls, value: str, info: ValidationInfo) -> str:
        if "/" in value or value.endswith((".yaml", ".yml")):
            return _resolve(value, info) or value
        return value


class ReviewSpec(_Spec):
    """What a reviewer expects the patch to touch (reviewability evidence, never a gate)."""

    expected_files: list[str] | None = None
    """Globs of the files the change belongs in; when omitted, ``constraints.allowed_files``."""
    questions: list[str] = Field(default_factory=list)
    """What a person asked to review a grade of this task should check (shown in the review form)."""


class SecuritySpec(_Spec):
    """The security detector's thresholds (bandit on changed Python files; other scanners may follow)."""

    severity: Literal["LOW", "MEDIUM", "HIGH"] = "MEDIUM"
    """The lowest severity a new finding must have to count."""
    confidence: Literal["LOW", "MEDIUM", "HIGH"] = "MEDIUM"
    """The lowest confidence a new finding must have to count."""


class CompatibilitySpec(_Spec):
    """What the compatibility and data-loss detectors compare."""

    packages: list[str] | None = None
    """Import packages whose public API must hold; when omitted, the top-level ones at the root or in ``src/``."""
    allow: list[str] = Field(default_factory=list)
    """Globs of object paths (``pkg.mod.func``) the task may break: reported, not counted."""
    data: list[str] | None = None
    """Globs of data files that must not be removed or truncated; when omitted, JSON, CSV and migrations."""


class CustomGraderSpec(_Spec):
    """A user grader loaded from an importable ``module:Class``."""

    use: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
    """The grader class, ``module:Class``."""
    weight: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    """Its weight among the objectives (finite, at least 0)."""
    role: Role = "objective"
    """``objective`` (weighed into the score) or ``gate`` (must pass)."""
    folder: str | None = Field(default=".", validate_default=True)
    """Where ``use``'s module is looked for before the installed packages: the task file's folder by default
    (relative paths resolve against it); ``null`` for installed packages only."""

    _resolve_folder = field_validator("folder")(_resolve)


class EnvironmentSpec(_Spec):
    """Where commands run."""

    sandbox: SandboxKind = "isolated"
    """``isolated`` (default: bubblewrap namespaces, no daemon), ``docker``, or ``local`` (trusted code only)."""
    image: str | None = None
    """Docker image (``NAME[:TAG]`` or ``NAME@sha256:...``), for the docker sandbox."""
    network: bool = False
    """Whether the candidate's commands (tests, benchmarks) may reach the network."""
    memory: str = "2g"
    """Memory limit, a size like ``512m`` or ``2g`` (from 6m, the engine's minimum, to 1024g)."""
    cpus: float = Field(default=1.0, ge=0.01, le=1024)
    """CPUs (0.01 or more): all processes of one command together get at most this share of the host's cores
    (docker's quota; in the isolated sandbox a cpu cgroup of the command's own, or, where none can be made, a
    CPU-time budget per process and a lower priority). Preflight refuses more than the docker engine has."""
    pids: int = Field(default=256, gt=0, le=4_194_304)
    """Processes at once (at most 4194304, the kernel's own limit)."""
    user: str = "1000:1000"
    """The ``uid:gid`` commands run as: the docker sandbox's task user, and the isolated sandbox's (as root)
    when the task sets it."""
    disk: str | None = None
    """Writable space of one sandbox, everything its commands write together (the repository's writes, ``/tmp``,
    ``HOME``, the private environment, reports): a size like ``512m``, below ``memory`` (docker's tmpfs pages
    are memory; the isolated sandbox has a file system of this size of its own where it runs as root).
    Default: 1 GiB, or half of ``memory`` when that is less. A command that fills it (bytes or files) is
    stopped and graded 0 with ``disk-limit-exceeded``."""
    root: str = Field(default="host", pattern=ROOT_PATTERN)
    """What commands run on: ``host`` (this machine's system and gradeflow's Python), ``debian:<release>`` (a
    Debian root filesystem built once with debootstrap: ``bullseye`` has Python 3.9, ``bookworm`` 3.11, ``trixie``
    3.13; the docker sandbox runs it as an image imported once per root) or ``docker:<image>``
    (an image's filesystem exported once; the docker sandbox runs the image itself). The local sandbox runs on
    ``host`` only."""
    packages: list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9+.-]{0,99}$")]] = Field(default_factory=list)
    """More Debian packages for a ``debian:`` root (``python3``, ``python3-venv`` and ``python3-pip`` are always
    there): compilers, ``libxml2-dev``, ``python3-pytest``."""
    mounts: list[str] = Field(default_factory=list)
    """Absolute host folders every command sees read-only at their own paths (a virtual environment, a data
    set); folders a command names by an absolute path are shown without being listed. Never gradeflow's state."""
    setup_network: bool = False
    """``setup`` (the environment's build, on the pristine base) may reach the network (package indexes);
    the candidate's commands still get it only with ``network``."""
    shared_setup: str | None = None
    """The first part of the environment's build, built once and shared read-only by every task whose build it
    is too: same sandbox and root, ``packages``, ``setup_network``, ``env``, this command and the content of
    ``shared_inputs``. It runs (from the workspace) over a workspace holding only ``shared_inputs`` copied from the
    base, and what it leaves in the environment (``HOME``, the private Python environment) is a layer under the
    task's own ``setup`` (which then adds only its own files: ``pip install -e .``). Its workspace writes are
    dropped. Where the sandbox cannot stack layers (docker, the local sandbox without root) it runs before
    ``setup`` in each task's own build, with the same result."""
    shared_inputs: list[str] = Field(default_factory=list)
    """Files of the base ``shared_setup`` reads (``requirements.txt``), relative to the repository; part of the
    shared build's key. A missing one is left out (``[ -f f ] && pip install -r f`` still works)."""

    @field_validator("shared_inputs")
    @classmethod
    def _relative_inputs(cls, value: list[str]) -> list[str]:
        for name in value:
            parts = PurePosixPath(name).parts
            if not name or name.startswith("/") or "\0" in name or ".." in parts or parts[:1] == (".git",):
                raise ValueError(f"{name!r} is not a path inside the repository")
        return sorted({str(PurePosixPath(name)) for name in value})

    @model_validator(mode="after")
    def _inputs_need_shared_setup(self) -> EnvironmentSpec:
        if self.shared_inputs and not self.shared_setup:
            raise ValueError("shared_inputs name what shared_setup reads, and there is no shared_setup")
        return self

    @field_validator("mounts")
    @classmethod
    def _absolute_mounts(cls, value: list[str]) -> list[str]:
        for folder in value:
            if not folder.startswith("/") or "\0" in folder:
                raise ValueError(f"{folder!r} is not an absolute path")
        return [os.path.normpath(folder) for folder in value]

    @model_validator(mode="after")
    def _packages_need_debian(self) -> EnvironmentSpec:
        if self.packages and not self.root.startswith("debian:"):
            raise ValueError(f"packages are installed into a debian: root, not into root {self.root!r}")
        return self

    @field_validator("memory", "disk")
    @classmethod
    def _bounded_size(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not 6 * 1024**2 <= parse_size(value) <= 1024**4:
            raise ValueError(f"{value!r} is outside 6m..1024g")
        return value


class AgentSpec(_Spec):
    """How ``gradeflow run`` launches an agent on this task (never how its tests run)."""

    network: bool = False
    """The agent's own network (its model's API); the tests never get it from here."""


def parse_size(value: str) -> int:
    """Bytes in a size like ``512m`` or ``2g`` (``b``, ``k``, ``m``, ``g``: powers of 1024); else ``ValueError``."""
    size = _SIZE.match(value.strip())
    if size is None:
        raise ValueError(f"{value!r} is not a size like '512m' or '2g'")
    return int(float(size.group(1)) * 1024 ** "bkmg".index((size.group(2) or "b").lower()))


class TaskSpec(_Spec):
    """One grading task: a repository at a pinned base revision plus its acceptance checks."""

    task_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
    """Short stable identifier (letters, digits, ``.``, ``_``, ``-``)."""
    type: TaskType
    """What the patch is meant to do: ``refactor`` makes quality the objective, ``perf`` the benchmark, and test
    evidence expects a regression test of ``bugfix`` and ``feature`` patches."""
    repo: str
    """A git repository (path or URL), a plain folder, or a ``.tar.gz``; relative to the task file."""
    base_revision: str | None = None
    """Commit of a git repository; omitted for a folder or archive, whose content hash stands in."""
    submodules: dict[str, str] = Field(default_factory=dict)
    """Local git repositories for the base's git submodules: the submodule's path in ``repo`` to a repository
    holding the commit the base pins (relative to the task file). A submodule not listed is left an empty
    folder, as ``git checkout`` leaves it."""
    setup: str | None = None
    """Command run in the sandbox before the tests, e.g. ``pip install -e .``."""
    env: dict[str, SecretStr] = Field(default_factory=dict)
    """Variables the candidate's commands may see; nothing else from the grader's environment leaks in."""
    tests: TestsSpec
    """How the acceptance tests run and which tests decide the grade."""
    constraints: ConstraintsSpec = Field(default_factory=ConstraintsSpec)
    """Rules on the diff itself: the constraints gate."""
    quality: QualitySpec | None = None
    """Length and complexity limits: the objective of a refactor task, a gate otherwise."""
    perf: PerfSpec | None = None
    """A benchmark timed on the base and the candidate: the perf component."""
    grading: GradingSpec = Field(default_factory=GradingSpec)
    """The grading profile, the objectives' weights and the pass threshold."""
    graders: list[CustomGraderSpec] = Field(default_factory=list)
    """Custom graders, each an objective or a gate."""
    environment: EnvironmentSpec = Field(default_factory=EnvironmentSpec)
    """Where the task's commands run: the sandbox, its limits and the system they run on."""
    agent: AgentSpec = Field(default_factory=AgentSpec, exclude=True)
    """The agent's sandbox policy for ``gradeflow run``; left out of the spec hash (it grades nothing)."""
    review: ReviewSpec = Field(default_factory=ReviewSpec)
    """What a reviewer expects the patch to touch and is asked about it."""
    security: SecuritySpec = Field(default_factory=SecuritySpec)
    """The security hard-stop detector's thresholds."""
    compatibility: CompatibilitySpec = Field(default_factory=CompatibilitySpec)
    """What the compatibility and data-loss hard-stop detectors compare."""
    issue: str | None = None
    """The task's issue text, given to the agent by ``gradeflow checkout`` (never part of the repository)."""
    issue_file: str | None = None
    """A file holding the issue text instead of ``issue``; relative to the task file."""

    _resolve_repo = field_validator("repo")(_resolve)

    @field_validator("submodules")
    @classmethod
    def _resolve_submodules(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        resolved = {}
        for path, location in value.items():
            parts = Path(path).parts
            if not path or Path(path).is_absolute() or ".." in parts or parts[:1] == (".git",):
                raise ValueError(f"submodule path {path!r} must be a relative path inside the repository")
            resolved[Path(path).as_posix()] = _resolve(location, info) or location
        return resolved

    _resolve_issue_file = field_validator("issue_file")(_resolve)

    @model_validator(mode="after")
    def _one_issue(self) -> TaskSpec:
        if self.issue is not None and self.issue_file is not None:
            raise ValueError("give issue or issue_file, not both")
        return self

    def candidate_env(self) -> dict[str, str]:
        """The task's ``env`` with its values revealed, for the sandbox only."""
        return {name: value.get_secret_value() for name, value in self.env.items()}

    def hash_seed(self) -> str:
        """The ``PYTHONHASHSEED`` every run of this task gets (base and candidate alike): nonzero, so hash
        randomization reads on as in a real process, and derived from the task's id and base revision, so
        it is no constant a patch could look for and the baseline's cache key (which names both) stays right."""
        digest = hashlib.sha256(f"{self.task_id}\0{self.base_revision or ''}".encode()).digest()
        return str(int.from_bytes(digest[:4], "big") % 4294967295 + 1)

    def run_env(self, *, pinned_seed: bool = True) -> dict[str, str]:
        """What a run of the task's commands sees beyond the sandbox's own variables: :meth:`hash_seed` as
        ``PYTHONHASHSEED`` (unless ``pinned_seed`` is false), then the task's ``env`` (which may set it)."""
        seed = {"PYTHONHASHSEED": self.hash_seed()} if pinned_seed else {}
        return {**seed, **self.candidate_env()}

    def spec_hash(self) -> str:
        """A stable hash of the spec's content (paths and ``env`` values included), for cache and content keys.

        ``env`` values are masked when the spec is serialized (so Prefect never stores them); their
        hashes stand in here so that changing a value still changes the hash.
        """
        data = self.model_dump(mode="json")
        data["env"] = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in self.candidate_env().items()}
        data["named_files"] = self.named_files_digest()
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def named_files_digest(self) -> str:
        """sha256 of the content of every file the spec names (``tests.hidden``'s files, ``tests.hidden_patch``,
        ``issue_file``), so that a file edited in place changes the cache and content keys; absent ones count
        as absent."""
        digest = hashlib.sha256()
        named = [self.tests.hidden, self.tests.hidden_patch, self.issue_file]
        for root in (Path(p) for p in named if p):
            files = sorted(f for f in root.rglob("*") if f.is_file()) if root.is_dir() else [root]
            for path in files:
                digest.update(f"{path}\0".encode())
                try:
                    digest.update(hashlib.sha256(path.read_bytes()).digest())
                except OSError:
                    digest.update(b"unreadable")
        return digest.hexdigest()


def nothing_to_score(task: TaskSpec) -> str | None:
    """``key: why`` when no objective of ``task`` can be scored, so every grade would be a silent 0; else ``None``.

    The objectives: ``tests`` when a ``fail_to_pass`` test is not quarantined, ``quality`` on a refactor
    with a ``quality`` section, ``perf`` with a benchmark, and custom graders in the objective role.
    """
    if any(g.role == "objective" and g.weight > 0 for g in task.graders):
        return None
    tests = task.tests
    objectives = ["tests"] if [t for t in tests.fail_to_pass if t not in tests.quarantine] else []
    objectives += ["quality"] if task.type == "refactor" and task.quality is not None else []
    objectives += ["perf"] if task.perf is not None else []
    if any(task.grading.weights.get(name, 1.0) > 0 for name in objectives):
        return None
    if objectives:
        return f"grading.weights: every objective of the task ({', '.join(objectives)}) weighs 0, so nothing is scored"
    return (
        "tests.fail_to_pass: no test to fix (empty or all quarantined) and nothing else of the task is scored "
        "(no perf benchmark, no quality limits on a refactor, no objective grader): every grade would be 0"
    )


_LONE_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def patch_bytes(text: str) -> bytes:
    """The bytes of a diff's text: UTF-8, with each byte that was not (read with ``surrogateescape``) as it was.

    A surrogate that stands for no byte (a JSON ``"\\ud800"`` escape) becomes its three ``surrogatepass``
    bytes, so every text has bytes to apply, hash and keep, and the same text always the same bytes.
    """
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:
        escaped = _LONE_SURROGATE.sub(
            lambda m: m.group().encode("utf-8", errors="surrogatepass").decode("utf-8", errors="surrogateescape"), text
        )
        return escaped.encode("utf-8", errors="surrogateescape")


def is_utf8(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8 (so its text travels in JSON as it is)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


PATCH_PARAMETER_BYTES = 256 * 1024
"""Diffs larger than this reach the flow as a file, not as text: Prefect's server refuses a flow run
whose parameters pass 512 KiB, and the submission is one of them."""


class Submission(BaseModel):
    """What an agent handed in: a checkout or a unified diff (exactly one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    submission_id: str = Field(default="submission", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
    workspace: Path | None = None
    """The agent's modified checkout; the patch is its difference from the base."""
    patch: str | None = None
    """The unified diff text."""
    patch_file: Path | None = None
    """A diff over :data:`PATCH_PARAMETER_BYTES`, kept by :meth:`of_patch` under
    ``$GRADEFLOW_HOME/patches``, named by its SHA-256."""

    @model_validator(mode="after")
    def _exactly_one(self) -> Submission:
        if [self.workspace, self.patch, self.patch_file].count(None) != 2:
            raise ValueError("a submission is either a workspace or a patch, exactly one")
        return self

    @classmethod
    def of_patch(cls, submission_id: str, text: str) -> Submission:
        """A diff submission; one too large to travel as a flow parameter, or not UTF-8 (bytes kept as
        surrogate escapes, which JSON cannot carry), is written to a file first (see :func:`patch_bytes`)."""
        data = patch_bytes(text)
        if len(data) <= PATCH_PARAMETER_BYTES and is_utf8(data):
            return cls(submission_id=submission_id, patch=text)
        folder = cache_dir() / "patches"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{hashlib.sha256(data).hexdigest()}.diff"
        if not path.is_file():
            staging = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            staging.write_bytes(data)
            staging.replace(path)
        return cls(submission_id=submission_id, patch_file=path)

    def diff(self) -> str | None:
        """The diff's text (read from :attr:`patch_file` when it was kept there); ``None`` for a checkout."""
        if self.patch_file is not None:
            return self.patch_file.read_bytes().decode("utf-8", errors="surrogateescape")
        return self.patch
