"""A ``debian:`` root under the docker sandbox: its image imported once per digest, a task on it graded in it, setup's
environment built once and mounted read-only."""

from __future__ import annotations

import collections
import contextlib
import io
import sys
import tarfile
import threading
from pathlib import Path, PurePosixPath
from typing import Any

import docker.errors
import pytest
import yaml

from builders import THROUGH_A_LINK, through_a_link_seen
from gradeflow import grade
from gradeflow.environments.roots import Root, RootRecipe, stat_digest
from gradeflow.errors import SpecError
from gradeflow.models import EnvironmentSpec
from gradeflow.sandbox._docker_on_root import private_environment
from gradeflow.sandbox._docker_root import _root_tar, root_image, root_image_tag
from gradeflow.sandbox.factory import sandbox_factory
from gradeflow.spec import load_task

FILES = {
    "src/calc.py": "def divide(a, b):\n    if b == 0:\n        return None\n    return a / b\n\n\ndef add(a, b):\n"
    "    return a + b\n",
    "tests/test_calc.py": "import collections\n\nimport pytest\n\nfrom calc import add, divide\n\n\n"
    "def test_divide_by_zero():\n    with pytest.raises(ZeroDivisionError):\n        divide(1, 0)\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n\n\ndef test_divide():\n    assert divide(6, 3) == 2\n\n\n"
    "def test_mapping_alias():\n    assert issubclass(dict, collections.Mapping)\n",
}
FIX = (
    "--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,6 +1,6 @@\n def divide(a, b):\n     if b == 0:\n"
    '-        return None\n+        raise ZeroDivisionError("no")\n     return a / b\n \n \n'
)
WRONG = (
    "--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,6 +1,6 @@\n def divide(a, b):\n     if b == 0:\n"
    "-        return None\n+        return 0\n     return a / b\n \n \n"
)
BULLSEYE = {"root": "debian:bullseye", "packages": ["python3-pytest"]}


def _task(tmp_path: Path, **spec: Any) -> Path:
    repo = tmp_path / "repo"
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    data = {
        "task_id": f"droot-{tmp_path.name[-20:].strip('_') or 'x'}",
        "type": "bugfix",
        "repo": "./repo",
        "tests": {
            "command": "PYTHONPATH=src python -m pytest -q -p no:cacheprovider --junitxml={junit}",
            "fail_to_pass": ["tests/test_calc.py::test_divide_by_zero"],
            "pass_to_pass": [
                "tests/test_calc.py::test_add",
                "tests/test_calc.py::test_divide",
                "tests/test_calc.py::test_mapping_alias",
            ],
        },
        **spec,
    }
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(data))
    return tmp_path / "task.yaml"


