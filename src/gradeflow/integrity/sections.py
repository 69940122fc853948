"""The test-related sections of shared configuration files, compared and spliced back to the base.

``pyproject.toml``: ``[tool.pytest]``, ``[tool.pytest.*]`` and ``[project.entry-points.pytest11]``;
``setup.cfg``: ``[tool:pytest]``; ``tox.ini``: ``[pytest]``; ``package.json``: the ``test``,
``pretest`` and ``posttest`` scripts and the ``jest``, ``mocha`` and ``vitest`` keys. Everything else
in these files is the candidate's to change. Sections are compared parsed (so formatting does not
count); a file that does not parse (whatever its parser raises, :data:`RecursionError` on deep nesting
included) counts as changed whole. Headers are found with re2, linear in the line.
"""

from __future__ import annotations

import configparser
import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import re2

from gradeflow.integrity.bounded import PARSE_ERRORS

__all__ = ["SECTIONS", "sections_differ", "splice_sections"]

_MAX_BYTES = 4 * 1024 * 1024
_TOML_HEADER = re2.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_INI_HEADER = re2.compile(r"^\[([^\]]+)\]")
_JSON_SCRIPTS = ("test", "pretest", "posttest")
_JSON_KEYS = ("jest", "mocha", "vitest")


def _toml_name(raw: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in raw.split("."))


def _toml_test_table(name: str) -> bool:
    name = _toml_name(name)
    return name == "tool.pytest" or name.startswith("tool.pytest.") or name == "project.entry-points.pytest11"


def _toml_sections(text: str) -> dict[str, Any]:
    data = tomllib.loads(text)
    tool = data.get("tool", {}).get("pytest")
    entry = data.get("project", {}).get("entry-points", {}).get("pytest11")
    return {"[tool.pytest]": tool, "[project.entry-points.pytest11]": entry}


def _ini_sections(names: tuple[str, ...]) -> Callable[[str], dict[str, Any]]:
    def read(text: str) -> dict[str, Any]:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        parser.read_string(text)
        return {f"[{n}]": dict(parser[n]) if parser.has_section(n) else None for n in names}

    return read


def _json_sections(text: str) -> dict[str, Any]:
    data = json.loads(text)
    scripts = data.get("scripts", {}) if isinstance(data, dict) else {}
    found = {f"scripts.{k}": scripts.get(k) for k in _JSON_SCRIPTS}
    found.update({k: data.get(k) for k in _JSON_KEYS} if isinstance(data, dict) else {})
    return found


SECTIONS: dict[str, Callable[[str], dict[str, Any]]] = {
    "pyproject.toml": _toml_sections,
    "setup.cfg": _ini_sections(("tool:pytest",)),
    "tox.ini": _ini_sections(("pytest",)),
    "package.json": _json_sections,
}
"""File name → reader of its test-related sections."""


def _read(path: Path) -> str | None:
    if not path.is_file() or path.is_symlink() or path.stat().st_size > _MAX_BYTES:
        return None
    return path.read_text(encoding="utf-8", errors="replace")


def _parsed(path: Path) -> dict[str, Any] | None:
    text = _read(path)
    if text is None:
        return {}
    try:
        return SECTIONS[path.name](text)
    except PARSE_ERRORS:
        return None


def sections_differ(candidate: Path, base: Path) -> list[str]:
    """The test-related sections that differ between the two files (``file`` when one does not parse)."""
    mine, theirs = _parsed(candidate), _parsed(base)
    if mine is None or theirs is None:
        return ["file"]
    return [key for key in sorted({*mine, *theirs}) if mine.get(key) != theirs.get(key)]


def splice_sections(candidate: Path, base: Path) -> bool:
    """Put the base's test-related sections into ``candidate``, the rest kept; ``False`` when it cannot."""
    if candidate.name == "package.json":
        return _splice_json(candidate, base)
    text, original = _read(candidate), _read(base) or ""
    if text is None:
        return False
    header, wanted = (
        (_TOML_HEADER, _toml_test_table)
        if candidate.name == "pyproject.toml"
        else (_INI_HEADER, lambda n: n.strip() in ("tool:pytest", "pytest"))
    )
    kept = _blocks(text, header, lambda n: not wanted(n))
    moved = _blocks(original, header, wanted)
    candidate.write_text(kept.rstrip("\n") + "\n\n" + moved if moved else kept)
    return not sections_differ(candidate, base)


def _blocks(text: str, header: re2._Regexp, keep: Callable[[str], bool]) -> str:
    """The lines of ``text`` in sections whose name ``keep`` accepts (lines before any header count as kept)."""
    out: list[str] = []
    keeping = True
    for line in text.splitlines(keepends=True):
        match = header.match(line.rstrip("\r\n"))
        if match:
            keeping = keep(match.group(1))
        if keeping and (match or out or keep("")):
            out.append(line)
    return "".join(out)


def _splice_json(candidate: Path, base: Path) -> bool:
    try:
        text = _spliced_json(json.loads(_read(candidate) or ""), json.loads(_read(base) or "{}"))
    except PARSE_ERRORS:
        return False
    if text is None:
        return False
    candidate.write_text(text)
    return not sections_differ(candidate, base)


def _spliced_json(mine: Any, theirs: Any) -> str | None:
    """``mine`` with the base's test scripts and keys, as text; ``None`` when either is no object."""
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return None
    scripts = dict(mine.get("scripts") or {})
    for key in _JSON_SCRIPTS:
        scripts.pop(key, None)
        if key in (theirs.get("scripts") or {}):
            scripts[key] = theirs["scripts"][key]
    mine["scripts"] = scripts
    for key in _JSON_KEYS:
        mine.pop(key, None)
        if key in theirs:
            mine[key] = theirs[key]
    return json.dumps(mine, indent=2) + "\n"
