"""What sealing and the canary harness add to the tests step of one grade.

On examples/calc (a bugfix task) with its reference patch, alternates N times, in the same process:

- **raw**: a fresh copy of the candidate's tree, the test command run in the local sandbox, its JUnit
  report read (what the tests step cost before sealing);
- **raw, same plugins**: the same, with pytest's plugin autoload off and the base's entry-point
  plugins named, as the candidate's sealed runs load them (so the difference is gradeflow's work, not
  fewer plugins);
- **sealed**: the tests step itself (``run_tests.fn``): a fresh copy, sealed to the base's test
  harness, canaries written, gradeflow's plugin installed, the run checked against its record.

Prints the mean and minimum of each, the difference per grade and the ratio. A passing grade's sealed tests
step also re-runs its required tests varied (a second pytest run, measured by bench/varied_run.py), so this
difference is more than the plugin's cost; the target (≤ 0.2 s added) is the second part's.

Then, at 1,000 tests (ten modules of 100, each test calling a small library that builds dataclasses and
opens files, so the audit hook sees its ordinary traffic), pytest alone against pytest with gradeflow's
plugin (its test-module namespace checks included) without its audit hook, with it, and with it and the
channel a grade hands it on standard input (the run's signing key alone, then with the test modules it
serves from memory instead of reading them from disk), side by side (target: the plugin as a grade runs
it ≤ 0.2 s over the raw run). Each run is timed twice: wall time, and the CPU time (user + system) the
run's process used, which a shared machine's other load disturbs far less; the medians are compared.
``--against TEMPLATE`` adds the plugin as a grade runs it built from another template (an older plugin's one
module, as ``plugin_template()`` assembles it or an older checkout's ``plugin.py.txt``), alternated with the others,
and prints the difference between the two.
``--no-grade`` skips the first part. The headline difference is printed twice more: as the median of each round's
own difference, and fastest run against fastest run (both less moved by the machine's other load than a
difference of medians). ``--instructions`` also counts the instructions the raw run and the run as a grade makes it
execute (valgrind's cachegrind, ~1 min): a figure the machine's load does not move, shown as seconds at the raw
run's fastest CPU time.

    python bench/sealing.py [N] [--against TEMPLATE] [--no-grade] [--instructions]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GRADEFLOW_HOME", tempfile.mkdtemp(prefix="gradeflow-bench-"))

from _steps import alternated, prepared
from pydantic import SecretStr

from gradeflow.integrity.harness import Harness
from gradeflow.integrity.plugin_files import plugin_files, plugin_template
from gradeflow.logs import quiet_prefect
from gradeflow.tasks import baseline, tests
from gradeflow.tasks._testrun import run_test_command

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "calc"


def main(n: int) -> None:
    quiet_prefect()
    with prepared(EXAMPLE) as ready:
        task, base, snap, factory, workspace = ready.task, ready.base, ready.snap, ready.factory, ready.workspace
        assert base.tests.harness is not None
        plugins = " ".join(f"-p {m}" for m in base.tests.harness.entrypoint_modules)
        autoload_off = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": SecretStr("1"), "PYTEST_ADDOPTS": SecretStr(plugins)}
        same_plugins = task.model_copy(update={"env": {**task.env, **autoload_off}})

        def run_raw(spec: object) -> bool:
            tree = baseline.working_copy(workspace)
            try:
                with factory.open(tree) as sandbox:
                    evidence = run_test_command(spec, sandbox)  # type: ignore[arg-type]
            finally:
                shutil.rmtree(tree.parent, ignore_errors=True)
            return evidence.exit_code == 0 and not evidence.junit_error

        def raw() -> bool:
            return run_raw(task)

        def raw_same_plugins() -> bool:
            return run_raw(same_plugins)

        def sealed() -> bool:
            outcome = tests.run_tests.fn(task, snap, base, factory)
            return outcome.component.passed and outcome.component.details.get("canaries") == "checked"

        steps: dict[str, Callable[[], bool]] = {"raw": raw, "raw, same plugins": raw_same_plugins, "sealed": sealed}
        mean = alternated(steps, n, "calc")
    for against in ("raw", "raw, same plugins"):
        added, ratio = mean["sealed"] - mean[against], mean["sealed"] / mean[against]
        print(f"sealed vs {against}: {added:+.3f} s per grade (ratio {ratio:.2f}x)")
    print(
        "  (the sealed tests step runs pytest twice when the required tests pass: the main run and its varied "
        "re-run; python bench/varied_run.py tells the two apart)"
    )


LIBRARY = '''"""A small library the bench's tests call."""

