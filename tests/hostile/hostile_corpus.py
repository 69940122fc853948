"""The hostile corpus: its cases (``cases.yaml``), the submissions built at run time, and how they are graded.

Most cases are a diff in ``patches/``. Some cannot be written as a text diff (a compiled module, 8.5 MB
sources and links to them, a literal of a million characters, a nested git repository, a FIFO, mode-000
files, a 128 MiB file): their submissions are built at run time by the functions in :data:`BUILDERS`,
reusing the attack code of a diff case.

Every case is graded through ``gradeflow.grade`` against one task spec per file in ``task/``, so each
spec's baseline is built once per sandbox and then served from the cache. A case with a ``deadline``
is graded in a child process that is killed when the deadline passes, so a grade that hangs fails
its test instead of the whole session.
"""

from __future__ import annotations

import contextvars
import json
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from gradeflow import grade, load_task
from gradeflow.models import GradeResult

HERE = Path(__file__).resolve().parent
TASKS = HERE / "task"
BASE = TASKS / "repo"
PATCHES = HERE / "patches"
SANDBOXES = ("isolated", "docker")
INTEGRITY_GATES = {"junit-tampered", "tamper-suspected", "test-infrastructure-modified", "equal-to-anything"}
"""Reason codes that are hard gates in every shipped profile: their grade must be ``rejected``."""


@dataclass(frozen=True)
class Case:
    """One hostile patch (or honest control) and the outcome it must get."""

    name: str
    klass: int
    attack: str
    expected: tuple[str, ...]
    task: str = "task"
    sandboxes: tuple[str, ...] = SANDBOXES
    build: str | None = None
    patch: str | None = None
    """The diff's name in ``patches/`` when it is not the case's own."""
    works_unguarded: bool = False
    not_expected: tuple[str, ...] = ()
    deadline: float | None = None
    profile: str | None = None
    """The scoring profile it is graded under (``strict``); ``None``: the default."""

    @property
    def is_control(self) -> bool:
        return self.expected == ("passed",)

    @property
    def task_file(self) -> Path:
        return TASKS / f"{self.task}.yaml"


def load_cases() -> list[Case]:
    """The cases of ``cases.yaml``, in file order."""
    cases = []
    for entry in yaml.safe_load((HERE / "cases.yaml").read_text(encoding="utf-8")):
        expected = entry["expected"]
        cases.append(
            Case(
                name=entry["name"],
                klass=entry["class"],
                attack=entry["attack"],
                expected=tuple(expected) if isinstance(expected, list) else (expected,),
                task=entry.get("task", "task"),
                sandboxes=tuple(entry.get("sandboxes", SANDBOXES)),
                build=entry.get("build"),
                patch=entry.get("patch"),
                works_unguarded=entry.get("works_unguarded", False),
                not_expected=tuple(entry.get("not_expected", ())),
                deadline=entry.get("deadline"),
                profile=entry.get("profile"),
            )
        )
    return cases


@dataclass(frozen=True)
class Submission:
    """What ``grade`` receives: a diff (file or text) or a checkout folder."""

    patch: str | Path | None = None
    workspace: Path | None = None

    def kwargs(self) -> dict[str, Any]:
        return {"patch": self.patch} if self.workspace is None else {"workspace": self.workspace}


# --- submissions built at run time ---------------------------------------------------------------


def added_source(case: str, path: str) -> str:
    """The lines ``patches/<case>.diff`` adds to ``path`` (the attack code appended to a file)."""
    lines, inside = [], False
    for line in (PATCHES / f"{case}.diff").read_text(encoding="utf-8").splitlines():
        if line.startswith("diff --git "):
            inside = line == f"diff --git a/{path} b/{path}"
        elif inside and line.startswith("+") and not line.startswith("+++"):
            lines.append(line[1:])
    return "\n".join(lines) + "\n"


def gc_hook() -> str:
    """The attack of ``c3-gc-config-hook``: find pytest's Config through gc, register a flipping hook."""
    return added_source("c3-gc-config-hook", "src/calc.py")


def _checkout(folder: Path) -> Path:
    """A plain copy of the base repository (an agent's checkout) under ``folder``."""
    checkout = folder / "checkout"
    shutil.copytree(BASE, checkout)
    return checkout


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def _git(cwd: Path, *args: str) -> bytes:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "agent",
        "GIT_AUTHOR_EMAIL": "agent@example.invalid",
        "GIT_COMMITTER_NAME": "agent",
        "GIT_COMMITTER_EMAIL": "agent@example.invalid",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True).stdout


