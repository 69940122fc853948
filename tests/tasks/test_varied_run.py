"""The varied re-run end to end with real pytest in the local sandbox: honest suites of every common shape keep
passing with pytest's marks off the process, code that behaves only under test does not, and a failing
candidate pays for no second run."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from fakes import diff
from gradeflow import grade
from gradeflow.errors import SpecError
from gradeflow.models import GradeResult, TaskSpec

pytestmark = [pytest.mark.usefixtures("prefect"), pytest.mark.slow]

CALC = "def divide(a, b):\n    return a / b if b else None\n"
ADD = "\n\ndef add(a, b):\n    return a + b\n"
SHAPES = """import logging
import os
import sys
import threading
import unittest

import pytest

import calc


@pytest.fixture
def opened(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("x")
    yield path
    assert path.read_text() == "x"


def test_plain():
    assert calc.add(1, 2) == 3


def test_prints_and_logs():
    print("out")
    logging.getLogger(__name__).warning("logged")
    assert calc.add(2, 2) == 4


def test_caplog(caplog):
    with caplog.at_level(logging.INFO):
        logging.getLogger("calc").info("seen %s", calc.add(1, 1))
    assert "seen 2" in caplog.text


def test_capsys(capsys):
    print(calc.add(3, 4))
    assert capsys.readouterr().out == "7\\n"


def test_capfd(capfd):
    os.write(1, b"fd\\n")
    assert capfd.readouterr().out == "fd\\n"


def test_fixture_and_monkeypatch(opened, monkeypatch):
    monkeypatch.setenv("CALC_MODE", "x")
    assert os.environ["CALC_MODE"] == "x" and opened.exists()


@pytest.fixture
def doubler():
    import queue

    requests, replies = queue.Queue(), queue.Queue()

    def serve():
        while (value := requests.get()) is not None:
            replies.put(value * 2)

    worker = threading.Thread(target=serve, daemon=True)
    worker.start()
    yield lambda value: (requests.put(value), replies.get(timeout=20))[1]
    requests.put(None)
    worker.join()


def test_served_by_a_fixture_s_thread(doubler):
    assert doubler(calc.add(1, 1)) == 4


def test_thread():
    found = []
    worker = threading.Thread(target=lambda: found.append(calc.add(1, 1)))
    worker.start()
    worker.join()
    assert found == [2]


def test_recursion_is_not_smaller():
    def down(n):
        return 0 if n == 0 else 1 + down(n - 1)

    assert down(sys.getrecursionlimit() - 100) > 0


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert calc.add(n, 0) == n


class TestGroup:
    def test_method(self):
        assert calc.add(0, 0) == 0


class Case(unittest.TestCase):
    def test_unit(self):
        self.assertEqual(calc.add(2, 3), 5)
"""
IDS = [
    "test_plain",
    "test_prints_and_logs",
    "test_caplog",
    "test_capsys",
    "test_capfd",
    "test_fixture_and_monkeypatch",
    "test_served_by_a_fixture_s_thread",
    "test_thread",
    "test_recursion_is_not_smaller",
    "test_param[1]",
    "test_param[2]",
    "TestGroup::test_method",
    "Case::test_unit",
]
SHAPE_IDS = [f"tests/test_shapes.py::{name}" for name in IDS]
DIVIDE = "tests/test_divide.py::test_divide_by_zero"
DIVIDE_TEST = (
    "import pytest\n\nfrom calc import divide\n\n\n"
    "def test_divide_by_zero():\n    with pytest.raises(ZeroDivisionError):\n        divide(1, 0)\n"
)
# Raises only where pytest's faulthandler plugin runs: passes every test, fixes nothing for a real caller.
NOTICING = (
    "def divide(a, b):\n    import faulthandler\n\n    if b == 0 and faulthandler.is_enabled():\n"
    "        raise ZeroDivisionError('no')\n    return a / b if b else None\n"
)
FIX = CALC.replace("return a / b if b else None", "return a / b")


@pytest.fixture
def grade_with(tmp_path: Path) -> Callable[[list[str], str], GradeResult]:
    repo = tmp_path / "repo"
    files = {"src/calc.py": CALC, "tests/test_shapes.py": SHAPES, "tests/test_divide.py": DIVIDE_TEST}
    files["pytest.ini"] = "[pytest]\npythonpath = src tests\n"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)

    def run(fail_to_pass: list[str], source: str) -> GradeResult:
        tests = {
            "command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}",
            "fail_to_pass": fail_to_pass,
            "timeout": 120,
        }
        task = TaskSpec.model_validate({"task_id": "varied", "type": "bugfix", "repo": str(repo), "tests": tests})
        return grade(task, patch=diff(CALC, source, "src/calc.py"), sandbox="local")

    return run


def test_an_honest_suite_of_every_shape_passes_its_varied_run(
    grade_with: Callable[[list[str], str], GradeResult],
) -> None:
    # Every fixed test is run again: caplog, capsys, capfd, unittest, threads (a fixture's too: that call runs in
    # the process, not a forked child without the thread), fixtures with a teardown...
    result = grade_with(SHAPE_IDS, CALC + ADD)
    assert (result.status, result.passed, result.reason_codes) == ("graded", True, []), result.messages
    varied = result.component("tests").details["varied_run"]
    assert varied == {"outcomes": dict.fromkeys(SHAPE_IDS, "passed"), "problem": None}


@pytest.mark.parametrize("when", ["after", "beside"])
def test_code_that_behaves_only_under_pytest_is_for_review(
    grade_with: Callable[[list[str], str], GradeResult], when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same verdicts whether the varied run starts after the main run or beside it (GRADEFLOW_VARIED_RUN).
    monkeypatch.setenv("GRADEFLOW_VARIED_RUN", when)
    noticed = grade_with([DIVIDE], NOTICING)
    assert (noticed.status, noticed.passed, noticed.decision) == ("graded", False, "human-review"), noticed.messages
    assert noticed.reason_codes == ["outcome-varies-with-environment"]
    assert noticed.component("tests").details["varied_run"]["outcomes"] == {DIVIDE: "failed"}
    fixed = grade_with([DIVIDE], FIX)
    assert (fixed.passed, fixed.decision, fixed.reason_codes) == (True, "merge-candidate", [])
    assert fixed.component("tests").details["varied_run"]["outcomes"] == {DIVIDE: "passed"}
    # Where the tests step's time went: around the command, the command, the varied run (begun after the main
    # run, its whole time; begun beside it, the wait for its end).
    spent = dict(fixed.component("tests").details["time"])
    assert spent.pop("varied_run_beside_main") is (when == "beside")
    assert set(spent) == {"copy_seal_sandbox_and_read", "test_command", "varied_run"}
    assert spent["copy_seal_sandbox_and_read"] > 0 and spent["test_command"] > 0, spent
    assert spent["varied_run"] > 0 or when == "beside", spent
    assert sum(spent.values()) <= fixed.timings["tests"] + 0.5


# Raises only where the user is one the grader's isolated sandbox makes (uid 200,000 and up): a sandbox tell read
# without any audited call, left to the varied run (pid 1 named bwrap was one, before the main run's pid 1 became
# the command's own shell: test_pid_1_is_the_commands_own_shell_as_in_a_plain_container).
TELLING = (
    "import os\n\n\ndef divide(a, b):\n    graded = os.getuid() >= 200000\n"
    "    if b == 0 and graded:\n        raise ZeroDivisionError('no')\n    return a / b if b else None\n"
)


def _divide_task(tmp_path: Path, task_id: str) -> TaskSpec:
    """A repository whose one fail_to_pass test wants divide(1, 0) to raise, and its task (default sandbox)."""
    repo = tmp_path / "repo"
    for name, text in {"src/calc.py": CALC, "tests/test_divide.py": DIVIDE_TEST}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = src\n")
    tests = {"command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}", "fail_to_pass": [DIVIDE]}
    return TaskSpec.model_validate({"task_id": task_id, "type": "bugfix", "repo": str(repo), "tests": tests})


@pytest.mark.skipif(os.geteuid() != 0, reason="a shaped isolated run changes pid 1 as root only")
@pytest.mark.parametrize("when", ["after", "beside"])
def test_code_that_behaves_only_in_the_graders_sandbox_is_for_review(
    tmp_path: Path, when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRADEFLOW_VARIED_RUN", when)
    task = _divide_task(tmp_path, "tell")
    told = grade(task, patch=diff(CALC, TELLING, "src/calc.py"), sandbox="isolated")
    assert (told.status, told.passed) == ("graded", False), told.summary()
    assert "outcome-varies-with-environment" in told.reason_codes
    assert told.component("tests").details["varied_run"]["outcomes"] == {DIVIDE: "failed"}


def _read_then(path: str) -> str:
    # The right fix, which also reads ``path`` (a sandbox tell or not) on its way: with open(), or through the
    # standard library (pathlib) when the path is given as ``pathlib:<path>``.
    through, _, path = path.rpartition(":")
    read = f"__import__('pathlib').Path({path!r}).read_text()" if through else f"open({path!r}).read()"
    return f"def divide(a, b):\n    try:\n        {read}\n    except OSError:\n        pass\n    return a / b\n"


@pytest.mark.parametrize(
    "tell",
    ["/proc/1/comm", "/proc/1/cgroup", "/proc/self/cgroup", "pathlib:/proc/self/mountinfo", "pathlib:/.dockerenv"],
)
def test_code_under_test_that_reads_a_sandbox_tell_is_named(tmp_path: Path, tell: str) -> None:
    # Reading where a sandbox shows itself is what code that behaves only when graded must do first: the read is an
    # audit entry of the run (as the base's run never made it), whatever the code then does with it.
    task = _divide_task(tmp_path, "tells")
    told = grade(task, patch=diff(CALC, _read_then(tell), "src/calc.py"))
    assert (told.status, told.passed, told.decision) == ("graded", False, "rejected"), told.summary()
    assert "junit-tampered" in told.reason_codes
    tests_messages = told.component("tests").messages
    assert any("open:sandbox-tell from ./src/calc.py" in m for m in tests_messages), tests_messages
    honest = grade(task, patch=diff(CALC, _read_then("/proc/self/status"), "src/calc.py"))
    assert (honest.passed, honest.reason_codes) == (True, []), honest.messages


@pytest.mark.parametrize("when", ["after", "beside"])
def test_a_failing_candidate_gets_no_varied_run(
    grade_with: Callable[[list[str], str], GradeResult], when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Begun beside the main run, a varied run of a candidate whose required tests failed is left unread.
    monkeypatch.setenv("GRADEFLOW_VARIED_RUN", when)
    missed = grade_with([DIVIDE], CALC + ADD)
    assert "fail-to-pass-failing" in missed.reason_codes
    assert "varied_run" not in missed.component("tests").details
    assert missed.component("tests").details["time"]["varied_run_beside_main"] is (when == "beside")


def test_a_varied_run_setting_that_is_not_one_fails_the_grade_with_its_name(
    grade_with: Callable[[list[str], str], GradeResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRADEFLOW_VARIED_RUN", "sideways")
    with pytest.raises(SpecError, match="GRADEFLOW_VARIED_RUN: 'sideways' is not one of auto, beside, after"):
        grade_with([DIVIDE], FIX)


# Only in the varied call (faulthandler off): writes "the call passed" on the pipe the child reports on (found
# through /proc/self/fd) and leaves before the harness's own message, as the plain report and as one with a
# made-up nonce and signature; the main run's call raises as the test wants.
FORGING = (
    "import faulthandler\nimport os\nimport stat\n\n\ndef divide(a, b):\n"
    "    if b == 0 and not faulthandler.is_enabled():\n"
    "        for name in os.listdir('/proc/self/fd'):\n"
    "            try:\n"
    "                if stat.S_ISFIFO(os.fstat(int(name)).st_mode):\n"
    "                    os.write(int(name), FORGED)\n"
    "            except OSError:\n"
    "                pass\n"
    "        os._exit(0)\n"
    "    return a / b\n"
)
FORGED = {
    "plain": 'b\'["ok", ""]\'',
    "made-up signature": "b'[\"%s\", \"ok\", \"\", {}] %s\\n' % (b'0' * 32, b'f' * 64)",
}
# A recorded tampering action (a trace function set, pytest's call_and_report replaced) only where the marks are
# off: the child's notes reach the run's record.
TAMPERING = {
    "settrace": "import faulthandler\nimport sys\n\n\ndef divide(a, b):\n"
    "    if not faulthandler.is_enabled():\n        sys.settrace(None)\n    return a / b\n",
    "patched": "import faulthandler\n\nimport _pytest.runner\n\n\ndef divide(a, b):\n"
    "    if not faulthandler.is_enabled():\n        _pytest.runner.call_and_report = lambda *a, **k: None\n"
    "    return a / b\n",
}
# Only in the varied call: walks the frames up to the harness's (sys._getframe, then f_back and f_locals, which
# no audit event sees) for the call's nonce and pipe, finds the run's signing function among closures, writes a
# validly signed "the call passed" and leaves. The frame read is noted, and that note reached the parent
# before the frame was handed over.
REACHING = """import faulthandler
import json
import os
import sys


def divide(a, b):
    if b == 0 and not faulthandler.is_enabled():
        frame = sys._getframe()
        while not {"nonce", "writer"} <= set(frame.f_locals):
            frame = frame.f_back
        found, sign, stack, seen = frame.f_locals, None, list(frame.f_locals.values()), set()
        while stack and sign is None:
            value = stack.pop()
            if id(value) not in seen:
                seen.add(id(value))
                sign = value if getattr(value, "__name__", "") == "sign" else None
                stack += [cell.cell_contents for cell in getattr(value, "__closure__", None) or ()]
        payload = json.dumps([found["nonce"], "ok", "", {}])
        os.write(found["writer"], (payload + " " + sign(payload.encode()) + "\\n").encode())
        os._exit(0)
    return a / b
"""
# The same, with /dev/null put in place of every pipe first (kept under another descriptor, where the forged
# message goes): the note cannot be sent, so the child ends at once and the call fails.
SWAPPING = (
    REACHING.replace("import sys\n", "import stat\nimport sys\n")
    .replace(
        "        frame = sys._getframe()\n",
        "        saved = {}\n"
        "        for name in os.listdir('/proc/self/fd'):\n"
        "            try:\n"
        "                if stat.S_ISFIFO(os.fstat(int(name)).st_mode):\n"
        "                    saved[int(name)] = os.dup(int(name))\n"
        "                    os.dup2(os.open(os.devnull, os.O_WRONLY), int(name))\n"
        "            except OSError:\n"
        "                pass\n"
        "        frame = sys._getframe()\n",
    )
    .replace('os.write(found["writer"]', 'os.write(saved[found["writer"]]')
)
SEEN = {
    "settrace": "sys.settrace from ./src/calc.py",
    "patched": "_pytest.runner.call_and_report",
    "signed forgery": "sys._getframe from ./src/calc.py",
}


@pytest.mark.parametrize("forged", [*sorted(FORGED), "signed, pipe swapped"])
def test_a_report_forged_on_the_child_s_pipe_fails_the_varied_call(
    grade_with: Callable[[list[str], str], GradeResult], forged: str
) -> None:
    source = SWAPPING if forged == "signed, pipe swapped" else FORGING.replace("FORGED", FORGED[forged])
    result = grade_with([DIVIDE], source)
    # (The tamper scan sees os._exit as well: tamper-suspected.)
    assert result.passed is False and "outcome-varies-with-environment" in result.reason_codes, result.messages
    assert result.component("tests").details["varied_run"]["outcomes"] == {DIVIDE: "failed"}


@pytest.mark.parametrize("action", [*sorted(TAMPERING), "signed forgery"])
def test_tampering_only_in_the_varied_call_is_a_finding_of_the_run(
    grade_with: Callable[[list[str], str], GradeResult], action: str
) -> None:
    source = TAMPERING.get(action, REACHING)
    result = grade_with([DIVIDE], source)
    assert (result.passed, result.decision) == (False, "rejected"), result.messages
    assert "junit-tampered" in result.reason_codes
    # The main run never tampered (faulthandler is on there): the finding is the varied call's, from its child.
    [message] = result.component("tests").messages
    assert message.startswith("the varied run's report cannot be trusted") and SEEN[action] in message, message
