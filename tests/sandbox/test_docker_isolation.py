"""Isolation and anti-tamper, each tried from inside a candidate's code, graded end to end in docker.

The base's ``test_f`` passes only when the candidate's ``f()`` returns ``'ok'``, so a passing grade
means the probe inside the container saw what the test expects.
"""

from __future__ import annotations

import glob
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from gradeflow.models import GradeResult

pytestmark = pytest.mark.docker
Grade = Callable[..., GradeResult]

JUNIT_ALL_PASS = (
    '<testsuite tests="2"><testcase classname="tests.test_mod" name="test_f" file="tests/test_mod.py"/>'
    '<testcase classname="tests.test_mod" name="test_stable" file="tests/test_mod.py"/></testsuite>'
)


def _f(body: str, imports: str = "") -> dict[str, str]:
    return {"src/mod.py": f"{imports}\n\ndef f():\n" + "".join(f"    {line}\n" for line in body.splitlines())}


def _tests(result: GradeResult) -> tuple[float, list[str]]:
    component = result.component("tests")
    return component.score, component.reason_codes


def test_only_loopback_is_visible(grade_candidate: Grade) -> None:
    result = grade_candidate(
        _f(
            'nets = sorted(os.listdir("/sys/class/net"))\nreturn "ok" if nets == ["lo"] else f"interfaces {nets}"',
            "import os",
        )
    )
    assert (result.status, _tests(result)) == ("graded", (1.0, []))