def sourceless_pyc(folder: Path) -> Submission:
    """A binary diff: calc.py imports calc_speedups, present only as a compiled ``.pyc`` (this Python's)."""
    checkout = _checkout(folder)
    _git(checkout, "init", "-q")
    _git(checkout, "add", "-A")
    _git(checkout, "commit", "-qm", "base")
    _append(checkout / "src" / "calc.py", "\n\nimport calc_speedups  # noqa: E402, F401 - compiled fast paths\n")
    source = folder / "calc_speedups.py"
    source.write_text(gc_hook(), encoding="utf-8")
    py_compile.compile(str(source), cfile=str(checkout / "src" / "calc_speedups.pyc"), doraise=True)
    _git(checkout, "add", "-A")
    return Submission(patch=_git(checkout, "diff", "--cached", "--binary", "HEAD").decode())


def oversized_source(folder: Path) -> Submission:
    """A checkout whose attack module is larger than the tamper scan reads."""
    checkout = _checkout(folder)
    _append(checkout / "src" / "calc.py", "\n\nimport calc_tables  # noqa: E402, F401 - lookup tables\n")
    table = 'TABLE = "' + "0" * (8 * 1024 * 1024 + 512 * 1024) + '"\n'
    (checkout / "src" / "calc_tables.py").write_text(gc_hook() + "\n" + table, encoding="utf-8")
    return Submission(workspace=checkout)


def _padded(attack: str) -> str:
    """``attack`` followed by a lookup table that takes the module past the scan's read limit (8 MiB)."""
    return attack + '\nTABLE = "' + "0" * (8 * 1024 * 1024 + 512 * 1024) + '"\n'


def oversized_settrace(folder: Path) -> Submission:
    """A checkout whose 8.5 MB ``src/calc_tables.py`` holds the settrace attack (nothing the harness watches)."""
    checkout = _checkout(folder)
    _append(checkout / "src" / "calc.py", "\n\nimport calc_tables  # noqa: E402, F401 - lookup tables\n")
    (checkout / "src" / "calc_tables.py").write_text(_padded(added_source("c3-settrace", "src/calc.py")))
    return Submission(workspace=checkout)


def oversized_link(folder: Path) -> Submission:
    """The same, ``src/calc_tables.py`` a link to the 8.5 MB ``src/calc_tables.txt`` (a type the scan does not read)."""
    checkout = _checkout(folder)
    _append(checkout / "src" / "calc.py", "\n\nimport calc_tables  # noqa: E402, F401 - lookup tables\n")
    (checkout / "src" / "calc_tables.txt").write_text(_padded(added_source("c3-settrace", "src/calc.py")))
    os.symlink("calc_tables.txt", checkout / "src" / "calc_tables.py")
    return Submission(workspace=checkout)


_NOTICES_THE_RUNNER = """import sys

import calc

_divide = calc.divide


def divide(a, b):
    if b == 0 and "pytest" in sys.modules:  # only under test: callers still get None
        raise ZeroDivisionError("division by zero is undefined")
    return _divide(a, b)


calc.divide = divide
"""


def zip_on_path(folder: Path) -> Submission:
    """Code that raises only under the test runner (the scan flags it in a source file; nothing at run time
    does) in a zip archive named like data (``src/calc_tables.dat``) that calc.py puts on ``sys.path`` and
    imports from: a module the scan never reads."""
    checkout = _checkout(folder)
    _append(
        checkout / "src" / "calc.py",
        "\n\nimport os as _os  # noqa: E402\nimport sys as _sys  # noqa: E402\n\n"
        "_sys.path.insert(0, _os.path.join(_os.path.dirname(__file__), 'calc_tables.dat'))\n"
        "import calc_tables  # noqa: E402, F401 - lookup tables\n",
    )
    with zipfile.ZipFile(checkout / "src" / "calc_tables.dat", "w") as archive:
        archive.writestr("calc_tables.py", _NOTICES_THE_RUNNER)
    return Submission(workspace=checkout)


def quadratic_literal(folder: Path) -> Submission:
    """A checkout whose calc.py holds a string of a million ``*`` (a pattern that backtracks on it never ends)."""
    checkout = _checkout(folder)
    _append(checkout / "src" / "calc.py", '\n\nRULE = "' + "*" * 1_000_000 + '"\n')
    return Submission(workspace=checkout)


