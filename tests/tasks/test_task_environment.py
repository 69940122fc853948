"""The task's environment: setup runs once on the pristine base, and every run gets its own copy.

Real git, the real local sandbox and a real ``pip install -e .`` (offline). The unit part drives
capture, lay and import directly; the grade part goes through ``gradeflow.grade``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from builders import committed_repo
from gradeflow import grade
from gradeflow.models import GradeResult, TaskSpec
from gradeflow.sandbox._local_procs import pid_namespace_available
from gradeflow.sandbox.local import LocalSandbox
from gradeflow.tasks._environment import (
    TaskEnvironment,
    capture_environment,
    import_environment,
    lay_workspace,
    tree_manifest,
)

BUILD_SYSTEM = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"
"""
PYPROJECT = f"""{BUILD_SYSTEM}
[project]
name = "envcalc"
version = "0.1.0"

[tool.setuptools.packages.find]
where = ["src"]
"""
BUGGY = "def half(x):\n    return x // 2\n"
FIXED = "def half(x):\n    return x / 2\n"
TESTS = """from envcalc import half


def test_half_of_odd():
    assert half(3) == 1.5


def test_half_of_even():
    assert half(4) == 2
"""
INSTALL = "python -m pip install -q --no-index --no-deps --no-build-isolation -e ."


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _repo(root: Path) -> Path:
    files = {
        "pyproject.toml": PYPROJECT,
        "src/envcalc/__init__.py": "from envcalc.core import half\n",
        "src/envcalc/core.py": BUGGY,
        "tests/test_half.py": TESTS,
    }
    return committed_repo(root / "repo", files)


def _task(repo: Path, setup: str, **extra: object) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "task_id": "env-calc",
            "type": "bugfix",
            "repo": str(repo),
            "base_revision": "HEAD",
            "setup": setup,
            "tests": {
                "command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}",
                "fail_to_pass": ["tests/test_half.py::test_half_of_odd"],
                "pass_to_pass": ["tests/test_half.py::test_half_of_even"],
                "timeout": 120,
            },
            "environment": {"sandbox": "local"},
            **extra,
        }
    )


def _patch(old: str, new: str) -> str:
    lines = [f"-{line}" for line in old.splitlines()] + [f"+{line}" for line in new.splitlines()]
    body = "\n".join(lines)
    return (
        "diff --git a/src/envcalc/core.py b/src/envcalc/core.py\n--- a/src/envcalc/core.py\n"
        f"+++ b/src/envcalc/core.py\n@@ -1,2 +1,2 @@\n{body}\n"
    )


def _host_site_entries() -> set[str]:
    return {p.name for p in Path(sysconfig.get_path("purelib")).iterdir()}


@pytest.mark.slow
def test_an_editable_install_on_the_base_serves_the_candidates_code(tmp_path: Path, prefect: None) -> None:
    del prefect
    repo = _repo(tmp_path)
    log = tmp_path / "setup-runs"
    # No PYTHONPATH: the tests import envcalc only through the editable install, which names the
    # base's copy of the tree; every run's copy works only because the paths are rewritten.
    setup = f"echo run >> {log} && {INSTALL}"
    before = _host_site_entries()
    fixed = grade(_task(repo, setup), patch=_patch(BUGGY, FIXED), sandbox="local")
    missed = grade(_task(repo, setup), patch=_patch(BUGGY, "def half(x):\n    return x >> 1\n"), sandbox="local")
    assert fixed.status == "graded" and missed.status == "graded"
    assert fixed.component("tests").score == 1.0, fixed.component("tests").messages
    assert missed.component("tests").reason_codes == ["fail-to-pass-failing"]
    # Built once for the baseline, then copied: never run on a candidate.
    assert log.read_text().splitlines() == ["run"]
    assert fixed.environment is not None and missed.environment is not None
    digest = fixed.environment.task_environment
    assert digest is not None and digest.startswith("sha256:") and digest == missed.environment.task_environment
    # Nothing landed in gradeflow's own environment.
    assert _host_site_entries() == before
    assert "envcalc" not in subprocess.run([sys.executable, "-m", "pip", "list"], capture_output=True, text=True).stdout