class _Imports:
    """Counts the engine's imports this process asks for (``docker import``), passing each on."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self._lock = threading.Lock()
        original = docker.APIClient.import_image_from_data

        def counted(client: Any, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.count += 1
            return original(client, *args, **kwargs)

        monkeypatch.setattr(docker.APIClient, "import_image_from_data", counted)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.usefixtures("prefect")
def test_a_task_on_a_bullseye_root_grades_right_under_docker_and_its_image_is_imported_once(
    tmp_path: Path, docker_client: Any, no_leftovers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    del no_leftovers
    assert sys.version_info >= (3, 10) and not hasattr(collections, "Mapping")  # passes on the root's 3.9 only
    task = load_task(_task(tmp_path, environment={**BULLSEYE, "sandbox": "docker"}))
    imports = _Imports(monkeypatch)
    fixed = grade(task, patch=FIX, sandbox="docker")
    assert (fixed.status, fixed.passed, fixed.reason_codes) == ("graded", True, []), fixed.summary()
    environment = fixed.environment
    assert environment is not None and environment.sandbox == "docker"
    assert environment.python_version.startswith("3.9.")
    varied = fixed.component("tests").details["varied_run"]
    assert varied["outcomes"] == {"tests/test_calc.py::test_divide_by_zero": "passed"}
    assert environment.image is not None and environment.image.startswith("gradeflow-root:bullseye-")
    first = docker_client.images.get(environment.image).id
    imported = imports.count
    assert imported <= 1  # none when an earlier grade on this engine imported this root already
    wrong = grade(task, patch=WRONG, sandbox="docker")
    assert (wrong.status, wrong.passed) == ("graded", False), wrong.summary()
    assert grade(task, patch="", sandbox="docker").status == "graded"
    assert wrong.environment is not None and wrong.environment.image == environment.image
    assert docker_client.images.get(environment.image).id == first and imports.count == imported  # the tag reused


def _tiny_root(tmp_path: Path, source: str) -> Root:
    fs = tmp_path / source / "fs"
    (fs / "etc").mkdir(parents=True)
    (fs / "usr" / "local" / "bin").mkdir(parents=True)
    (fs / "dev").mkdir()
    (fs / "dev" / "left-by-debootstrap").write_text("")
    (fs / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (fs / "etc" / "group").write_text("root:x:0:\n")
    return Root(folder=fs, recipe=RootRecipe("debian", source), python="", digest=stat_digest(fs))


@pytest.mark.docker
def test_a_root_is_imported_once_per_digest_by_concurrent_callers(
    tmp_path: Path, docker_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRADEFLOW_ROOTS", str(tmp_path / "roots"))
    root = _tiny_root(tmp_path, f"gftest{tmp_path.name[-12:].lower()}")
    imports = _Imports(monkeypatch)
    tags = [root_image_tag(root)]
    try:
        found: list[tuple[str, str]] = []
        callers = [threading.Thread(target=lambda: found.append(root_image(docker_client, root))) for _ in range(3)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
        assert imports.count == 1 and len(found) == 3 and len(set(found)) == 1 and found[0][0] == tags[0]
        assert tags[0] == f"gradeflow-root:{root.recipe.source}-{root.digest[:12]}"
        labels = docker_client.images.get(tags[0]).labels
        assert labels["org.gradeflow.root-digest"] == root.digest
        (root.folder / "etc" / "hostname").write_text("changed\n")  # the root rebuilt: another digest, a new tag
        changed = Root(root.folder, root.recipe, "", stat_digest(root.folder))
        tags.append(root_image(docker_client, changed)[0])
        assert imports.count == 2 and tags[1] != tags[0]
    finally:
        for tag in tags:
            with contextlib.suppress(docker.errors.ImageNotFound):
                docker_client.images.remove(tag, force=True)


def test_a_root_goes_in_with_the_sandbox_user_and_python_and_without_its_devices(tmp_path: Path) -> None:
    root = _tiny_root(tmp_path, "tiny")
    with tarfile.open(fileobj=io.BytesIO(b"".join(_root_tar(root.folder))), mode="r") as tar:
        members = {PurePosixPath(m.name).as_posix(): m for m in tar.getmembers()}
        passwd = tar.extractfile(members["etc/passwd"]).read().decode()  # type: ignore[union-attr]
        group = tar.extractfile(members["etc/group"]).read().decode()  # type: ignore[union-attr]
    assert "dev" in members and "dev/left-by-debootstrap" not in members
    assert passwd == "root:x:0:0:root:/root:/bin/sh\ngrader:x:1000:1000:Grader:/home/grader:/bin/sh\n"
    assert group == "root:x:0:\ngrader:x:1000:\n"
    assert members["usr/local/bin/python"].issym() and members["usr/local/bin/python"].linkname == "/usr/bin/python3"


HELPER = {
    "vendor/helper/setup.py": "from setuptools import setup\n\nsetup(name='helper', py_modules=['helper'])\n",
    "vendor/helper/helper.py": "VALUE = 42\n",
    "tests/test_env.py": "import os\n\nimport helper\nimport pytest\n\n\ndef test_setup_installed_helper():\n"
    "    assert helper.VALUE == 42 and helper.__file__.startswith('/opt/venv/')\n\n\n"
    "def test_the_environment_is_read_only():\n    with pytest.raises(OSError):\n"
    "        open(os.path.join(os.path.dirname(helper.__file__), 'planted.py'), 'w')\n",
}


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.usefixtures("prefect")
def test_setup_on_a_bullseye_root_is_built_once_and_mounted_read_only_under_docker(
    tmp_path: Path, docker_client: Any, no_leftovers: None
) -> None:
    del docker_client, no_leftovers
    setup = 'pip install -q --no-deps --no-index --no-build-isolation ./vendor/helper && echo built >> "$HOME/builds"'
    path = _task(tmp_path, environment={**BULLSEYE, "sandbox": "docker"}, setup=setup)
    for name, text in HELPER.items():
        (tmp_path / "repo" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "repo" / name).write_text(text)
    spec = yaml.safe_load(path.read_text())
    spec["tests"]["pass_to_pass"] += [
        "tests/test_env.py::test_setup_installed_helper",
        "tests/test_env.py::test_the_environment_is_read_only",
    ]
    path.write_text(yaml.safe_dump(spec))
    task = load_task(path)
    fixed = grade(task, patch=FIX, sandbox="docker")
    assert (fixed.status, fixed.passed, fixed.reason_codes) == ("graded", True, []), fixed.summary()
    assert fixed.environment is not None and fixed.environment.task_environment is not None
    wrong = grade(task, patch=WRONG, sandbox="docker")
    assert (wrong.status, wrong.passed) == ("graded", False), wrong.summary()
    from gradeflow.config import cache_dir

    environment = list(cache_dir().glob(f"baselines/{task.task_id}-*/environment/layers"))
    assert len(environment) == 1  # one build, shared by both grades
    assert (environment[0] / "home" / "builds").read_text() == "built\n"
    assert (environment[0] / "env" / "lib" / "python3.9" / "site-packages" / "helper.py").is_file()


def test_what_docker_cannot_do_on_a_debian_root_is_refused_at_load_in_one_line() -> None:
    with pytest.raises(SpecError, match=r"environment.image .* and environment.root debian:bullseye .* keep one"):
        sandbox_factory(EnvironmentSpec(root="debian:bullseye", image="gradeflow-python:bookworm"), "docker")
    with pytest.raises(SpecError, match="local sandbox cannot run on it"):
        sandbox_factory(EnvironmentSpec(root="debian:bullseye"), "local")


@pytest.mark.slow
@pytest.mark.docker
def test_a_mounted_environment_stays_mounted_read_only_in_a_container_made_again(
    tmp_path: Path, docker_client: Any, no_leftovers: None
) -> None:
    del docker_client, no_leftovers
    layer = tmp_path / "layers" / "env"
    with tarfile.open(fileobj=private_environment("3.9")) as tar:
        tar.extractall(layer, filter="tar")
    (layer / "lib" / "python3.9" / "site-packages" / "helper.py").write_text("VALUE = 42\n")
    for folder in (tmp_path, tmp_path / "layers", layer):
        folder.chmod(0o755)
    (tmp_path / "ws").mkdir()
    factory = sandbox_factory(EnvironmentSpec(**BULLSEYE), "docker")
    show = "python -c 'import sys, helper; print(sys.prefix, helper.VALUE)'; touch /opt/venv/planted"
    with factory, factory.open(tmp_path / "ws") as sandbox:
        fresh = sandbox.run("python -c 'import sys; print(sys.prefix)'; pip --version", env={}, timeout=60)
        sandbox.mount_environment({"env": (layer,)}, {}, 0)
        mounted = sandbox.run(show, env={}, timeout=60)
        sandbox.export_workspace(tmp_path / "ws.tar")
        sandbox.import_workspace(tmp_path / "ws.tar")  # the perf step's fresh container
        again = sandbox.run(show, env={}, timeout=60)
    assert fresh.exit_code == 0 and fresh.stdout.startswith("/opt/venv\n") and "python 3.9" in fresh.stdout
    for done in (mounted, again):
        assert done.stdout == "/opt/venv 42\n" and "Read-only file system" in done.stderr, done
    assert not (layer / "planted").exists()


NETWORK_TESTS = (
    "import socket\n\nimport pytest\nimport six\n\n\ndef test_offline():\n    with pytest.raises(OSError):\n"
    "        socket.create_connection(('pypi.org', 443), timeout=5).close()\n\n\n"
    "def test_six_from_setup():\n    assert six.PY3\n"
)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.usefixtures("prefect")
def test_setup_on_a_root_under_docker_gets_the_network_the_tests_do_not_mounted_or_copied(
    tmp_path: Path, docker_client: Any, no_leftovers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    del no_leftovers
    probe = "import socket; socket.create_connection(('pypi.org', 443), timeout=10).close()"
    setup = f'python -c "{probe}" && pip install -q --no-deps six && echo built >> "$HOME/builds"'
    environment = {**BULLSEYE, "sandbox": "docker", "setup_network": True}
    path = _task(tmp_path, environment=environment, setup=setup)
    (tmp_path / "repo" / "tests" / "test_net.py").write_text(NETWORK_TESTS)
    spec = yaml.safe_load(path.read_text())
    spec["tests"]["pass_to_pass"] += ["tests/test_net.py::test_offline", "tests/test_net.py::test_six_from_setup"]
    path.write_text(yaml.safe_dump(spec))
    task = load_task(path)
    mounted = grade(task, patch=FIX, sandbox="docker")
    assert (mounted.status, mounted.passed, mounted.reason_codes) == ("graded", True, []), mounted.summary()
    # An engine that cannot see this host's folders (a remote one) gets the environment copied in instead.
    from gradeflow.sandbox import _docker_layers

    monkeypatch.setitem(_docker_layers._seen, str(docker_client.api.base_url), False)
    copied = grade(task, patch=FIX, sandbox="docker")
    assert (copied.status, copied.passed, copied.reason_codes) == ("graded", True, []), copied.summary()
    assert not grade(task, patch=WRONG, sandbox="docker").passed
    from gradeflow.config import cache_dir

    builds = list(cache_dir().glob(f"baselines/{task.task_id}-*/environment/layers/home/builds"))
    assert len(builds) == 1 and builds[0].read_text() == "built\n"  # built once, with the network, for all three


@pytest.mark.slow
@pytest.mark.docker
def test_an_interpreter_started_through_a_link_to_the_environments_runs_as_it_under_docker(
    tmp_path: Path, docker_client: Any, no_leftovers: None
) -> None:
    # As in the isolated sandbox (tests/environments/test_task_environments.py): tox --current-env's link.
    del docker_client, no_leftovers
    factory = sandbox_factory(EnvironmentSpec(**BULLSEYE), "docker")
    with factory, factory.open(tmp_path) as sandbox:
        done = sandbox.run(THROUGH_A_LINK, env={}, timeout=120)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == through_a_link_seen("/opt/venv")
