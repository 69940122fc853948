"""The tamper scan of a patch: added code that reaches into the test machinery, read from the files.

Scanned are the changed files that the acceptance run does not reset to the base: not test files
(``tests.test_files``) and not inside a sealed test folder. Those are Python sources and the files that
load code without being imported: ``*.pth``, ``entry_points.txt``, ``setup.cfg`` and ``pyproject.toml``
(for ``pytest11`` entry points). A changed ``sitecustomize.py`` or ``usercustomize.py`` (or the package
of that name: ``sitecustomize/__init__.py`` is imported at interpreter start as well), and any added or
changed compiled module (``*.pyc``, ``*.pyo``, ``*.so``, ``*.pyd``: Python runs it, the scan cannot read
it), is itself a finding. So is a module the patch adds where the interpreter looks first (the repository's
root, ``src/``, the task's ``PYTHONPATH``) under the name of a standard-library module or of the test
runner's own (``src/tomllib.py``, ``pytest.py``): it runs instead of that module, before the harness
takes hold of pytest, whatever its code hides from the AST. Only what the patch adds counts: a finding
is keyed by its kind and detail, and a key the base's version of the file holds n times is forgiven n
times (findings on lines the patch did not add first). A new file compares with nothing. A source that
does not parse (a syntax error, null bytes) is listed as skipped, not reported: Python cannot run it
either. One the scan cannot read (over ``MAX_READ_BYTES``, not a regular file, a link out of the tree or
to a file over the limit, no permission) or whose tree the parser cannot hold is an ``unscannable``
finding: Python may run what nobody read. The whole scan has a time budget (:data:`SCAN_BUDGET_SECONDS`);
files it did not reach in time are ``unscannable`` findings too.
"""

from __future__ import annotations

import hashlib
import io
import os
import site
import sys
import tokenize
from collections import Counter
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from gradeflow.integrity.bounded import BudgetExceeded, Deadline
from gradeflow.integrity.files import readable_file
from gradeflow.integrity.sealing import folders_to_seal
from gradeflow.integrity.tamper_ast import scan_python, unscannable
from gradeflow.models import ChangedFile, TaskSpec
from gradeflow.models.evidence import TamperEvidence, TamperFinding, TamperKind
from gradeflow.models.globs import matches_any

__all__ = ["SCAN_BUDGET_SECONDS", "added_findings", "scan_file", "scan_patch", "startup_imports"]

SCAN_BUDGET_SECONDS = 120.0
"""Seconds the whole scan of one patch may take (every pattern is linear: an honest patch takes well under one)."""

