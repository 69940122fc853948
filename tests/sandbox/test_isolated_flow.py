"""A hostile candidate graded with no sandbox named (the isolated default) reaches nothing outside its run.

The candidate's ``f()`` tries, from inside its own tests, what a red team did to the local sandbox: read
the grader's environment from ``/proc`` after unmounting its private one, call the Prefect API, connect
to a socket of the host, edit gradeflow's cached pristine base and list ``$GRADEFLOW_HOME``, write
outside its tree, and leave a daemon running. Each attempt is checked from the host, not from what the
candidate reports; the same candidate graded in the local sandbox shows the checks can see the harm.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prefect.settings import PREFECT_API_URL
from tests.sandbox.conftest import BASE_FILES, unified_diff, write_base_repo

from gradeflow import grade
from gradeflow.models import GradeResult, TaskSpec
from gradeflow.sandbox._bwrap import bwrap_problem

pytestmark = pytest.mark.slow

ATTACK = """import glob, json, os, pathlib, socket, subprocess, urllib.request

SECRET, API, PORT, HOME, DROP = {secret!r}, {api!r}, {port!r}, {home!r}, {drop!r}


def f():
    found = []
    subprocess.run(["umount", "-l", "/proc"], capture_output=True)
    for path in glob.glob("/proc/*/environ"):
        try:
            if SECRET.encode() in open(path, "rb").read():
                found.append("environ")
        except OSError:
            pass
    try:
        urllib.request.urlopen(API + "/health", timeout=2)
        found.append("prefect-api")
    except Exception:
        pass
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
        found.append("socket")
    except OSError:
        pass
    for path in glob.glob(HOME + "/baselines/**/src/mod.py", recursive=True):
        try:
            pathlib.Path(path).write_text('def f():\\n    return "ok"\\n')
            found.append("pristine")
        except OSError:
            pass
    try:
        os.listdir(HOME)
        found.append("home")
    except OSError:
        pass
    try:
        pathlib.Path(DROP, "loot").write_text(json.dumps(found))
        found.append("drop")
    except OSError:
        pass
    subprocess.Popen(["sh", "-c", "sleep {marker} & sleep {marker}"], start_new_session=True)
    return "ok" if not found else "found " + ",".join(found)
"""


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP server on the host's loopback; a candidate that reaches it leaves a connection to accept."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


@pytest.fixture
def secret_process() -> Iterator[str]:
    """A host process whose environment holds a secret, as the grader's own environment does."""
    secret = f"s3cret-{uuid.uuid4().hex}"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env={"GRADEFLOW_SECRET": secret})
    yield secret
    proc.kill()
    proc.wait()


@pytest.fixture
def attack(
    tmp_path: Path, listener: socket.socket, secret_process: str, gradeflow_home: Path, prefect: None
) -> Callable[..., dict[str, Any]]:
    """Grade the attacking candidate, then a do-nothing one, and gather what the host sees afterwards."""
    del prefect
    if bwrap_problem() is not None:
        pytest.fail(f"the isolated sandbox is the default and must run here: {bwrap_problem()}")
    repo, drop = write_base_repo(tmp_path / "repo"), tmp_path / "drop"
    drop.mkdir(mode=0o777)
    drop.chmod(0o777)
    task = TaskSpec.model_validate(
        {
            "task_id": f"hostile-{uuid.uuid4().hex[:8]}",
            "type": "bugfix",
            "repo": str(repo),
            "tests": {
                "command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}",
                "fail_to_pass": ["tests/test_mod.py::test_f"],
                "pass_to_pass": ["tests/test_mod.py::test_stable"],
                "timeout": 60,
            },
        }
    )
    marker = str(3000 + uuid.uuid4().int % 900)
    source = ATTACK.format(
        secret=secret_process,
        api=str(PREFECT_API_URL.value()),
        port=listener.getsockname()[1],
        home=str(gradeflow_home),
        drop=str(drop),
        marker=marker,
    )

    def run(**kwargs: Any) -> dict[str, Any]:
        hostile = grade(task, patch=unified_diff("src/mod.py", BASE_FILES["src/mod.py"], source), **kwargs)
        nothing = grade(task, patch="", **kwargs)
        return {
            "hostile": hostile,
            "nothing": nothing,
            "dropped": sorted(p.name for p in drop.iterdir()),
            "connections": _accepted(listener),
            "daemons": _processes_with(["sleep", marker]),
            "pristine": sorted(
                p.read_text() for p in gradeflow_home.glob("baselines/*/repo/src/mod.py") if task.task_id in str(p)
            ),
        }

    return run


def _accepted(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


def _processes_with(argv: list[str]) -> list[int]:
    wanted = "\0".join(argv).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().rstrip(b"\0") == wanted:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _verdict(result: GradeResult) -> tuple[str, float, list[str]]:
    tests = result.component("tests")
    return result.status, tests.score, tests.messages


def test_a_hostile_candidate_reaches_nothing_outside_its_run_by_default(attack: Callable[..., dict[str, Any]]) -> None:
    seen = attack()
    hostile = seen["hostile"]
    assert hostile.environment is not None and hostile.environment.sandbox == "isolated"
    # Every attempt failed inside: f() returned "ok", so the test the candidate was asked to fix passed; its look at
    # pid 1's files (a sandbox tell) is the only finding, and it rejects the grade.
    status, _score, messages = _verdict(hostile)
    assert status == "graded" and hostile.reason_codes == ["junit-tampered"], messages
    assert [m for m in messages if "cannot be trusted" in m] == [
        "the JUnit report cannot be trusted: the code under test did at run time what the base's run never did: "
        "open:sandbox-tell from ./src/mod.py"
    ]
    assert seen["dropped"] == [] and seen["connections"] == 0 and seen["daemons"] == []
    assert seen["pristine"] == [BASE_FILES["src/mod.py"]]
    assert seen["nothing"].environment is not None and seen["nothing"].environment.rebuilt == []
    # The next candidate, who changes nothing, is graded against an untouched base: it fails.
    assert seen["nothing"].status == "graded" and seen["nothing"].passed is False
    assert seen["nothing"].component("tests").score == 0.0


@pytest.mark.skipif(os.geteuid() != 0, reason="the local sandbox's /proc can be unmounted by root only")
def test_the_same_candidate_in_the_local_sandbox_does_the_harm_the_checks_look_for(
    attack: Callable[..., dict[str, Any]],
) -> None:
    seen = attack(sandbox="local")
    assert seen["dropped"] == ["loot"] and seen["connections"] >= 1
    assert _verdict(seen["hostile"])[1] == 0.0  # f() saw what it found and did not return "ok"
    # The cached base was poisoned; only its digest check caught it: the next grade rebuilt it.
    nothing = seen["nothing"]
    assert nothing.environment is not None and nothing.environment.rebuilt == ["pristine"]
    assert nothing.passed is False


def test_without_bwrap_a_grade_is_inconclusive_with_a_hint(monkeypatch: pytest.MonkeyPatch, prefect: None) -> None:
    del prefect
    from builders import EXAMPLES
    from gradeflow.sandbox import _bwrap

    monkeypatch.setattr(_bwrap, "_probed", {"answer": "bubblewrap (bwrap) is not installed; " + _bwrap.HINT})
    result = grade(EXAMPLES / "calc" / "task.yaml", patch=EXAMPLES / "calc" / "reference.diff")
    assert (result.status, result.reason_codes) == ("inconclusive", ["sandbox-unavailable"])
    text = " ".join(m for c in result.components for m in c.messages) + " ".join(result.messages)
    assert "--sandbox docker" in text and "bubblewrap" in text
