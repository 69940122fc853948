"""``environment.shared_setup``: one build per key, laid read-only under every task's own environment layer.

Real git, real sandboxes (local as root, isolated) and real overlays: the unit part drives capture and import over a
shared layer directly (a removed file, a replaced folder, an appended file, paths rewritten), the grade part goes
through ``gradeflow.grade`` with tasks that share one build and one that does not.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from builders import committed_repo
from gradeflow import grade
from gradeflow.environments.disk import shared_dir
from gradeflow.environments.store import stored
from gradeflow.models import TaskSpec
from gradeflow.sandbox._local_procs import pid_namespace_available
from gradeflow.sandbox.local import LocalSandbox
from gradeflow.tasks._environment import capture_environment, import_environment, tree_manifest

needs_mounts = pytest.mark.skipif(not pid_namespace_available(), reason="layers are stacked as root")

SHARED = (
    "mkdir -p $VIRTUAL_ENV/share/pkg $VIRTUAL_ENV/share/keep"
    " && echo old > $VIRTUAL_ENV/share/pkg/old.txt && echo gone > $VIRTUAL_ENV/share/gone.txt"
    " && echo kept > $VIRTUAL_ENV/share/keep/k.txt"
    " && printf '#!%s/bin/python\\n' $VIRTUAL_ENV > $VIRTUAL_ENV/bin/tool && chmod +x $VIRTUAL_ENV/bin/tool"
    " && echo $VIRTUAL_ENV > $VIRTUAL_ENV/share/paths.txt && echo shared > $HOME/note"
)
OVER = (
    "rm $VIRTUAL_ENV/share/gone.txt && rm -r $VIRTUAL_ENV/share/pkg && mkdir $VIRTUAL_ENV/share/pkg"
    " && echo new > $VIRTUAL_ENV/share/pkg/new.txt && echo $VIRTUAL_ENV >> $VIRTUAL_ENV/share/paths.txt"
    " && echo $PWD > $VIRTUAL_ENV/share/workspace.txt && echo task >> $HOME/note"
)
LOOK = (
    "ls $VIRTUAL_ENV/share $VIRTUAL_ENV/share/pkg; cat $VIRTUAL_ENV/share/paths.txt $VIRTUAL_ENV/share/workspace.txt"
    " $VIRTUAL_ENV/share/keep/k.txt $HOME/note; head -1 $VIRTUAL_ENV/bin/tool"
)


def _box_run(box: LocalSandbox, command: str) -> str:
    result = box.run(command, env={}, timeout=60)
    assert result.ok, result.stderr
    return result.stdout


@needs_mounts
def test_a_layer_built_over_a_shared_one_keeps_its_removals_and_paths(tmp_path: Path) -> None:
    first, second, third = (tmp_path / name for name in ("first", "second", "third"))
    for folder in (first, second, third):
        folder.mkdir()
    with LocalSandbox(first) as box:
        assert box.stacks_layers
        _box_run(box, SHARED)
        shared = capture_environment(box, tree_manifest(first), shared_dir() / "shared-unit-test")
    with LocalSandbox(second) as box:
        import_environment(shared, box, second)
        _box_run(box, OVER)
        own = capture_environment(box, tree_manifest(second), tmp_path / "environment", under=shared)
        setup_paths = (box.environment_roots()["env"], box.workspace)
    assert own.shared == "shared-unit-test" and own.owner == shared.owner and own.digest != shared.digest
    # The task's layer holds what setup wrote over the shared one, nothing of the rest.
    layer = own.folder / "layers" / "env" / "share"
    assert not (layer / "keep").exists()
    assert (layer / "gone.txt").is_char_device()
    assert sorted(p.name for p in (layer / "pkg").iterdir()) == ["new.txt"]
    with LocalSandbox(third) as box:
        import_environment(own, box, third)
        seen = _box_run(box, LOOK).splitlines()
        env = box.environment_roots()["env"]
    assert env not in setup_paths
    # gone.txt removed, pkg replaced (old.txt hidden), every path this sandbox's own; the shared layer untouched.
    assert seen == [
        f"{env}/share:",
        "keep",
        "paths.txt",
        "pkg",
        "workspace.txt",
        "",
        f"{env}/share/pkg:",
        "new.txt",
        env,
        env,
        str(third),
        "kept",
        "shared",
        "task",
        f"#!{env}/bin/python",
    ]
    assert (shared.folder / "layers" / "env" / "share" / "pkg" / "old.txt").read_text() == "old\n"
    assert (shared.folder / "layers" / "env" / "share" / "gone.txt").is_file()


def _repo(folder: Path, requirements: str, answer: str) -> Path:
    files = {
        "requirements.txt": requirements,
        "calc.py": f"def answer():\n    return {answer}\n",
        "test_calc.py": "import calc\nimport sharedmod\n\n\ndef test_answer():\n    assert calc.answer() == 42\n\n\n"
        "def test_shared():\n    assert sharedmod.WANTED == open('requirements.txt').read().strip()\n\n\n"
        "def test_home():\n    import os\n    home = os.path.expanduser('~')\n"
        "    assert sorted(os.listdir(home + '/d')) == ['b'] and not os.path.exists(home + '/builds')\n",
    }
    return committed_repo(folder, files)


# Writes a module into the environment's site folder from the one input it reads, and leaves a mark of each build.
SHARED_SETUP = (
    "python -c \"import site, sys; w = open('requirements.txt').read().strip();"
    " open(site.getsitepackages()[0] + '/sharedmod.py', 'w').write(f'WANTED = {w!r}')\""
    " && date +%s%N >> $HOME/builds && mkdir $HOME/d && echo a > $HOME/d/a"
)
# The task's own: a file of the shared layer removed, a folder of it replaced (a whiteout and an opaque folder).
# And a console script in the environment's bin, a folder the layer of rewritten paths over the shared one also holds.
OWN_SETUP = (
    "rm $HOME/builds && rm -r $HOME/d && mkdir $HOME/d && echo b > $HOME/d/b && echo own > $HOME/own-setup"
    " && python -c \"import os, sys; open(os.path.join(sys.prefix, 'bin', 'own-tool'), 'w').write('x')\""
)


def _task(repo: Path, task_id: str, shared: str = SHARED_SETUP) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "task_id": task_id,
            "type": "bugfix",
            "repo": str(repo),
            "base_revision": "HEAD",
            "setup": OWN_SETUP,
            "tests": {
                "command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}",
                "fail_to_pass": ["test_calc.py::test_answer"],
                "pass_to_pass": ["test_calc.py::test_shared", "test_calc.py::test_home"],
                "timeout": 120,
            },
            "environment": {"shared_setup": shared, "shared_inputs": ["requirements.txt", "absent.txt"]},
        }
    )


FIX = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def answer():\n-    return 41\n+    return 42\n"


def _environments(home: Path) -> dict[str, dict[str, object]]:
    return {
        path.parent.parent.name: json.loads(path.read_text())
        for path in (home / "baselines").glob("*/environment/environment.json")
    }


@needs_mounts
@pytest.mark.slow
def test_tasks_with_one_shared_setup_and_input_share_one_build(tmp_path: Path, prefect: None) -> None:
    del prefect
    one = _repo(tmp_path / "one", "numpy==1.0", "41")
    two = _repo(tmp_path / "two", "numpy==1.0", "41")
    other = _repo(tmp_path / "other", "numpy==2.0", "41")
    results = [grade(_task(repo, name), patch=FIX) for repo, name in ((one, "one"), (two, "two"), (other, "other"))]
    for result in results:
        assert result.status == "graded", result.inconclusive_reason
        assert result.component("tests").score == 1.0, result.component("tests").messages
    home = shared_dir().parent
    envs = {key.split("-")[0]: env for key, env in _environments(home).items()}
    # one and two (other ids, other repositories, the same command and input) share a build; other has its own.
    assert envs["one"]["shared"] == envs["two"]["shared"] != envs["other"]["shared"]
    keys = {envs[name]["shared"] for name in ("one", "two", "other")}
    assert {entry.name for entry in stored() if entry.kind == "shared"} >= keys
    for key in keys:
        builds = (shared_dir() / str(key) / "layers" / "home" / "builds").read_text().splitlines()
        assert len(builds) == 1  # built once, however many tasks took it
    # The task's own layer is its setup's writes only: the shared module lies in the layer under it.
    own = home / "baselines" / next(k for k in _environments(home) if k.startswith("one-")) / "environment"
    assert (own / "layers" / "home" / "own-setup").is_file()
    assert not list((own / "layers").rglob("sharedmod.py"))
    # A shared build that needs more of the base than its inputs fails there: the task builds its own, whole.
    lone = _repo(tmp_path / "lone", "numpy==3.0", "41")
    whole = grade(_task(lone, "lone", SHARED_SETUP + " && test -f calc.py"), patch=FIX)
    assert whole.status == "graded", whole.inconclusive_reason
    assert whole.component("tests").score == 1.0
    lone_env = next(env for key, env in _environments(home).items() if key.startswith("lone-"))
    assert lone_env["shared"] is None
    failed = list(shared_dir().glob("*.failed"))
    assert len(failed) == 1 and "environment.shared_setup fails on the pristine base (exit 1)" in failed[0].read_text()
    # A pruned shared build is built again under the next grade, its base's environment with it.
    key = str(envs["one"]["shared"])
    subprocess.run(["rm", "-rf", str(shared_dir() / key)], check=True)
    again = grade(_task(one, "one"), patch=FIX)
    assert again.status == "graded", again.inconclusive_reason
    assert again.component("tests").score == 1.0
    assert (shared_dir() / key / "environment.json").is_file()
