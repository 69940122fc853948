"""Reading git's diff output by the real file names.

git C-quotes a name that holds a control character, a double quote or a backslash (and, unless
``core.quotePath=false``, any byte above 127): ``"src/tab\\tname.py"``, ``"src/\\303\\251.py"``. The
helpers here undo that quoting, so a name with a space, a tab, a newline or an ``é`` is looked up as
the file it is. They read bytes, because a name need not be UTF-8; names are decoded the way the
``-z`` listings are (UTF-8, invalid bytes replaced).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["AddedLines", "FileDiff", "added_by_path", "file_diffs", "header_name", "unquote"]

AddedLines = dict[str, list[tuple[int, str]]]
"""Per file, the lines a diff adds: (line number in the new file, text without the line end)."""

_ESCAPES = {
    ord("a"): 0x07,
    ord("b"): 0x08,
    ord("t"): 0x09,
    ord("n"): 0x0A,
    ord("v"): 0x0B,
    ord("f"): 0x0C,
    ord("r"): 0x0D,
}
_OCTAL = re.compile(rb"[0-7]{3}")
_HUNK = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NAMED = (b"rename from ", b"rename to ", b"copy from ", b"copy to ")


@dataclass
class FileDiff:
    """One file of a diff: its names before and after, and the lines the diff adds and removes."""

    path: str | None
    """The path after the diff; ``None`` for a deleted file."""
    old_path: str | None
    """The path before the diff; ``None`` for an added file."""
    added: list[tuple[int, str]] = field(default_factory=list)
    """(line number in the new file, text without the line end) of each added line."""
    removed: list[int] = field(default_factory=list)
    """Line numbers, in the old file, of the removed lines."""


def unquote(raw: bytes) -> bytes:
    """A name as git printed it, without its C quoting (returned as it is when it is not quoted)."""
    if len(raw) < 2 or not raw.startswith(b'"') or not raw.endswith(b'"'):
        return raw
    body, out, i = raw[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] != ord("\\") or i + 1 == len(body):
            out.append(body[i])
            i += 1
        elif _OCTAL.fullmatch(body, i + 1, i + 4):
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(_ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
    return bytes(out)


def _quoted_end(rest: bytes) -> int:
    """The index just past the closing quote of the quoted name ``rest`` starts with."""
    i = 1
    while i < len(rest) and rest[i] != ord('"'):
        i += 2 if rest[i] == ord("\\") else 1
    return i + 1


def header_name(rest: bytes) -> bytes:
    """The name at the start of a ``---``/``+++``/``rename from`` header's remainder, unquoted.

    A quoted name ends at its closing quote; a plain one at a tab (git, and ``diff -u``, may follow it
    with a tab and more), since a name holding a tab is always quoted.
    """
    if rest.startswith(b'"'):
        return unquote(rest[: _quoted_end(rest)])
    return rest.split(b"\t", 1)[0].rstrip(b"\r")


def _git_names(rest: bytes) -> tuple[bytes, bytes]:
    """The two names of a ``diff --git`` line, prefixes kept.

    A plain name cannot hold a double quote, so a quoted second name starts at the first `` "``; two
    plain names with spaces are split where both halves name the same file (a rename or copy has
    ``rename from``/``to`` lines that say the names exactly).
    """
    if rest.startswith(b'"'):
        end = _quoted_end(rest)
        return unquote(rest[:end]), header_name(rest[end:].lstrip(b" "))
    if b' "' in rest:
        first, second = rest.split(b' "', 1)
        return first, unquote(b'"' + second)
    half = len(rest) // 2
    if len(rest) % 2 and rest[half : half + 1] == b" " and rest[2:half] == rest[half + 3 :]:
        return rest[:half], rest[half + 1 :]
    first, _, second = rest.partition(b" b/")
    return first, b"b/" + second


def _name(raw: bytes, prefix: bytes) -> str | None:
    if raw == b"/dev/null":
        return None
    return raw.removeprefix(prefix).decode("utf-8", errors="replace")


class _Reader:
    """The state of one pass over a diff: the file being read and the hunk lines still to come."""

    def __init__(self) -> None:
        self.files: list[FileDiff] = []
        self.current: FileDiff | None = None
        self.in_header = False
        """Between a ``diff --git`` line and its first hunk: a ``---`` there belongs to that file."""
        self.old_left = self.new_left = self.old_no = self.new_no = 0

    def line(self, line: bytes) -> None:
        if self.old_left > 0 or self.new_left > 0:
            self._hunk_line(line)
        elif hunk := _HUNK.match(line):
            self.in_header = False
            self.old_no, self.old_left = int(hunk[1]), int(hunk[2] or 1)
            self.new_no, self.new_left = int(hunk[3]), int(hunk[4] or 1)
        else:
            self._header(line)

    def _hunk_line(self, line: bytes) -> None:
        tag, target = line[:1], self.current
        if tag == b"+" and target is not None:
            target.added.append((self.new_no, line[1:].decode("utf-8", errors="replace")))
        elif tag == b"-" and target is not None:
            target.removed.append(self.old_no)
        if tag in (b"+", b" ", b""):
            self.new_left, self.new_no = self.new_left - 1, self.new_no + 1
        if tag in (b"-", b" ", b""):
            self.old_left, self.old_no = self.old_left - 1, self.old_no + 1

    def _header(self, line: bytes) -> None:
        current = self.current
        if line.startswith(b"diff --git "):
            old, new = _git_names(line[len(b"diff --git ") :].rstrip(b"\r"))
            self._start(FileDiff(path=_name(new, b"b/"), old_path=_name(old, b"a/")))
            self.in_header = True
        elif line.startswith(b"--- "):
            if current is None or not self.in_header:
                current = self._start(FileDiff(path=None, old_path=None))
            current.old_path = _name(header_name(line[4:]), b"a/")
            self.in_header = True
        elif current is None or not self.in_header:
            return
        elif line.startswith(b"+++ "):
            current.path = _name(header_name(line[4:]), b"b/")
        elif line.startswith(b"new file mode"):
            current.old_path = None
        elif line.startswith(b"deleted file mode"):
            current.path = None
        elif line.startswith(_NAMED):
            _, direction, rest = line.split(b" ", 2)
            name = header_name(rest).decode("utf-8", errors="replace")
            if direction == b"from":
                current.old_path = name
            else:
                current.path = name

    def _start(self, file: FileDiff) -> FileDiff:
        self.files.append(file)
        self.current = file
        return file


def file_diffs(diff: bytes) -> list[FileDiff]:
    """Every file of a git (or plain unified) diff, in order, with its real names and touched lines.

    Hunk lines are consumed by the counts in their ``@@`` header, so an added line that reads like a
    header (``+++ b/x``, ``diff --git``) is content, never a new file. A file the diff shows without
    hunks (binary, renamed only, a mode change, an empty new file) has no lines.
    """
    reader = _Reader()
    for line in diff.split(b"\n"):
        reader.line(line)
    return reader.files


def added_by_path(diff: bytes) -> AddedLines:
    """The lines a git diff adds, keyed by each file's real new path (deleted files have none)."""
    added: AddedLines = {}
    for file in file_diffs(diff):
        if file.path is not None:
            added.setdefault(file.path, []).extend(file.added)
    return added