PLUGIN_PYPROJECT = f"""{BUILD_SYSTEM}
[project]
name = "pytest-envmark"
version = "0.1.0"

[project.entry-points.pytest11]
envmark = "pytest_envmark"
"""
PLUGIN = """import pytest


def pytest_report_header(config):
    return "envmark loaded"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield
"""


@pytest.mark.slow
def test_a_pytest_plugin_setup_installs_is_the_bases_plugin_in_every_run(tmp_path: Path, prefect: None) -> None:
    # A plugin installed by setup (not editable) lives in the run's own copy of the environment, at
    # another path in every run: it is the same plugin, with the same hooks, and no tampering.
    del prefect
    result = _fix_graded_with(tmp_path, {"plugin/pyproject.toml": PLUGIN_PYPROJECT, "plugin/pytest_envmark.py": PLUGIN})
    assert result.status == "graded"
    assert result.component("tests").score == 1.0, result.component("tests").messages
    assert result.passed, result.reason_codes


def _fix_graded_with(tmp_path: Path, files: dict[str, str]) -> GradeResult:
    """The fix graded (local sandbox) on the repository with ``files`` added, setup installing ``plugin/`` too."""
    repo = _repo(tmp_path)
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "plugin")
    setup = f"{INSTALL} && python -m pip install -q --no-index --no-deps --no-build-isolation ./plugin"
    return grade(_task(repo, setup), patch=_patch(BUGGY, FIXED), sandbox="local")


PAIR_PYPROJECT = f"""{BUILD_SYSTEM}
[project]
name = "pytest-pair"
version = "0.1.0"

[project.entry-points.pytest11]
zeta = "pair_zeta"
alpha = "pair_alpha"

[tool.setuptools]
py-modules = ["pair_zeta", "pair_alpha"]
"""


@pytest.mark.slow
def test_entry_point_plugins_importing_each_other_load_where_warnings_are_errors(tmp_path: Path, prefect: None) -> None:
    # pair_alpha imports pair_zeta. Autoloaded (the base), both are marked for rewriting first and nothing warns;
    # named one by one (-p, a candidate's run), alpha first imports pair_zeta before its own -p, and pytest's warning
    # that it cannot rewrite it is an error under filterwarnings = error (astropy's setting): no test would run.
    del prefect
    files = {
        "plugin/pyproject.toml": PAIR_PYPROJECT,
        "plugin/pair_zeta.py": "def pytest_report_header(config):\n    return 'zeta'\n",
        "plugin/pair_alpha.py": "import pair_zeta  # noqa: F401\n",
        "pytest.ini": "[pytest]\nfilterwarnings =\n    error\n",
    }
    result = _fix_graded_with(tmp_path, files)
    assert result.status == "graded", result.reason_codes
    assert result.component("tests").score == 1.0, result.component("tests").messages
    assert result.passed, result.reason_codes


@pytest.mark.slow
def test_a_patch_changing_its_packaging_installs_nothing(tmp_path: Path, prefect: None) -> None:
    del prefect
    repo = _repo(tmp_path)
    # The patch makes the package's own build run code (a setup.py that drops a marker); it never runs.
    marker = tmp_path / "built-by-candidate"
    setup_py = f"from pathlib import Path\nfrom setuptools import setup\nPath({str(marker)!r}).touch()\nsetup()\n"
    body = "".join(f"+{line}\n" for line in setup_py.splitlines())
    patch = _patch(BUGGY, FIXED) + (
        f"diff --git a/setup.py b/setup.py\nnew file mode 100644\n--- /dev/null\n+++ b/setup.py\n"
        f"@@ -0,0 +1,{len(setup_py.splitlines())} @@\n{body}"
    )
    result = grade(_task(repo, INSTALL), patch=patch, sandbox="local")
    assert result.status == "graded"
    assert result.component("tests").score == 1.0
    assert not marker.exists()


