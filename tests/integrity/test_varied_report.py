"""How the parent of a varied call judges what its forked child reports, in real varied runs of the harness.

Each test below ends its child another way than the harness would: the call fails, and the report says why.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from builders import make_task
from gradeflow.integrity.harness import Varied
from gradeflow.models import TaskSpec
from gradeflow.sandbox.local import LocalSandboxFactory
from gradeflow.tasks._testrun import run_test_command, start_harness

TESTS = r"""
import json
import os
import signal
import sys


def test_honest():
    assert 1 + 1 == 2


def test_killed():
    os.kill(os.getpid(), signal.SIGKILL)


def test_exits_nonzero():
    os._exit(3)


def test_says_nothing():
    os._exit(0)


def _harness_frame():
    frame = sys._getframe()
    while not {"nonce", "writer"} <= set(frame.f_locals):
        frame = frame.f_back
    return frame.f_locals


def test_another_call_s_nonce():
    found = _harness_frame()
    os.write(found["writer"], (json.dumps(["0" * 32, "ok", "", {}]) + " " + "f" * 64 + "\n").encode())
    os._exit(0)


def test_made_up_signature():
    found = _harness_frame()
    os.write(found["writer"], (json.dumps([found["nonce"], "ok", "", {}]) + " " + "f" * 64 + "\n").encode())
    os._exit(0)


def test_passes_after_a_message_of_its_own():
    found = _harness_frame()
    os.write(found["writer"], (json.dumps([found["nonce"], "ok", "", {}]) + " " + "f" * 64 + "\n").encode())
"""
EXPECTED = {
    "test_honest": ("passed", ""),
    "test_killed": ("failed", "killed by signal 9"),
    "test_exits_nonzero": ("failed", "exited with status 3"),
    "test_says_nothing": ("failed", "ended without saying how"),
    "test_another_call_s_nonce": ("failed", "a message not signed with the run's key"),
    "test_made_up_signature": ("failed", "a message not signed with the run's key"),
    "test_passes_after_a_message_of_its_own": ("failed", "wrote 2 messages, not one"),
}


def test_a_varied_call_fails_unless_its_child_sent_one_signed_message_of_its_own(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "test_ends.py").write_text(TESTS)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    ids = [f"tests/test_ends.py::{name}" for name in EXPECTED]
    tests = {
        "command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}",
        "fail_to_pass": ids,
        "pass_to_pass": [],
    }
    task = TaskSpec.model_validate(make_task(tests=tests))
    harness = start_harness(task, tree, None, None, select=ids, varied=Varied.drawn())
    assert harness is not None
    with LocalSandboxFactory().open(tree) as sandbox:
        evidence = run_test_command(task, sandbox, harness=harness, base=None)
    assert evidence.harness is not None and evidence.harness.signed, evidence.output_tail
    ended = {case.name: case for case in evidence.cases}
    wrong = {
        name: ended[name].message
        for name, (outcome, why) in EXPECTED.items()
        if ended[name].outcome != outcome or why not in ended[name].message
    }
    assert wrong == {}
