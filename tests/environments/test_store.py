"""``gradeflow env list``, ``env prune`` and the store's cap on real folders: least recently used first; held,
recent, just built ones and what is not an entry kept."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import pickle
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from gradeflow.cli import main
from gradeflow.config import byte_size, env_cap
from gradeflow.environments import roots
from gradeflow.environments.store import RECENT, Holds, enforce_cap, in_use, prune, stored, touch_used
from gradeflow.errors import SpecError
from gradeflow.logs import configure_logging
from gradeflow.models import EnvironmentSpec
from gradeflow.sandbox.isolated import IsolatedSandboxFactory
from store_helpers import prune_elsewhere

MIB = 1024 * 1024


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Two roots and two bases of known sizes and last uses (days ago), under a private home."""
    monkeypatch.setenv("GRADEFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GRADEFLOW_ROOTS", str(tmp_path / "roots"))
    monkeypatch.delenv("GRADEFLOW_ENV_CAP", raising=False)
    now = time.time()
    made = {}
    for kind, name, mib, days in [
        ("roots", "debian-bullseye-aaaa", 3, 9),
        ("roots", "debian-bookworm-bbbb", 2, 1),
        ("home/baselines", "calc-1111", 1, 5),
        ("home/baselines", "django-2222", 4, 2),
    ]:
        folder = tmp_path / kind / name
        (folder / "environment" if kind.endswith("baselines") else folder / "fs").mkdir(parents=True)
        (folder / "data.bin").write_bytes(os.urandom(mib * 1024 * 1024))
        (folder / "used").touch()
        os.utime(folder / "used", (now - days * 86400, now - days * 86400))
        made[name] = folder
    return made