def test_no_setup_no_environment(tmp_path: Path, prefect: None) -> None:
    del prefect
    repo = _repo(tmp_path)
    task = _task(repo, "true").model_dump(mode="json") | {"setup": None, "env": {"PYTHONPATH": "src"}}
    result = grade(TaskSpec.model_validate(task), patch=_patch(BUGGY, FIXED), sandbox="local")
    assert result.status == "graded" and result.component("tests").score == 1.0
    assert result.environment is not None and result.environment.task_environment is None


def test_capture_lay_and_import_carry_setups_work_to_a_new_sandbox(tmp_path: Path) -> None:
    base = tmp_path / "base"
    for name, text in {"kept.txt": "kept\n", "changed.txt": "base\n", "gone.txt": "gone\n", "mine.txt": "b\n"}.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)
    pristine = tmp_path / "pristine"
    subprocess.run(["cp", "-a", str(base), str(pristine)], check=True)
    setup = (
        "echo setup > changed.txt && rm gone.txt && mkdir -p gen && echo generated > gen/made.txt"
        " && echo $PWD > gen/where.txt && echo mine-by-setup > mine.txt && echo home:$PWD > $HOME/note"
        " && printf '#!%s/bin/python\\n' $VIRTUAL_ENV > $VIRTUAL_ENV/bin/tool && chmod +x $VIRTUAL_ENV/bin/tool"
    )
    before = tree_manifest(base)
    folder = tmp_path / "environment"
    with LocalSandbox(base) as box:
        assert box.run(setup, env={}, timeout=30).ok
        environment = capture_environment(box, before, folder)
    assert environment.removed == ["gone.txt"]
    assert environment.digest.startswith("sha256:")

    # The candidate's tree: it changed mine.txt itself, so its version stays.
    candidate = tmp_path / "candidate"
    subprocess.run(["cp", "-a", str(pristine), str(candidate)], check=True)
    (candidate / "mine.txt").write_text("candidate\n")
    lay_workspace(environment, candidate, pristine)
    with LocalSandbox(candidate) as box:
        import_environment(environment, box, candidate)
        result = box.run("cat $HOME/note && head -1 $VIRTUAL_ENV/bin/tool", env={}, timeout=30)
        env_root = box.environment_roots()["env"]
    assert (candidate / "changed.txt").read_text() == "setup\n"
    assert not (candidate / "gone.txt").exists()
    assert (candidate / "gen/made.txt").read_text() == "generated\n"
    assert (candidate / "mine.txt").read_text() == "candidate\n"
    assert (candidate / "kept.txt").read_text() == "kept\n"
    # The old paths are rewritten to the new sandbox's, in the workspace, HOME and the environment.
    assert (candidate / "gen/where.txt").read_text() == f"{candidate}\n"
    assert result.stdout.splitlines() == [f"home:{candidate}", f"#!{env_root}/bin/python"]


def test_nothing_is_laid_or_rewritten_through_a_link_the_candidate_planted(tmp_path: Path) -> None:
    base = tmp_path / "base"
    (base / "src").mkdir(parents=True)
    (base / "src" / "mod.py").write_text("x = 1\n")
    pristine = tmp_path / "pristine"
    shutil.copytree(base, pristine)
    before = tree_manifest(base)
    with LocalSandbox(base) as box:
        assert box.run("mkdir gen && echo $PWD > gen/where.txt && echo $PWD > src/where.txt", env={}, timeout=30).ok
        environment = capture_environment(box, before, tmp_path / "environment")
    assert environment.naming["workspace"] == ["gen/where.txt", "src/where.txt"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "where.txt").write_text(f"{base}\n")
    candidate = tmp_path / "candidate"
    shutil.copytree(pristine, candidate)
    (candidate / "gen").symlink_to(outside)
    lay_workspace(environment, candidate, pristine)
    with LocalSandbox(candidate) as box:
        import_environment(environment, box, candidate)
    assert (outside / "where.txt").read_text() == f"{base}\n"
    assert sorted(p.name for p in outside.iterdir()) == ["where.txt"]
    assert (candidate / "src" / "where.txt").read_text() == f"{candidate}\n"


