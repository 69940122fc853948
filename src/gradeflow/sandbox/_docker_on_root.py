"""The docker sandbox on a ``debian:`` root: containers of the root's image, a private Python environment in each,
and the environment ``setup`` built there mounted read-only into every run.

:class:`DockerRootSandboxFactory` builds or verifies the root as the isolated sandbox does
(:func:`~gradeflow.environments.roots.ensure_root`), holds it while the factory is open, and runs its image
(:func:`~gradeflow.sandbox._docker_root.root_image`: imported once per root digest). Each
:class:`DockerRootSandbox` is a :class:`~gradeflow.sandbox.docker.DockerSandbox` whose commands have a private
environment at :data:`ENV_DIR` over the root's ``python3`` and its system packages (``python``, ``pip``,
``pytest`` are its; installs go there, never into the read-only root), as the isolated sandbox's commands have on
a root. What ``setup`` left there and in ``HOME`` is captured once per baseline and unpacked on the host
(:mod:`gradeflow.tasks._environment`); every later container gets the unpacked environment bound read-only at
:data:`ENV_DIR` (nothing copied: a command cannot write there) and ``HOME`` as the docker sandbox mounts it (the
layer under a tmpfs of the container's own: :mod:`gradeflow.sandbox._docker_layers`). Both need the engine on
this machine; elsewhere both are copied into each container.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import IO, Any, ClassVar

from docker.types import Mount

from gradeflow.config import cache_dir
from gradeflow.environments.roots import Root, RootRecipe, ensure_root
from gradeflow.errors import SandboxUnavailable, SpecError
from gradeflow.models import EnvironmentSpec
from gradeflow.sandbox._docker_engine import ENGINE_ERRORS, HOME_DIR, WORKSPACE, remove_container
from gradeflow.sandbox._docker_files import get_tree
from gradeflow.sandbox._docker_io import owned_copy
from gradeflow.sandbox._docker_root import root_image
from gradeflow.sandbox._link_hook import PTH_TARGET, link_hook_file
from gradeflow.sandbox.base import SandboxDescription
from gradeflow.sandbox.docker import ENGINE_WAIT, DockerSandbox, DockerSandboxFactory, DockerSettings
from gradeflow.sandbox.shape import Shape

__all__ = ["ENV_DIR", "DockerRootSandbox", "DockerRootSandboxFactory"]

ENV_DIR = "/opt/venv"
"""The private Python environment of a container on a root (``sys.prefix`` of its ``python``)."""
_SCRIPT = "#!{python}\nimport sys\nfrom {module} import {function}\nsys.exit({function}())\n"
_COPY_ERRORS: tuple[type[Exception], ...] = (*ENGINE_ERRORS, OSError, tarfile.TarError)
_SCRIPTS = {"pip": ("pip._internal.cli.main", "main"), "pytest": ("pytest", "console_main")}


class DockerRootSandbox(DockerSandbox):
    """A container of a root's image with a private environment at :data:`ENV_DIR` (see the module)."""

    def __init__(
        self,
        client: Any,
        settings: DockerSettings,
        image_id: str,
        host_workspace: Path,
        shape: Shape | None = None,
        *,
        python: str,
    ) -> None:
        """``python``: ``major.minor`` of the root's ``python3``."""
        self._python = python
        self._env_layer: Path | None = None
        """The host folder bound read-only at :data:`ENV_DIR` (``None``: a fresh private environment)."""
        super().__init__(client, settings, image_id, host_workspace, shape)

    def _container_options(self) -> dict[str, Any]:
        options = super()._container_options()
        if self.mounts_layers:  # a .pth of the root's that runs LINK_HOOK (a host file: the engine must be here)
            hook = Mount(PTH_TARGET, str(link_hook_file(cache_dir() / "hooks")), type="bind", read_only=True)
            options["mounts"] = [*options.get("mounts", []), hook]
        if self._env_layer is None:
            options["tmpfs"] = {**options["tmpfs"], ENV_DIR: self._settings.tmpfs()[WORKSPACE]}
        else:
            bound = Mount(ENV_DIR, str(self._env_layer), type="bind", read_only=True)
            options["mounts"] = [*options.get("mounts", []), bound]
        return options

    def _create(self, image_id: str, host_workspace: Path) -> Any:
        container = super()._create(image_id, host_workspace)
        if self._env_layer is not None:
            return container
        try:
            self._put(container, ENV_DIR, private_environment(self._python))
        except BaseException as exc:
            remove_container(container)
            if isinstance(exc, ENGINE_ERRORS):
                raise SandboxUnavailable(f"docker sandbox: cannot make {ENV_DIR}: {exc}") from None
            raise
        return container

    def _path(self) -> str:
        return f"{ENV_DIR}/bin:{super()._path()}"

    def environment_roots(self) -> dict[str, str]:
        return {"home": HOME_DIR, "env": ENV_DIR}

    def export_environment(self, folder: Path) -> None:
        super().export_environment(folder)
        try:
            with (folder / "env.tar").open("wb") as out:
                get_tree(self._client.api, self._live().id, ENV_DIR, out, user=self._settings.user)
        except ENGINE_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot copy {ENV_DIR} out: {exc}") from None

    def import_environment(self, folder: Path) -> None:
        super().import_environment(folder)
        if not (folder / "env.tar").is_file():
            return
        try:
            with owned_copy(folder / "env.tar", self._settings.uid, self._settings.gid) as tree:
                self._put(self._live(), ENV_DIR, tree, clear=True)
        except _COPY_ERRORS as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot copy {ENV_DIR} in: {exc}") from None

    def mount_environment(
        self, layers: dict[str, tuple[Path, ...]], fixes: dict[str, dict[str, bytes]], owner: int
    ) -> None:
        """A new container with ``layers['env']`` bound read-only at :data:`ENV_DIR`, ``HOME`` as the docker
        sandbox mounts it (:meth:`DockerSandbox.mount_environment`)."""
        self._env_layer = layers["env"][-1] if "env" in layers else None
        super().mount_environment(layers, fixes, owner)


