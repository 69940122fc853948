"""How much a submission may put on the host's disk, checked before anything is copied, applied or hashed.

A file's apparent size (``st_size``) is what a copy, ``git add`` and ``git diff`` write or read, whatever
it takes on disk: a sparse file of 2 GiB occupies nothing until copied. So a checkout is measured by
``st_size`` (never by blocks), and a diff by the sizes its ``GIT binary patch`` hunks declare (a few
kilobytes of deflated zeros inflate to gigabytes). Over a limit, the submission is refused with
``submission-too-large`` naming the file and the limit; nothing has been written yet.

The limits: one file at most ``environment.disk`` (default 1 GiB, or half of ``memory``): no sandbox
could hold a larger one, as it is every file's size limit there. A checkout at most
:data:`MAX_CHECKOUT_BYTES` in all and :data:`MAX_CHECKOUT_FILES` files. Everything the copy takes
counts, git-ignored files too: the copy takes them before git reads the ignore rules.
"""

from __future__ import annotations

import base64
import os
import re
import stat
import zlib
from collections.abc import Callable
from pathlib import Path

from gradeflow.errors import SubmissionTooLarge
from gradeflow.models import EnvironmentSpec
from gradeflow.models.spec import parse_size
from gradeflow.sandbox.base import default_disk

__all__ = ["MAX_CHECKOUT_BYTES", "MAX_CHECKOUT_FILES", "check_checkout_size", "check_patch_size", "file_limit"]

MAX_CHECKOUT_BYTES = 4 * 1024**3
"""Bytes (apparent sizes) a checkout may hold in all."""
MAX_CHECKOUT_FILES = 200_000
"""Files, links and folders a checkout may hold."""

_BINARY = re.compile(r"^GIT binary patch\n(literal|delta) (\d+)\n((?:[A-Za-z][^\n]*\n)*)", re.MULTILINE)
_NAME = re.compile(r"^diff --git .* b/(.*)$", re.MULTILINE)


def file_limit(environment: EnvironmentSpec) -> int:
    """Bytes one candidate file may have: ``environment.disk``, or its default."""
    return parse_size(environment.disk) if environment.disk else default_disk(parse_size(environment.memory))


def check_checkout_size(root: Path, skip: Callable[[str], bool], per_file: int) -> None:
    """``SubmissionTooLarge`` when the tree under ``root`` is over a limit. Reads no file, follows no link.

    Folders whose name ``skip`` accepts are not entered (the copy leaves them out).
    """
    total, count, pending = 0, 0, [root]
    while pending:
        folder = pending.pop()
        try:
            names = os.listdir(folder)
        except OSError:
            continue  # an unreadable folder is refused as unsupported, not here
        for name in names:
            if skip(name):
                continue
            path = folder / name
            try:
                info = os.lstat(path)
            except OSError:
                continue
            count += 1
            if count > MAX_CHECKOUT_FILES:
                raise SubmissionTooLarge(f"the checkout holds more than {MAX_CHECKOUT_FILES} files (the limit)")
            if stat.S_ISDIR(info.st_mode):
                pending.append(path)
            elif stat.S_ISREG(info.st_mode):
                relative = path.relative_to(root).as_posix()
                if info.st_size > per_file:
                    raise SubmissionTooLarge(
                        f"{relative} is {info.st_size} bytes, over the {per_file}-byte limit for one file "
                        "(environment.disk)"
                    )
                total += info.st_size
                if total > MAX_CHECKOUT_BYTES:
                    raise SubmissionTooLarge(
                        f"the checkout is over the {MAX_CHECKOUT_BYTES}-byte limit in all (at {relative})"
                    )


def check_patch_size(patch: str, per_file: int) -> None:
    """``SubmissionTooLarge`` when a ``GIT binary patch`` hunk would write a file over ``per_file`` bytes.

    A ``literal`` hunk states the file's size; a ``delta`` hunk states its own, and the size of the file
    it makes is the second number of the inflated delta's header.
    """
    for match in _BINARY.finditer(patch):
        kind, size = match.group(1), int(match.group(2))
        made = size if kind == "literal" else max(size, _delta_result(match.group(3)))
        if made > per_file:
            names = _NAME.findall(patch, 0, match.start())
            where = names[-1] if names else "a binary file"
            raise SubmissionTooLarge(
                f"the patch writes {where} as {made} bytes, over the {per_file}-byte limit for one file "
                "(environment.disk)"
            )


def _delta_result(lines: str) -> int:
    """The result size a git delta's header states (0 when it cannot be read: ``git apply`` refuses it then)."""
    data = bytearray()
    for line in lines.splitlines()[:8]:
        length = ord(line[0]) - (ord("A") - 1 if line[0] <= "Z" else ord("a") - 27)
        try:
            data += base64.b85decode(line[1:].encode())[:length]
        except ValueError:
            return 0
    try:
        header = zlib.decompressobj().decompress(bytes(data), 32)
    except zlib.error:
        return 0
    _, at = _varint(header, 0)  # the source's size
    result, _ = _varint(header, at)
    return result


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while at < len(data):
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            break
    return value, at