def test_entries_are_listed_least_recently_used_first(
    kept: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    names = [e.name for e in stored()]
    assert names == ["debian-bullseye-aaaa", "calc-1111", "django-2222", "debian-bookworm-bbbb"]
    assert main(["env", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["kind"], r["environment"]) for r in rows][:2] == [("root", False), ("base", True)]
    assert rows[0]["bytes"] >= 3 * 1024 * 1024


def test_prune_removes_the_least_recently_used_until_the_rest_fit(kept: dict[str, Path]) -> None:
    would = prune(max_bytes=int(7.5 * 1024 * 1024), dry_run=True)
    assert [e.name for e in would] == ["debian-bullseye-aaaa"] and kept["debian-bullseye-aaaa"].exists()
    removed = prune(max_bytes=int(6.5 * 1024 * 1024))
    assert [e.name for e in removed] == ["debian-bullseye-aaaa", "calc-1111"]
    assert not kept["debian-bullseye-aaaa"].exists() and not kept["calc-1111"].exists()
    assert kept["django-2222"].exists() and kept["debian-bookworm-bbbb"].exists()


def test_prune_by_age_keeps_what_is_held_or_just_used(
    kept: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # Another process is building the bullseye root: its lock is held, so it stays whatever its age.
    with (kept["debian-bullseye-aaaa"].parent / "debian-bullseye-aaaa.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert main(["env", "prune", "--unused-for", "3d"]) == 0
    assert "removed: 1 entries" in capsys.readouterr().out
    assert kept["debian-bullseye-aaaa"].exists() and not kept["calc-1111"].exists()
    (kept["django-2222"] / "used").touch()  # a grade took it just now: never pruned within RECENT seconds
    assert RECENT > 60
    assert [e.name for e in prune(max_bytes=0)] == ["debian-bullseye-aaaa", "debian-bookworm-bbbb"]
    assert kept["django-2222"].exists()


def test_a_shared_environment_is_listed_and_pruned_unless_its_build_lock_is_held(
    kept: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    shared = kept["calc-1111"].parent.parent / "shared" / "shared-abcd"
    shared.mkdir(parents=True)
    (shared / "environment.json").write_text("{}")
    (shared / "data.bin").write_bytes(os.urandom(MIB))
    (shared / "used").touch()
    os.utime(shared / "used", (time.time() - 8 * 86400, time.time() - 8 * 86400))
    (shared.parent / "shared-abcd.failed").write_text("not an entry\n")
    assert main(["env", "list", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["shared-abcd"]["kind"] == "shared" and rows["shared-abcd"]["bytes"] >= MIB
    assert "shared-abcd.failed" not in rows
    with (shared.parent / "shared-abcd.lock").open("a") as lock:  # being built: stays whatever its age
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert "shared-abcd" not in [e.name for e in prune(unused_for=86400)]
    assert shared.exists()
    assert "shared-abcd" in [e.name for e in prune(unused_for=86400)]
    assert not shared.exists()


def test_bad_input_exits_2_with_one_line(kept: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "prune"]) == 2
    assert "give --cap, --unused-for or both (or set GRADEFLOW_ENV_CAP)" in capsys.readouterr().err
    assert main(["env", "prune", "--unused-for", "soon"]) == 2
    assert "--unused-for: 'soon' is not a duration" in capsys.readouterr().err
    assert main(["env", "prune", "--cap", "lots"]) == 2
    assert capsys.readouterr().err == "gradeflow: error: --cap: 'lots' is not a size like 50G, 500M or 1.5T\n"
    assert all(folder.exists() for folder in kept.values())


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    """gradeflow's log lines (JSON, through its redacting pipeline) at INFO."""
    buffer = io.StringIO()
    configure_logging("INFO", stream=buffer)
    yield buffer
    structlog.reset_defaults()


def test_the_cap_evicts_the_least_recently_used_but_never_the_one_just_built(
    kept: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, logged: io.StringIO
) -> None:
    monkeypatch.setenv("GRADEFLOW_ENV_CAP", "6.5M")
    # The bullseye root is the least recently used, but it is the one just built.
    removed = enforce_cap(kept["debian-bullseye-aaaa"])
    assert [e.name for e in removed] == ["calc-1111", "django-2222"]
    assert not kept["calc-1111"].exists() and not kept["django-2222"].exists()
    assert kept["debian-bullseye-aaaa"].exists() and kept["debian-bookworm-bbbb"].exists()
    [line] = [json.loads(text) for text in logged.getvalue().splitlines()]
    assert line["event"] == "environments evicted"
    assert line["evicted"] == [
        {"kind": "base", "key": "calc-1111", "bytes": MIB},
        {"kind": "base", "key": "django-2222", "bytes": 4 * MIB},
    ]
    assert (line["cap_bytes"], line["freed_bytes"], line["left_bytes"]) == (int(6.5 * MIB), 5 * MIB, 5 * MIB)
    assert str(tmp_path) not in logged.getvalue()


def test_a_grade_taking_a_base_keeps_the_store_under_the_cap(
    kept: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    touch_used(kept["calc-1111"])  # no cap: nothing is removed
    assert all(folder.exists() for folder in kept.values())
    monkeypatch.setenv("GRADEFLOW_ENV_CAP", "5M")
    touch_used(kept["calc-1111"])
    assert not kept["debian-bullseye-aaaa"].exists() and not kept["django-2222"].exists()
    assert kept["calc-1111"].exists() and kept["debian-bookworm-bbbb"].exists()


def _tiny_debootstrap(recipe: roots.RootRecipe, fs: Path) -> None:
    (fs / "usr/bin").mkdir(parents=True)
    (fs / "usr/bin/python3.13").write_bytes(os.urandom(MIB))


def test_a_root_build_keeps_the_store_under_the_cap(kept: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(roots, "_debootstrap", _tiny_debootstrap)
    monkeypatch.setenv("GRADEFLOW_ENV_CAP", "6M")
    recipe = roots.RootRecipe.from_spec("debian:trixie")
    assert recipe is not None
    built = roots.ensure_root(recipe)
    assert built.python == "3.13" and built.folder.is_dir()
    # 11 MiB with the new root: the three least recently used go, down to 3 MiB.
    assert [e.name for e in stored()] == ["debian-bookworm-bbbb", recipe.name]
    assert json.loads((built.folder.parent / "root.json").read_text())["bytes"] == MIB


def test_an_entry_held_in_use_by_another_process_is_never_evicted(kept: dict[str, Path]) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(kept["calc-1111"])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline() == "held\n"
        (kept["django-2222"] / "used").touch()  # and one a grade took just now
        assert [e.name for e in prune(max_bytes=0)] == ["debian-bullseye-aaaa", "debian-bookworm-bbbb"]
        assert kept["calc-1111"].exists() and kept["django-2222"].exists()
    finally:
        holder.communicate("")
    assert [e.name for e in prune(max_bytes=0)] == ["calc-1111"]
    with in_use(kept["calc-1111"]):  # a removed entry is not made again by holding it
        assert not kept["calc-1111"].exists()


_HOLDER = """
import sys
from pathlib import Path
from gradeflow.environments.store import in_use
with in_use(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


def _descriptors_on(path: Path) -> int:
    """How many of this process's open files are ``path``."""
    found = 0
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            found += os.readlink(fd) == str(path)
    return found


@pytest.mark.slow
def test_a_sandbox_factory_holds_its_root_until_it_is_closed(
    kept: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(roots, "_debootstrap", _tiny_debootstrap)
    recipe = roots.RootRecipe.from_spec("debian:trixie")
    assert recipe is not None
    lock = roots.roots_dir() / recipe.name / "in-use.lock"
    with (
        pytest.raises(RuntimeError, match="the grade broke"),
        IsolatedSandboxFactory(EnvironmentSpec(root="debian:trixie")) as factory,
    ):
        assert factory.describe().python_version == "3.13"
        # Another process prunes everything it may: all but the root the factory holds.
        assert sorted(prune_elsewhere()) == sorted(kept)
        assert lock.parent.joinpath("fs").is_dir()
        for _ in range(3):  # every sandbox asks for the root: one lock, taken once
            assert factory.describe().python_version == "3.13"
        assert _descriptors_on(lock) == 1
        raise RuntimeError("the grade broke")
    assert _descriptors_on(lock) == 0  # released on the way out of the block, error or not
    assert prune_elsewhere() == [recipe.name]
    assert not lock.parent.exists()
    # Used again after it was closed and the root pruned: built, verified and held again.
    assert factory.describe().python_version == "3.13" and lock.parent.joinpath("fs").is_dir()
    assert prune_elsewhere() == []
    factory.close()


def test_holds_take_one_lock_per_entry_again_after_a_rebuild_and_none_in_a_copy(kept: dict[str, Path]) -> None:
    calc = kept["calc-1111"]
    with Holds() as holds:
        assert holds.hold(calc) and holds.hold(calc) and _descriptors_on(calc / "in-use.lock") == 1
        assert not holds.hold(calc.with_name("gone"))  # a missing entry is not made by holding it
        copy = pickle.loads(pickle.dumps(holds))  # another process's copy holds only what it is asked for there
        assert copy.hold(kept["django-2222"]) and _descriptors_on(calc / "in-use.lock") == 1
        del copy  # and lets it go when collected
        # The entry removed and built again (a cached state found changed): its new lock file is the one held.
        subprocess.run(["rm", "-rf", str(calc)], check=True)
        (calc / "environment").mkdir(parents=True)
        (calc / "environment" / "lib.so").write_bytes(os.urandom(MIB))
        assert holds.hold(calc) and _descriptors_on(calc / "in-use.lock") == 1
        assert [e.name for e in prune(max_bytes=0, now=time.time() + 2 * RECENT)] == [
            "debian-bullseye-aaaa",
            "django-2222",
            "debian-bookworm-bbbb",
        ]
    assert [e.name for e in prune(max_bytes=0, now=time.time() + 2 * RECENT)] == ["calc-1111"]


def test_what_is_not_an_entry_or_is_being_built_is_never_removed(kept: dict[str, Path], tmp_path: Path) -> None:
    home = kept["debian-bullseye-aaaa"].parent
    old = time.time() - 9 * 86400
    (home / "notes").mkdir()
    (home / "notes" / "keep.txt").write_text("not a root")
    outside = tmp_path / "outside"
    (outside / "fs").mkdir(parents=True)
    (home / "linked").symlink_to(outside)
    staging = home / "debian-bullseye-aaaa.build-4242"
    (staging / "fs").mkdir(parents=True)
    for folder in (home / "notes", outside, staging):
        os.utime(folder, (old, old))
    # A build of the bullseye recipe is under way in another process: its lock is held.
    with (home / "debian-bullseye-aaaa.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        removed = prune(max_bytes=0)
    assert [e.name for e in removed] == ["calc-1111", "django-2222", "debian-bookworm-bbbb"]
    assert (home / "notes" / "keep.txt").exists() and (home / "linked").is_symlink() and (outside / "fs").is_dir()
    assert staging.is_dir() and kept["debian-bullseye-aaaa"].is_dir()


def test_sizes_are_measured_once_and_again_only_when_an_entry_changes(kept: dict[str, Path]) -> None:
    calc = kept["calc-1111"]
    (calc / "environment" / "lib").mkdir()
    assert {e.name: e.bytes for e in stored()}["calc-1111"] == MIB
    # Written deep inside: the entry's top-level folders are unchanged, so its recorded size is read, not walked.
    (calc / "environment" / "lib" / "big.bin").write_bytes(os.urandom(2 * MIB))
    assert {e.name: e.bytes for e in stored()}["calc-1111"] == MIB
    (calc / "repo").mkdir()  # a new top-level folder (a checkout made again): measured again
    assert 3 * MIB <= {e.name: e.bytes for e in stored()}["calc-1111"] <= 3 * MIB + 16 * 1024  # and size.json
    # A root's size is what its build recorded.
    (kept["debian-bookworm-bbbb"] / "root.json").write_text(json.dumps({"bytes": 12345}))
    assert {e.name: e.bytes for e in stored()}["debian-bookworm-bbbb"] == 12345


def test_prune_cap_on_demand_says_what_it_removed_and_what_is_left(
    kept: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["env", "prune", "--cap", "6.5M"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[-1] for line in out[:2]] == ["debian-bullseye-aaaa", "calc-1111"]
    assert out[2:] == ["removed: 2 entries, 4.0 MiB", "left: 2 entries, 6.0 MiB (cap 6.5 MiB)"]
    monkeypatch.setenv("GRADEFLOW_ENV_CAP", "3M")  # without --cap, the configured cap
    assert main(["env", "prune", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == ["would remove: 1 entries, 4.0 MiB", "left: 1 entries, 2.0 MiB (cap 3.0 MiB)"]
    assert kept["django-2222"].exists()


def test_a_malformed_cap_is_one_line_naming_the_variable_and_removes_nothing(
    kept: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRADEFLOW_ENV_CAP", "lots")
    assert main(["env", "prune"]) == 2
    message = "GRADEFLOW_ENV_CAP: 'lots' is not a size like 50G, 500M or 1.5T"
    assert capsys.readouterr().err == f"gradeflow: error: {message}\n"
    with pytest.raises(SpecError, match=f"^{re.escape(message)}$"):
        touch_used(kept["calc-1111"])
    assert all(folder.exists() for folder in kept.values())
    monkeypatch.setenv("GRADEFLOW_ENV_CAP", " ")
    assert env_cap() is None


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("50G", 50 * 1024**3),
        ("500M", 500 * MIB),
        ("1.5T", int(1.5 * 1024**4)),
        ("4096", 4096),
        ("20g", 20 * 1024**3),
        ("512MiB", 512 * MIB),
        ("64kb", 64 * 1024),
    ],
)
def test_cap_sizes(text: str, size: int) -> None:
    assert byte_size(text, "GRADEFLOW_ENV_CAP") == size


@pytest.mark.parametrize("text", ["lots", "-1G", "5X", "G", "1.2.3M", ""])
def test_malformed_cap_sizes(text: str) -> None:
    with pytest.raises(SpecError, match=f"^--cap: {re.escape(repr(text))} is not a size"):
        byte_size(text, "--cap")