def private_environment(python: str) -> IO[bytes]:
    """A tar (rewound) of the private environment over the root's ``/usr/bin/python<python>``: ``pyvenv.cfg``
    with the system's packages included, the interpreter's links, an empty site folder, ``pip`` and ``pytest``."""
    buffer = io.BytesIO()
    interpreter = f"/usr/bin/python{python}"
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for folder in ("bin", "lib", f"lib/python{python}", f"lib/python{python}/site-packages"):
            _add(tar, folder, tarfile.DIRTYPE, mode=0o755)
        config = f"home = /usr/bin\ninclude-system-site-packages = true\nversion = {python}\n"
        _add(tar, "pyvenv.cfg", tarfile.REGTYPE, data=config.encode())
        for name in ("python", "python3", f"python{python}"):
            _add(tar, f"bin/{name}", tarfile.SYMTYPE, link=interpreter)
        for name, (module, function) in {**_SCRIPTS, "py.test": _SCRIPTS["pytest"]}.items():
            text = _SCRIPT.format(python=f"{ENV_DIR}/bin/python", module=module, function=function)
            _add(tar, f"bin/{name}", tarfile.REGTYPE, data=text.encode(), mode=0o755)
    buffer.seek(0)
    return buffer


def _add(tar: tarfile.TarFile, name: str, kind: bytes, *, data: bytes = b"", link: str = "", mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode, info.size = kind, link, mode, len(data)
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


class DockerRootSandboxFactory(DockerSandboxFactory):
    """Opens :class:`DockerRootSandbox` instances on the image of the task's ``debian:`` root, the root held from
    the first sandbox (or description) on until the factory is closed (:meth:`SandboxFactory.hold`)."""

    runs_roots: ClassVar[bool] = True

    def __init__(self, environment: EnvironmentSpec, *, engine_wait: float = ENGINE_WAIT) -> None:
        """``SpecError`` when ``environment`` names no ``debian:`` root, or an image beside it."""
        recipe = RootRecipe.from_spec(environment.root, environment.packages)
        if recipe is None or recipe.kind != "debian":
            raise SpecError(f"environment.root {environment.root}: not a debian: root")
        if environment.image:
            raise SpecError(
                f"environment.image {environment.image} and environment.root {environment.root} both name what the "
                "docker sandbox runs; keep one"
            )
        super().__init__(environment, engine_wait=engine_wait)
        self.recipe = recipe
        self._root: Root | None = None

    def _resolve_image(self, client: Any) -> str:
        """The root's image, the root built or verified and held once per factory (again when it was released and is
        gone since), imported when the engine has no image of its digest."""
        root = self._root
        if self._image_id is not None and root is not None and self.hold(root.folder.parent):
            return self._image_id
        root = self._root = ensure_root(self.recipe)  # marks it used, so no cap removes it before it is held
        self.hold(root.folder.parent)
        self._image_name, image_id = root_image(client, root)
        return image_id

    def _sandbox(self, client: Any, image_id: str, host_workspace: Path) -> DockerRootSandbox:
        assert self._root is not None
        python = self._root.python
        return DockerRootSandbox(client, self.settings, image_id, host_workspace, self.shape, python=python)

    def describe(self) -> SandboxDescription:
        description = super().describe()
        assert self._root is not None
        over = f"private per sandbox, over {self.recipe.label()} ({self._root.digest[:12]})"
        return description.model_copy(update={"python_environment": over})