_STARTUP_FILES = frozenset({"sitecustomize.py", "usercustomize.py"})
_ENTRY_POINT_FILES = frozenset({"entry_points.txt", "setup.cfg", "pyproject.toml"})
_COMPILED = (".pyc", ".pyo", ".so", ".pyd")
_ARCHIVE_END = b"PK\x05\x06"  # a zip's end-of-central-directory record
_ARCHIVE_TAIL = 65_536 + 22  # the record and the longest comment it may carry
_RUNNER_MODULES = frozenset(
    {
        *("pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "exceptiongroup", "tomli", "pygments"),
        *("xdist", "attr", "attrs", "importlib_metadata", "zipp", "typing_extensions", "colorama", "argcomplete"),
        # imported at interpreter start by setuptools' distutils-precedence.pth
        "_distutils_hack",
    }
)
_NEVER_IMPORTED = frozenset({"__main__", "test", "this", "antigravity", "idlelib", "turtledemo"})


def startup_imports(folders: list[str]) -> frozenset[str]:
    """Top-level modules the ``.pth`` files in ``folders`` import when an interpreter starts (``import x``
    lines, as :mod:`site` runs them): a file of that name on the import path would run before pytest."""
    found: set[str] = set()
    for folder in folders:
        for pth in sorted(Path(folder).glob("*.pth")) if Path(folder).is_dir() else []:
            try:
                lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                if line.startswith(("import ", "import\t")):
                    statement = line.split(";", 1)[0].removeprefix("import")
                    found |= {part.split(" as ")[0].strip().split(".")[0] for part in statement.split(",")}
    return frozenset(name for name in found if name.isidentifier())


_SHADOWED = (
    (frozenset(sys.stdlib_module_names) - _NEVER_IMPORTED)
    | _RUNNER_MODULES
    | startup_imports([*site.getsitepackages(), site.getusersitepackages()])
)
"""Module names a file on the import path must not take: the standard library's, pytest's and its dependencies',
and those a ``.pth`` of the environment imports at start (but for standard modules no test run imports, whose
names a project's own script may well have: ``test.py``)."""


def scan_patch(
    task_spec: TaskSpec,
    workspace: Path,
    changes: list[ChangedFile],
    added_at: dict[str, set[int]],
    pristine: Path,
    budget: float = SCAN_BUDGET_SECONDS,
) -> TamperEvidence:
    """The findings the patch adds to its changed non-test files (the base's are left out).

    ``added_at``: each changed file's lines the patch added, so findings on lines it kept are forgiven first.
    """
    sealed = folders_to_seal(task_spec, pristine)
    evidence = TamperEvidence(findings=_shadowing(workspace, pristine, _import_roots(task_spec)))
    deadline = Deadline(budget)
    for change in changes:
        if change.status == "removed":
            continue
        if matches_any(change.path, task_spec.tests.test_files) or _inside(change.path, sealed):
            continue
        if not _scanned_type(change.path):
            evidence.findings += _archive(workspace, change.path)
            continue
        try:
            deadline.check()
            found = _scan_change(change, workspace, pristine, added_at.get(change.path, set()), deadline)
        except BudgetExceeded as exc:
            found = [unscannable(change.path, f"the scan {exc}")]
        if found is None:
            evidence.files_skipped.append(change.path)
            continue
        evidence.files_scanned.append(change.path)
        evidence.findings += found
    return evidence


def _scan_change(
    change: ChangedFile, workspace: Path, pristine: Path, added_lines: set[int], deadline: Deadline
) -> list[TamperFinding] | None:
    """The findings one changed file adds, or ``None`` when it does not parse (Python cannot run it either)."""
    if change.path.endswith(_COMPILED):
        return [_compiled_file(change.path)]
    data = _read(workspace, change.path)
    if isinstance(data, str):
        return [unscannable(change.path, data)]
    found = scan_file(change.path, data, deadline)
    if found is None:
        return None
    return added_findings(found, _base_findings(change, pristine), added_lines)


def scan_file(path: str, data: bytes, deadline: Deadline | None = None) -> list[TamperFinding] | None:
    """All findings in one file's content (none for a type the scan does not read); ``None`` if unparsable."""
    name = PurePosixPath(path).name
    if name.endswith(".py"):
        found = scan_python(path, data, deadline=deadline)
        if _is_startup_module(path):
            found = [*(found or []), _startup_file(path, data)]
        if (disguise := _source_encoding(path, data)) is not None:
            found = [*(found or []), disguise]
        return found
    text = data.decode("utf-8", errors="replace")
    if name.endswith(".pth"):
        return list(_pth_findings(path, text))
    if name in _ENTRY_POINT_FILES:
        return list(_entry_point_findings(path, text))
    return []


def added_findings(
    candidate: list[TamperFinding], base: list[TamperFinding], added_lines: set[int] | None = None
) -> list[TamperFinding]:
    """The candidate's findings less those the base already had, counted per (kind, detail) key.

    Findings on lines the patch did not add are forgiven first, so the ones reported are the new ones.
    """
    forgiven = Counter((f.kind, f.detail) for f in base)
    added = set(added_lines or ())
    kept = []
    for finding in sorted(candidate, key=lambda f: (f.line in added, f.line)):
        key = (finding.kind, finding.detail)
        if forgiven[key] > 0:
            forgiven[key] -= 1
        else:
            kept.append(finding)
    return sorted(kept, key=lambda f: (f.line, f.kind, f.detail))


def _scanned_type(path: str) -> bool:
    name = PurePosixPath(path).name
    return name.endswith((".py", ".pth", *_COMPILED)) or name in _ENTRY_POINT_FILES


def _inside(path: str, folders: list[str]) -> bool:
    return any(PurePosixPath(path).is_relative_to(folder) for folder in folders)


def _read(root: Path, path: str) -> bytes | str:
    """A regular file under ``root`` (never through a link out of it), up to ``MAX_READ_BYTES``; else why not."""
    try:
        return readable_file(root, path).read_bytes()
    except FileNotFoundError as exc:
        why = str(exc) if str(exc) != path else "not a regular file inside the tree (a link out of it, or to none)"
        return why
    except OSError as exc:
        return f"unreadable ({exc.strerror or type(exc).__name__})"


def _read_and_scan(root: Path, path: str) -> list[TamperFinding] | None:
    data = _read(root, path)
    return None if isinstance(data, str) else scan_file(path, data)


def _base_findings(change: ChangedFile, pristine: Path) -> list[TamperFinding]:
    """The findings of the base's version of a changed file (none for a new file)."""
    if change.status == "added":
        return []
    return _read_and_scan(pristine, change.old_path or change.path) or []


def _import_roots(task_spec: TaskSpec) -> set[str]:
    """Repository folders searched before the standard library: the root (``python -m``), ``src``, ``PYTHONPATH``."""
    roots = {".", "src"}
    pythonpath = task_spec.env.get("PYTHONPATH")
    for entry in (pythonpath.get_secret_value() if pythonpath is not None else "").split(":"):
        entry = entry.strip().removeprefix("./").rstrip("/")
        if entry and not entry.startswith(("/", "$", "~")) and ".." not in PurePosixPath(entry).parts:
            roots.add(str(PurePosixPath(entry)))
    return roots


def _shadowing(workspace: Path, pristine: Path, roots: set[str]) -> list[TamperFinding]:
    """A finding per module in an import root of ``workspace`` named like a standard or runner module, that
    the base's root does not hold: a module file, a package, or a link to a folder (links are followed, so
    a root that is itself a link is read where it leads)."""
    found = []
    for root in sorted(roots):
        try:
            entries = sorted((workspace / root).iterdir()) if (workspace / root).is_dir() else []
        except OSError:
            continue
        for entry in entries:
            name = _module_name(entry)
            path = str(PurePosixPath(root, entry.name))
            if name is None or name not in _SHADOWED or os.path.lexists(pristine / path):
                continue
            message = (
                f"adds a module {name} where the interpreter looks first: it runs instead of the standard "
                "library's or the test runner's own, before the harness takes hold of pytest"
            )
            found.append(
                TamperFinding(path=path, line=0, kind="import-hook", detail=f"shadows {name}", message=message)
            )
    return found


def _module_name(entry: Path) -> str | None:
    """The module an import-root entry provides (``tomllib.py``, a ``tomllib/`` package, a link to one)."""
    try:
        if entry.is_dir():
            return entry.name if (entry / "__init__.py").is_file() else None
    except OSError:
        return None
    if entry.name.endswith((".py", *_COMPILED)):
        return entry.name.split(".", 1)[0]  # calc.cpython-311-x86_64-linux-gnu.so is module calc
    return None


def _is_startup_module(path: str) -> bool:
    """``sitecustomize.py``/``usercustomize.py``, or a package of that name (``site`` imports either)."""
    pure = PurePosixPath(path)
    return pure.name in _STARTUP_FILES or (pure.name == "__init__.py" and f"{pure.parent.name}.py" in _STARTUP_FILES)


def _startup_file(path: str, data: bytes) -> TamperFinding:
    pure = PurePosixPath(path)
    name = f"{pure.parent.name}/{pure.name}" if pure.name == "__init__.py" else pure.name  # the package form
    digest = hashlib.sha256(data).hexdigest()[:12]
    message = f"{name} runs at every interpreter start, before the tests and their harness"
    # The content's hash is the detail, so any change to a startup file counts as added.
    return TamperFinding(path=path, line=0, kind="startup-hook", detail=f"{name} {digest}", message=message)


def _source_encoding(path: str, data: bytes) -> TamperFinding | None:
    """A finding when ``data`` declares a source encoding under which Python reads other ASCII than the bytes show
    as UTF-8 (``utf-7``: ``+AAo-`` is a line break; a Shift JIS lead byte takes the backslash after it): the code
    Python runs is then not the text every other reader sees (the diff, the quality rules, forbidden patterns, a
    reviewer). Latin-1 or cp1252 text changes nothing a reader could miss: its ASCII is the same either way."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        python_reads = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None  # an unknown declaration or bytes it cannot decode: Python cannot run the file either
    if _ascii(python_reads) == _ascii(data.decode("utf-8", errors="replace")):
        return None
    message = f"declares the source encoding {encoding}, under which Python reads other code than the file's text shows"
    return TamperFinding(path=path, line=0, kind="source-encoding", detail=f"encoding {encoding}", message=message)


def _ascii(text: str) -> str:
    return text.encode("ascii", errors="ignore").decode("ascii")


def _archive(workspace: Path, path: str) -> list[TamperFinding]:
    """A changed file Python can import code from as a path entry (a zip archive, whatever its name: zipimport
    looks for the end-of-archive record in its last 64 KiB), which the scan does not read."""
    target = (workspace / path).resolve()
    if not target.is_relative_to(workspace.resolve()) or not target.is_file():
        return []  # not a regular file of the tree (the snapshot refuses what is neither file nor link)
    try:
        with target.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - _ARCHIVE_TAIL))
            tail = handle.read(_ARCHIVE_TAIL)
    except OSError as exc:
        return [unscannable(path, f"unreadable ({exc.strerror or type(exc).__name__})")]
    if _ARCHIVE_END not in tail:
        return []
    message = "adds or changes an archive Python can import code from (on a path or a package's __path__), unread"
    return [TamperFinding(path=path, line=0, kind="dynamic-exec", detail=f"archive {path}", message=message)]


def _compiled_file(path: str) -> TamperFinding:
    native = not path.endswith((".pyc", ".pyo"))
    kind: TamperKind = "ctypes" if native else "dynamic-exec"
    what = "a native extension module" if native else "compiled bytecode"
    message = f"adds or changes {what}, which Python imports and the scan cannot read"
    # Never compared with the base: any change to a compiled module is the patch's own.
    return TamperFinding(path=path, line=0, kind=kind, detail=f"compiled {path}", message=message)


def _pth_findings(path: str, text: str) -> Iterator[TamperFinding]:
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("import ", "import\t")):
            message = "an import line of a .pth file runs code at interpreter start"
        else:
            message = f"a .pth file adds {line[:80]!r} to sys.path at interpreter start"
        yield TamperFinding(path=path, line=number, kind="startup-hook", detail=line[:200], message=message)


def _entry_point_findings(path: str, text: str) -> Iterator[TamperFinding]:
    """Lines declaring ``pytest11`` entry points: a ``[...pytest11]`` section, a ``pytest11 =`` key and its values."""
    section = key = False
    message = "declares a pytest11 entry point, which pytest loads as a plugin in every run"
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section, key = "pytest11" in line, False
        elif not raw[0].isspace():
            key = line.split("=", 1)[0].strip().strip("\"'") == "pytest11"
        if section or key or "pytest11" in line:
            yield TamperFinding(path=path, line=number, kind="entry-points", detail=line[:200], message=message)