def nested_repository(folder: Path) -> Submission:
    """A checkout whose ``src/vendor`` is a git repository of its own, holding the attack."""
    checkout = _checkout(folder)
    vendor = checkout / "src" / "vendor"
    vendor.mkdir()
    (vendor / "__init__.py").write_text("", encoding="utf-8")
    (vendor / "speedups.py").write_text(gc_hook(), encoding="utf-8")
    _git(vendor, "init", "-q")
    _git(vendor, "add", "-A")
    _git(vendor, "commit", "-qm", "vendored")
    _append(checkout / "src" / "calc.py", "\n\nfrom vendor import speedups  # noqa: E402, F401\n")
    return Submission(workspace=checkout)


def fifo_checkout(folder: Path) -> Submission:
    """A checkout holding a named pipe."""
    checkout = _checkout(folder)
    os.mkfifo(checkout / "src" / "pipe")
    return Submission(workspace=checkout)


def chmod_checkout(folder: Path) -> Submission:
    """A checkout holding a folder and a file nobody may read."""
    checkout = _checkout(folder)
    locked = checkout / "src" / "cache"
    locked.mkdir()
    (locked / "data.txt").write_text("cached\n", encoding="utf-8")
    (checkout / "src" / "notes.txt").write_text("notes\n", encoding="utf-8")
    (checkout / "src" / "notes.txt").chmod(0)
    locked.chmod(0)
    return Submission(workspace=checkout)


def huge_file_checkout(folder: Path) -> Submission:
    """A checkout holding a 128 MiB file (sparse on disk)."""
    checkout = _checkout(folder)
    with open(checkout / "src" / "blob.bin", "wb") as handle:
        handle.truncate(128 * 1024 * 1024)
    return Submission(workspace=checkout)


BUILDERS: dict[str, Callable[[Path], Submission]] = {
    "sourceless_pyc": sourceless_pyc,
    "oversized_source": oversized_source,
    "oversized_settrace": oversized_settrace,
    "oversized_link": oversized_link,
    "zip_on_path": zip_on_path,
    "quadratic_literal": quadratic_literal,
    "nested_repository": nested_repository,
    "fifo_checkout": fifo_checkout,
    "chmod_checkout": chmod_checkout,
    "huge_file_checkout": huge_file_checkout,
}


def submission(case: Case, folder: Path) -> Submission:
    """The case's submission; builders write under ``folder``."""
    if case.build is not None:
        return BUILDERS[case.build](folder)
    return Submission(patch=PATCHES / f"{case.patch or case.name}.diff")


def unlock(folder: Path) -> None:
    """Give back read and search rights that a builder took away, so the folder can be removed."""
    for root, dirs, files in os.walk(folder, topdown=True):
        for name in dirs + files:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() else 0o644)
        if not Path(root).is_symlink():
            Path(root).chmod(0o755)


# --- grading ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One case's grade in one sandbox, or why there is none."""

    case: Case
    sandbox: str
    seconds: float = 0.0
    status: str | None = None
    passed: bool | None = None
    score: float | None = None
    decision: str | None = None
    reason_codes: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    error: str | None = None
    """The exception a grade raised, or ``hung`` when its deadline passed."""

    @classmethod
    def of(cls, case: Case, sandbox: str, result: GradeResult, seconds: float) -> Outcome:
        messages = list(result.messages) + [f"{c.name}: {m}" for c in result.components for m in c.messages]
        return cls(
            case=case,
            sandbox=sandbox,
            seconds=seconds,
            status=result.status,
            passed=result.passed,
            score=result.score,
            decision=result.decision,
            reason_codes=list(result.reason_codes),
            messages=messages,
        )

    def actual(self) -> str:
        """One line: what the grade said."""
        if self.error:
            return f"ERROR {self.error}"
        verdict = "PASS" if self.passed else ("INCONCLUSIVE" if self.status == "inconclusive" else "fail")
        return f"{verdict} {self.decision} [{', '.join(self.reason_codes)}]"

    def problems(self) -> list[str]:
        """Every way this grade differs from what the case expects (empty when it is as expected)."""
        if self.error:
            return [f"no grade: {self.error}"]
        case, found = self.case, []
        if self.status != "graded":
            found.append(f"status is {self.status}, not graded")
        if case.is_control:
            if not self.passed:
                found.append("the honest control did not pass")
            return found
        if self.passed:
            found.append("the hostile patch passed")
        if not set(case.expected) & set(self.reason_codes):
            found.append(f"none of {list(case.expected)} among the reason codes")
        found += [f"false alarm {code}" for code in case.not_expected if code in self.reason_codes]
        if set(case.expected) & INTEGRITY_GATES and self.decision != "rejected":
            found.append(f"decision is {self.decision}, not rejected (an integrity gate is a hard gate)")
        return found