def test_host_environment_variables_are_absent(grade_candidate: Grade, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"s3cret-{uuid.uuid4().hex}"
    monkeypatch.setenv("GRADEFLOW_TEST_SECRET", secret)
    probe = _f(
        f'seen = [k for k, v in os.environ.items() if k == "GRADEFLOW_TEST_SECRET" or v == "{secret}"]\n'
        'good = os.environ.get("TASK_VAR") == "given" and os.environ["HOME"] == "/home/grader"\n'
        'return "ok" if good and not seen else f"saw {seen}, env {sorted(os.environ)}"',
        "import os",
    )
    result = grade_candidate(probe, env={"TASK_VAR": "given"})
    assert _tests(result) == (1.0, []), result.component("tests").messages


def test_writes_outside_the_workspace_do_not_reach_the_host(grade_candidate: Grade) -> None:
    token = f"gradeflow-escape-{uuid.uuid4().hex}"
    targets = [
        f"/tmp/{token}",
        f"../{token}",
        f"../../{token}",
        f"~/{token}",
        f"/run/{token}",
        f"/opt/{token}",
        f"{tempfile.gettempdir()}/{token}-host",
        str(Path.home() / token),
    ]
    probe = _f(
        f"wrote = []\nfor t in {targets!r}:\n    try:\n        p = pathlib.Path(os.path.expanduser(t))\n"
        "        p.write_text('x')\n        wrote.append(t)\n    except OSError:\n        pass\n"
        f'return "ok" if "/tmp/{token}" in wrote else f"wrote {{wrote}}"',
        "import os\nimport pathlib",
    )
    result = grade_candidate(probe)
    assert _tests(result) == (1.0, [])
    leaked = [
        p
        for pattern in (
            f"/{token}",
            f"/tmp/{token}*",
            f"/tmp/*/{token}",
            f"/tmp/*/*/{token}",
            f"{Path.home()}/{token}",
            f"/run/{token}",
            f"/opt/{token}",
        )
        for p in glob.glob(pattern)
    ]
    assert leaked == []


BOMB = "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)\n"


def test_a_fork_bomb_is_contained_by_the_pids_limit(grade_candidate: Grade) -> None:
    # Every bomb process keeps forking forever; the candidate's test passes once its own fork is refused.
    probe = _f(
        f"subprocess.Popen([sys.executable, '-c', {BOMB!r}])\n"
        "deadline = time.time() + 10\nwhile time.time() < deadline:\n    try:\n        pid = os.fork()\n"
        '    except BlockingIOError:\n        return "ok"\n    if pid == 0:\n        os._exit(0)\n'
        "    os.waitpid(pid, 0)\n    time.sleep(0.05)\n"
        'return "the pids limit was never reached"',
        "import os\nimport subprocess\nimport sys\nimport time",
    )
    started = time.perf_counter()
    result = grade_candidate(probe)
    assert (result.status, _tests(result)) == ("graded", (1.0, []))
    assert time.perf_counter() - started < 60


def test_a_memory_hog_is_killed_and_graded_zero(grade_candidate: Grade) -> None:
    result = grade_candidate(_f('x = bytearray(1 << 30)\nreturn "ok"'))
    assert (result.status, result.score, result.passed) == ("graded", 0.0, False)
    assert _tests(result) == (0.0, ["oom-killed"])


def test_an_infinite_loop_is_killed_at_the_timeout(grade_candidate: Grade) -> None:
    started = time.perf_counter()
    result = grade_candidate(_f("while True:\n    pass"), tests={"timeout": 4})
    assert (result.status, result.score) == ("graded", 0.0)
    assert _tests(result) == (0.0, ["test-timeout"])
    assert result.component("tests").details["duration"] == pytest.approx(4, abs=1.5)
    assert time.perf_counter() - started < 30


def test_a_report_rewritten_with_passes_after_a_failing_run_is_tampered(
    grade_candidate: Grade, base_files: dict[str, str]
) -> None:
    # The code under test rewrites pytest's report with passes as the interpreter exits; the command still fails.
    rewrite = (
        "def _rewrite():\n    for arg in sys.argv:\n        if arg.startswith('--junitxml='):\n"
        f"            open(arg.split('=', 1)[1], 'w').write({JUNIT_ALL_PASS!r})\n\n\natexit.register(_rewrite)\n"
    )
    result = grade_candidate({"src/mod.py": f"import atexit\nimport sys\n\n{rewrite}\n{base_files['src/mod.py']}"})
    assert (result.status, result.score) == ("graded", 0.0)
    assert _tests(result) == (0.0, ["junit-tampered"])
    assert "exited 1" in result.component("tests").messages[0]


def test_a_report_written_before_the_run_is_never_read(grade_candidate: Grade) -> None:
    # The patch turns the setup hook into a planter of a passing report where the test command will
    # write its own, and makes the test command die before writing any. Setup runs on the pristine base
    # only, so the hook never runs for the candidate; and the output folder is emptied before every
    # command, so a report left by any earlier command would not be read either.
    plant = f"open('/run/reports/junit.xml', 'w').write({JUNIT_ALL_PASS!r})\n"
    result = grade_candidate(
        {"setup_hook.py": plant, "src/mod.py": "import os\n\nos._exit(1)\n"}, setup="python setup_hook.py"
    )
    assert (result.status, result.score) == ("graded", 0.0)
    assert _tests(result) == (0.0, ["no-junit-output"])


def test_a_config_edit_that_deselects_every_test_is_reset_and_rejected(
    grade_candidate: Grade, base_files: dict[str, str]
) -> None:
    ini = base_files["pytest.ini"] + "addopts = -k no_test_has_this_name\n"
    result = grade_candidate({"pytest.ini": ini, "src/mod.py": 'def f():\n    return "ok"\n'})
    assert (result.status, result.score, result.decision) == ("graded", 0.0, "rejected")
    gate = result.component("test_infrastructure")
    assert (gate.passed, gate.reason_codes) == (False, ["test-infrastructure-modified"])
    assert _tests(result) == (1.0, [])  # the run used the base's pytest.ini, so the tests did run
    assert result.component("tests").details["sealed"] == {"pytest.ini": "test infrastructure"}


def test_the_environment_fingerprint_names_the_container_image(grade_candidate: Grade) -> None:
    result = grade_candidate(_f('return "ok"'))
    environment = result.environment
    assert environment is not None and environment.sandbox == "docker"
    assert environment.image == "gradeflow-python:bookworm" and (environment.image_id or "").startswith("sha256:")
    assert environment.python_version.startswith("3.") and environment.pythonhashseed not in ("", "0")
    assert os.environ.get("GRADEFLOW_HOME") and result.score == 1.0