SETUP_WITH_PACKAGE = (
    "mkdir -p $VIRTUAL_ENV/share && head -c 65536 /dev/urandom > $VIRTUAL_ENV/share/data.bin"
    " && printf '#!%s/bin/python\\n' $VIRTUAL_ENV > $VIRTUAL_ENV/bin/tool && chmod +x $VIRTUAL_ENV/bin/tool"
    " && echo setup > $HOME/note"
)


def _captured(tmp_path: Path) -> tuple[Path, TaskEnvironment]:
    base = tmp_path / "base"
    base.mkdir()
    (base / "mod.py").write_text("x = 1\n")
    before = tree_manifest(base)
    with LocalSandbox(base) as box:
        assert box.run(SETUP_WITH_PACKAGE, env={}, timeout=30).ok
        environment = capture_environment(box, before, tmp_path / "environment")
    return base, environment


@pytest.mark.skipif(not pid_namespace_available(), reason="mounts need root and unshare")
def test_the_local_sandbox_as_root_mounts_the_environment_shared_and_read_only(tmp_path: Path) -> None:
    base, environment = _captured(tmp_path)
    assert environment.layered == ["env", "home"]
    layers = environment.folder / "layers"
    data = (layers / "env" / "share" / "data.bin").read_bytes()
    one, two = LocalSandbox(base), LocalSandbox(base)
    try:
        for box in (one, two):
            import_environment(environment, box, base)
        write = "cmp $VIRTUAL_ENV/share/data.bin {data} && echo one >> $HOME/note && touch $VIRTUAL_ENV/share/mine"
        assert one.run(write.format(data=layers / "env" / "share" / "data.bin"), env={}, timeout=30).ok
        seen = two.run("cat $HOME/note; ls $VIRTUAL_ENV/share; head -1 $VIRTUAL_ENV/bin/tool", env={}, timeout=30)
        again = one.run("cat $HOME/note; ls $VIRTUAL_ENV/share", env={}, timeout=30)
        # Nothing of the environment was copied into either sandbox: its files are the shared layer's, mounted.
        for box in (one, two):
            assert not (Path(box.environment_roots()["env"]) / "share").exists()
        two_env = two.environment_roots()["env"]
    finally:
        one.close()
        two.close()
    # Each sandbox's writes are its own, kept across its commands; the shared layer is never written.
    assert seen.stdout.splitlines() == ["setup", "data.bin", f"#!{two_env}/bin/python"]
    assert again.stdout.splitlines() == ["setup", "one", "data.bin", "mine"]
    assert (layers / "home" / "note").read_text() == "setup\n"
    assert sorted(p.name for p in (layers / "env" / "share").iterdir()) == ["data.bin"]
    assert (layers / "env" / "share" / "data.bin").read_bytes() == data


@pytest.mark.skipif(not pid_namespace_available(), reason="mounts need root and unshare")
def test_a_restored_workspace_drops_the_writes_over_the_mounted_environment(tmp_path: Path) -> None:
    base, environment = _captured(tmp_path)
    with LocalSandbox(base) as box:
        import_environment(environment, box, base)
        box.export_workspace(tmp_path / "saved.tar")
        assert box.run("echo later >> $HOME/note && rm $VIRTUAL_ENV/share/data.bin", env={}, timeout=30).ok
        box.import_workspace(tmp_path / "saved.tar")
        result = box.run("cat $HOME/note; ls $VIRTUAL_ENV/share", env={}, timeout=30)
    assert result.stdout.splitlines() == ["setup", "data.bin"]


def test_without_a_mount_namespace_each_sandbox_gets_a_copy(tmp_path: Path) -> None:
    base, environment = _captured(tmp_path)
    with LocalSandbox(base, pid_namespace=False) as box:
        assert not box.mounts_layers
        import_environment(environment, box, base)
        result = box.run("cat $HOME/note; head -1 $VIRTUAL_ENV/bin/tool", env={}, timeout=30)
        env_root = box.environment_roots()["env"]
        assert (Path(env_root) / "share" / "data.bin").is_file()
    assert result.stdout.splitlines() == ["setup", f"#!{env_root}/bin/python"]