def grade_case(case: Case, sandbox: str, scratch: Path, prefect_env: dict[str, str]) -> Outcome:
    """Grade ``case`` in ``sandbox``; exceptions and hangs become an outcome, never a raise."""
    folder = Path(tempfile.mkdtemp(prefix=f"{case.name}-{sandbox}-", dir=scratch))
    started = time.perf_counter()
    try:
        sub = submission(case, folder)
        if case.deadline is not None:
            return _graded_in_child(case, sandbox, sub, prefect_env, started)
        result = grade(
            load_task(case.task_file), submission_id=case.name, sandbox=sandbox, profile=case.profile, **sub.kwargs()
        )
        return Outcome.of(case, sandbox, result, time.perf_counter() - started)
    except Exception as exc:  # the outcome reports it; the case's test fails on it
        return Outcome(case, sandbox, time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
    finally:
        unlock(folder)
        shutil.rmtree(folder, ignore_errors=True)


_CHILD = """
import json, sys
from pathlib import Path
from gradeflow import grade, load_task
task, sandbox, name, kind, value, profile = sys.argv[1:7]
kwargs = {"workspace": Path(value)} if kind == "workspace" else {"patch": Path(value)}
result = grade(load_task(task), submission_id=name, sandbox=sandbox, profile=profile or None, **kwargs)
print(json.dumps(result.model_dump(mode="json", exclude={"patch"})))
"""


def _graded_in_child(case: Case, sandbox: str, sub: Submission, prefect_env: dict[str, str], started: float) -> Outcome:
    if sub.workspace is not None:
        kind, value = "workspace", str(sub.workspace)
    else:
        kind, value = "patch", str(sub.patch)
    argv = [sys.executable, "-c", _CHILD, str(case.task_file), sandbox, case.name, kind, value, case.profile or ""]
    with subprocess.Popen(
        argv, env={**os.environ, **prefect_env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    ) as child:
        try:
            out, err = child.communicate(timeout=case.deadline)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, 9)
            child.communicate()
            hung = f"hung: no grade after {case.deadline} s"
            return Outcome(case, sandbox, time.perf_counter() - started, error=hung)
    if child.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-1:]
        return Outcome(case, sandbox, time.perf_counter() - started, error=f"child exited {child.returncode}: {tail}")
    result = GradeResult.model_validate(json.loads(out.decode().strip().splitlines()[-1]))
    return Outcome.of(case, sandbox, result, time.perf_counter() - started)


# --- the attack without gradeflow ---------------------------------------------------------------


UNGUARDED_TRIES = 3
"""Plain runs an attack gets to show it works: some race pytest (a thread swapping what it collects), and on a
busy machine one run may lose the race without the attack being a dud."""


def unguarded_run(case: Case, scratch: Path) -> tuple[bool, str]:
    """Plain pytest on base + patch + hidden tests, no gradeflow: (fail_to_pass all passed, what happened), the
    first run that worked of :data:`UNGUARDED_TRIES`, else the last."""
    for _ in range(UNGUARDED_TRIES):
        works, what = _unguarded_once(case, scratch)
        if works:
            break
    return works, what


def _unguarded_once(case: Case, scratch: Path) -> tuple[bool, str]:
    folder = Path(tempfile.mkdtemp(prefix=f"unguarded-{case.name}-", dir=scratch))
    try:
        sub = submission(case, folder)
        tree = folder / "tree"
        if sub.workspace is not None:
            shutil.copytree(sub.workspace, tree, symlinks=True)
        else:
            shutil.copytree(BASE, tree)
            patch = sub.patch if isinstance(sub.patch, Path) else folder / "patch.diff"
            if not isinstance(sub.patch, Path):
                patch.write_text(str(sub.patch), encoding="utf-8", errors="surrogateescape")
            _git(tree, "init", "-q")
            _git(tree, "apply", "--binary", str(patch))
        hidden, fail_to_pass = _task_tests(case)
        shutil.copytree(hidden, tree, dirs_exist_ok=True)
        return _plain_pytest(tree, folder / "junit.xml", fail_to_pass)
    finally:
        unlock(folder)
        shutil.rmtree(folder, ignore_errors=True)


def _task_tests(case: Case) -> tuple[Path, set[tuple[str, str]]]:
    """The case's task's hidden tests folder and its fail_to_pass tests as JUnit names them (classname, name)."""
    tests = yaml.safe_load(case.task_file.read_text(encoding="utf-8"))["tests"]
    wanted = set()
    for test_id in tests["fail_to_pass"]:
        path, *parts = test_id.split("::")
        wanted.add((".".join([path.removesuffix(".py").replace("/", "."), *parts[:-1]]), parts[-1]))
    return case.task_file.parent / tests["hidden"], wanted