import dataclasses
import json
import tempfile


@dataclasses.dataclass
class Point:
    x: int
    y: int


def roundtrip(i):
    with tempfile.TemporaryFile("w+") as handle:
        json.dump(dataclasses.asdict(Point(i, i + 1)), handle)
        handle.seek(0)
        return Point(**json.load(handle))
'''


def _thousand_tests(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "lib.py").write_text(LIBRARY)
    for module in range(10):
        body = "from lib import roundtrip\n\n" + "".join(
            f"\ndef test_{module}_{i}():\n    assert roundtrip({i}).y == {i + 1}\n" for i in range(100)
        )
        (root / "tests" / f"test_m{module}.py").write_text(body)
    (root / "tests" / "test_canary.py").write_text(
        "def test_ok_1():\n    pass\n\n\ndef test_no_1():\n    assert False\n"
    )


def _plugin(
    folder: Path, module: str, root: Path, out: Path, audit: bool, channel: bool = False, template: Path | None = None
) -> None:
    """The harness plugin's files in ``folder`` for a run over ``root`` (its audit hook on or off, reading the
    channel or not), from this checkout's parts or ``template``; an older template that still holds its config in
    its source is written as one module."""
    config = {
        "nonce": "0bec0000",
        "record": str(out / "record.json"),
        "calls": str(out / "calls.log"),
        "canary_file": str(root / "tests" / "test_canary.py"),
        "canaries": ["test_ok_1", "test_no_1"],
        "must_fail": "test_no_1",
        "select": None,
        "workspace": str(root) if audit else None,
        "channel": channel,
    }
    text = plugin_template() if template is None else template.read_text()
    if "__GRADEFLOW_CONFIG__" in text:
        (folder / f"{module}.py").write_text(text.replace("__GRADEFLOW_CONFIG__", json.dumps(config)))
        return
    for name, data in plugin_files(module, config, text).items():
        (folder / name).write_bytes(data)


def _timed(argv: list[str], cwd: Path, env: dict[str, str], stdin: bytes | None) -> tuple[float, float]:
    """Wall time and the child's CPU time (user + system) of one run."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, check=False)
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def audit_cost(n: int, against: Path | None = None, instructions: bool = False) -> None:
    """pytest alone, with the plugin, and with the plugin's audit hook, on 1,000 tests."""
    scratch = Path(tempfile.mkdtemp(prefix="gradeflow-bench-audit-"))
    root, out = scratch / "repo", scratch / "out"
    try:
        _thousand_tests(root)
        out.mkdir()
        sources = {path.relative_to(root).as_posix(): path.read_text() for path in (root / "tests").glob("*.py")}
        harness = Harness(
            nonce="0bec0000",
            canary_file="tests/test_canary.py",
            must_pass="test_ok_1",
            must_fail="test_no_1",
            sources=sources,
            key="5e" * 32,  # the record and each call signed, as in a grade
        )
        for name, audit, channel in (("plain", False, False), ("audited", True, False), ("handed", True, True)):
            (out / name).mkdir()
            _plugin(out / name, harness.module, root, out, audit, channel)
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
        env = {**os.environ, "PYTHONPATH": "src", "PYTHONDONTWRITEBYTECODE": "1"}
        handed = ([*base, "-p", harness.module], {**env, "PYTHONPATH": f"{out / 'handed'}:src"})
        runs = {
            "raw": (base, env),
            "plugin, no audit": ([*base, "-p", harness.module], {**env, "PYTHONPATH": f"{out / 'plain'}:src"}),
            "plugin + audit": ([*base, "-p", harness.module], {**env, "PYTHONPATH": f"{out / 'audited'}:src"}),
            "+ key": handed,
            "+ key, served": handed,
        }
        stdin = {"+ key": json.dumps({"key": harness.key}).encode(), "+ key, served": harness.channel(str(root))}
        if against is not None:
            (out / "against").mkdir()
            _plugin(out / "against", harness.module, root, out, True, True, against)
            runs["against"] = ([*base, "-p", harness.module], {**env, "PYTHONPATH": f"{out / 'against'}:src"})
            stdin["against"] = stdin["+ key, served"]
        walls: dict[str, list[float]] = {label: [] for label in runs}
        cpus: dict[str, list[float]] = {label: [] for label in runs}
        for round_ in range(n + 1):  # the first round warms caches and is dropped
            for label, (argv, variables) in runs.items():
                wall, cpu = _timed(argv, root, variables, stdin.get(label))
                if round_:
                    walls[label].append(wall)
                    cpus[label].append(cpu)
        _print_audit_cost(
            {label: statistics.median(values) for label, values in walls.items()},
            {label: statistics.median(values) for label, values in cpus.items()},
            n,
        )
        # The same difference, told apart from the machine's other load: per round (each round runs every
        # variant back to back, so a busy spell weighs on both sides), and between each side's fastest run.
        paired = [grade - raw for grade, raw in zip(cpus["+ key, served"], cpus["raw"], strict=True)]
        print(
            f"the same, CPU: median of the {n} rounds' own differences {statistics.median(paired):+.3f} s; "
            f"fastest against fastest {min(cpus['+ key, served']) - min(cpus['raw']):+.3f} s"
        )
        if instructions:
            _print_instructions(root, runs, stdin, min(cpus["raw"]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _print_instructions(
    root: Path, runs: dict[str, tuple[list[str], dict[str, str]]], stdin: dict[str, bytes], raw_cpu: float
) -> None:
    """Instructions executed by the raw run and by the run as a grade makes it, counted by valgrind's cachegrind
    (the same whatever else the machine does; the hash seed fixed, which alone moves a count by about 0.5%),
    and the difference as seconds at the raw run's fastest CPU time in this run."""
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed (apt-get install valgrind)")
        return
    counts = {}
    for label in ("raw", "+ key, served"):
        argv, variables = runs[label]
        with tempfile.TemporaryDirectory(prefix="gradeflow-bench-cg-") as folder:
            log = Path(folder) / "log"
            command = [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=no",
                f"--cachegrind-out-file={folder}/out",
                f"--log-file={log}",
                *argv,
            ]
            subprocess.run(
                command,
                cwd=root,
                env={**variables, "PYTHONHASHSEED": "0"},
                input=stdin.get(label),
                capture_output=True,
                check=False,
            )
            found = [line for line in log.read_text().splitlines() if "I   refs:" in line or "I refs:" in line]
            counts[label] = int(found[-1].rpartition(":")[2].replace(",", "")) if found else 0
    if not counts["raw"] or not counts["+ key, served"]:
        print("instructions: cachegrind printed no count")
        return
    ratio = counts["+ key, served"] / counts["raw"]
    print(
        f"instructions (cachegrind): raw {counts['raw'] / 1e6:,.0f}M, as a grade runs it "
        f"{counts['+ key, served'] / 1e6:,.0f}M, {ratio - 1:+.1%}: {raw_cpu * (ratio - 1):+.3f} s at the raw run's "
        f"fastest CPU time ({raw_cpu:.3f} s)"
    )


def _print_audit_cost(wall: dict[str, float], cpu: dict[str, float], n: int) -> None:
    print(f"1,000 tests, median of {n} (wall / CPU):")
    for label in wall:
        print(
            f"{label:>17}: {wall[label]:.3f} s / {cpu[label]:.3f} s  "
            f"over raw {wall[label] - wall['raw']:+.3f} s / {cpu[label] - cpu['raw']:+.3f} s"
        )

    def step(label: str, before: str) -> str:
        return f"{wall[label] - wall[before]:+.3f} s / {cpu[label] - cpu[before]:+.3f} s"

    print(
        f"namespace checks and the rest of the plugin: {step('plugin, no audit', 'raw')}; "
        f"audit hook: {step('plugin + audit', 'plugin, no audit')}; signing key: {step('+ key', 'plugin + audit')}; "
        f"test modules served from memory: {step('+ key, served', '+ key')}"
    )
    print(
        "the plugin as a grade runs it (audit, namespace checks, signing, served modules) over raw: "
        f"{step('+ key, served', 'raw')} (wall / CPU; target <= +0.2 s)"
    )
    if "against" in wall:
        print(f"this template against the other: {step('+ key, served', 'against')} (wall / CPU)")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("runs", nargs="?", type=int, default=10, help="rounds of each step (a first one is dropped)")
    parser.add_argument("--against", type=Path, help="another plugin template, run as a grade runs the plugin")
    parser.add_argument("--no-grade", action="store_true", help="only the 1,000-test part")
    parser.add_argument(
        "--instructions", action="store_true", help="also count both runs' instructions with valgrind's cachegrind"
    )
    return parser.parse_args()


if __name__ == "__main__":
    arguments = _arguments()
    if not arguments.no_grade:
        main(arguments.runs)
    audit_cost(arguments.runs, arguments.against, arguments.instructions)