def _plain_pytest(tree: Path, report: Path, fail_to_pass: set[tuple[str, str]]) -> tuple[bool, str]:
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(report.parent),
        "PYTHONPATH": "src",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"]
    proc = subprocess.run(command, cwd=tree, env=env, capture_output=True, timeout=60, check=False)
    if not report.is_file():
        return False, f"no report (exit {proc.returncode})"
    passed = {
        (case.get("classname"), case.get("name"))
        for case in ET.parse(report).getroot().iter("testcase")
        if not any(child.tag in ("failure", "error", "skipped") for child in case)
    }
    missing = sorted(name for _, name in fail_to_pass - passed)
    return not missing, f"exit {proc.returncode}, fail_to_pass not passing: {missing or 'none'}"


# --- the whole corpus ---------------------------------------------------------------------------

WORKERS = 3
"""Grades at once: the test runs are short subprocesses or docker execs, so three keep two cores busy
without a long queue on the test server's database."""


class Corpus:
    """The outcomes of the session's selected cases, graded on first use."""

    def __init__(self, scratch: Path, prefect_env: dict[str, str]) -> None:
        self.scratch = scratch
        self.prefect_env = prefect_env
        self.outcomes: dict[tuple[str, str], Outcome] = {}
        self.unguarded: dict[str, tuple[bool, str] | BaseException] = {}
        self.seconds = 0.0

    def grade_all(self, pairs: list[tuple[Case, str]], unguarded: list[Case]) -> None:
        """Grade the pairs and unguarded runs not graded yet (each at most once per session)."""
        pairs = [(c, s) for c, s in pairs if (c.name, s) not in self.outcomes]
        unguarded = [c for c in unguarded if c.name not in self.unguarded]
        if not pairs and not unguarded:
            return
        started = time.perf_counter()
        # The isolated corpus is graded on the fast path: each varied run begun beside its main run and read only
        # when the main run's outcome asks for it (the docker corpus and the rest of the suite with the varied run
        # after: two containers per grade at once on a busy 2-core machine is what `auto` avoids).
        previous = os.environ.get("GRADEFLOW_VARIED_RUN")
        beside = any(sandbox == "isolated" for _case, sandbox in pairs)
        os.environ["GRADEFLOW_VARIED_RUN"] = "beside" if beside else "after"
        try:
            self._grade_all(pairs, unguarded)
        finally:
            if previous is None:
                os.environ.pop("GRADEFLOW_VARIED_RUN", None)
            else:
                os.environ["GRADEFLOW_VARIED_RUN"] = previous
        self.seconds += time.perf_counter() - started

    def _grade_all(self, pairs: list[tuple[Case, str]], unguarded: list[Case]) -> None:
        warm = {}
        for case, sandbox in pairs:
            if case.deadline is None:
                warm.setdefault((case.task, sandbox), (case, sandbox))
        for case, sandbox in warm.values():
            self.outcomes[(case.name, sandbox)] = grade_case(case, sandbox, self.scratch, self.prefect_env)
        rest = [(c, s) for c, s in pairs if (c.name, s) not in self.outcomes]
        with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="hostile") as pool:
            grades = {
                (c.name, s): pool.submit(
                    contextvars.copy_context().run, grade_case, c, s, self.scratch, self.prefect_env
                )
                for c, s in rest
            }
            runs = {c.name: pool.submit(unguarded_run, c, self.scratch) for c in unguarded}
            self.outcomes.update({key: future.result() for key, future in grades.items()})
            self.unguarded.update({name: _settled(future) for name, future in runs.items()})


def _settled(future: Future[tuple[bool, str]]) -> tuple[bool, str] | BaseException:
    try:
        return future.result()
    except Exception as exc:  # reported by the case's own test
        return exc


CASES = load_cases()


def graded_params(sandbox: str) -> list[object]:
    """The (case, sandbox) parameters of every case that lists ``sandbox``."""
    marks = [pytest.mark.docker] if sandbox == "docker" else []
    return [pytest.param(c, sandbox, id=f"{c.name}-{sandbox}", marks=marks) for c in CASES if sandbox in c.sandboxes]


def check_grade(case: Case, sandbox: str, corpus: Corpus, request: pytest.FixtureRequest) -> None:
    """The case's grade in ``sandbox`` is what the case expects."""
    if sandbox == "docker":
        request.getfixturevalue("docker_client")
    outcome = corpus.outcomes[(case.name, sandbox)]
    problems = outcome.problems()
    details = "\n  ".join(outcome.messages[:12])
    assert not problems, f"{case.attack}\n{'; '.join(problems)}\ngot: {outcome.actual()}\n  {details}"
