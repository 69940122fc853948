"""Opening a grading session: what every grade of a task needs, checked and resolved once.

The Python API, the three flows and the service all start here. :func:`open_session` fails fast on the
caller's mistakes (``SpecError``, exit 2 in the CLI) before any flow runs: a repository that is a URL
or a plain file, a base revision that does not resolve, an unknown profile, bad sandbox settings or
limits the docker engine cannot meet, a missing hidden-tests folder, a custom grader that does not
import. It returns a :class:`Session`, whose sandbox factory, profile and pinned base are passed on
to the flows instead of being resolved again. :func:`prepare_base` then builds (or finds cached) the
pristine baseline inside a flow.

What a grade takes from the environment store (the base, the root) is held by its sandbox factory
(:meth:`~gradeflow.sandbox.base.SandboxFactory.hold`): a session's for the session's life, across all its grades
(close it, or open it in a ``with`` block), else the one a flow makes for itself (:func:`factory_in`) for that
flow's life.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

import structlog
from prefect.context import SettingsContext, get_settings_context
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, Settings

from gradeflow.config import varied_run_setting
from gradeflow.errors import SpecError
from gradeflow.graders.composite import load_custom_grader
from gradeflow.models import EnvironmentFingerprint, TaskSpec
from gradeflow.profiles import Profile, load_profile
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.sandbox.factory import sandbox_factory
from gradeflow.tasks.baseline import Baseline, changed_state, discard_state, ensure_pristine, prepare_baseline
from gradeflow.tasks.environment import describe_environment
from gradeflow.tasks.repo import BaseRef, resolve_base

__all__ = [
    "Session",
    "factory_for",
    "factory_in",
    "flow_runs_without_heartbeat",
    "open_session",
    "prepare_base",
    "profile_for",
]


_log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Session:
    """A task spec with its sandbox factory, grading profile and pinned base, resolved once; what its grades take
    from the environment store is held until :meth:`close` (or the end of a ``with`` block)."""

    task_spec: TaskSpec
    factory: SandboxFactory
    profile: Profile
    base: BaseRef

    def close(self) -> None:
        """Release the root and bases the session's grades hold (its factory's: one a caller gave too). The
        session stays usable: its next grade holds them again."""
        self.factory.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def flow_runs_without_heartbeat() -> AbstractContextManager[object]:
    """Settings for many short flow runs: Prefect's heartbeat thread would add about a second to each.

    The settings are the current ones with the heartbeat off, built once per current settings object:
    building them (``temporary_settings``) costs tens of milliseconds, paid on every grade otherwise.
    """
    context = get_settings_context()
    held = _QUIET[0] if _QUIET else None
    if held is None or held[0] is not context.settings:
        held = (context.settings, context.settings.copy_with_update(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}))
        _QUIET[:] = [held]
    return SettingsContext(profile=context.profile, settings=held[1])


_QUIET: list[tuple[Settings, Settings]] = []
"""The last settings :func:`flow_runs_without_heartbeat` was called under, and their copy without heartbeat."""


def factory_for(task_spec: TaskSpec, sandbox: str | SandboxFactory | None) -> SandboxFactory:
    """``sandbox`` itself when it is a factory, else the factory of that kind (or the task's)."""
    if isinstance(sandbox, SandboxFactory):
        return sandbox
    return sandbox_factory(task_spec.environment, sandbox).show(task_spec)


@contextmanager
def factory_in(task_spec: TaskSpec, sandbox: str | SandboxFactory | None) -> Iterator[SandboxFactory]:
    """:func:`factory_for` for a block: a factory made here is closed at its end (what it held released); one
    given is the caller's, held on past it."""
    if isinstance(sandbox, SandboxFactory):
        yield sandbox
        return
    with factory_for(task_spec, sandbox) as factory:
        yield factory


def profile_for(task_spec: TaskSpec, profile: str | Profile | None) -> Profile:
    """``profile`` itself when loaded, else the named one (or the task's ``grading.profile``)."""
    return profile if isinstance(profile, Profile) else load_profile(profile or task_spec.grading.profile)


def open_session(
    task_spec: TaskSpec, sandbox: str | SandboxFactory | None = None, profile: str | Profile | None = None
) -> Session:
    """Check everything that is the caller's to fix (``SpecError``), then resolve the session once."""
    _check_repo(task_spec)
    varied_run_setting()  # a malformed GRADEFLOW_VARIED_RUN is the caller's to fix, before any flow runs
    base = resolve_base(task_spec)
    for spec in task_spec.graders:  # first: loading registers the codes a profile's hard gates may name
        try:
            load_custom_grader(spec)
        except (SyntaxError, TypeError) as exc:  # a module that does not compile, a class that needs arguments
            raise SpecError(f"graders: cannot load {spec.use!r}: {type(exc).__name__}: {exc}") from None
    policy = profile_for(task_spec, profile)
    factory = factory_for(task_spec, sandbox)
    if not isinstance(sandbox, SandboxFactory):
        factory.check_limits(f"task {task_spec.task_id}")
    if task_spec.tests.hidden and not Path(task_spec.tests.hidden).is_dir():
        raise SpecError(f"tests.hidden: {task_spec.tests.hidden} is not a folder (task {task_spec.task_id})")
    if task_spec.tests.hidden_patch and not Path(task_spec.tests.hidden_patch).is_file():
        raise SpecError(f"tests.hidden_patch: {task_spec.tests.hidden_patch} is not a file (task {task_spec.task_id})")
    return Session(task_spec=task_spec, factory=factory, profile=policy, base=base)


def prepare_base(
    task_spec: TaskSpec, factory: SandboxFactory, base: BaseRef
) -> tuple[EnvironmentFingerprint, Baseline]:
    """The environment's fingerprint and the task's baseline (Prefect tasks: call inside a flow), its folder held
    by ``factory`` until it is closed."""
    environment = describe_environment(task_spec, factory)
    baseline = prepare_baseline(task_spec, base, environment, factory)
    # A cached baseline can outlive its pristine folder (a cleaned cache, another GRADEFLOW_HOME sharing
    # Prefect's result storage): every step reads that folder, so it is rebuilt here, once, if gone.
    pristine = ensure_pristine(baseline.base, baseline.key)
    factory.hold(pristine.parent)  # before its digests are checked, for as long as the factory is open
    if pristine != baseline.pristine:
        baseline = baseline.model_copy(update={"pristine": pristine})
    # Whatever is cached is checked against its digests before it is trusted: anything changed since it
    # was built (by hand, by a process that should never have reached it) is rebuilt from the base.
    changed = changed_state(baseline)
    if changed:
        _log.warning("cached state changed since it was built: rebuilt", baseline=baseline.key, parts=changed)
        discard_state(baseline.key)
        baseline = prepare_baseline.with_options(refresh_cache=True)(task_spec, base, environment, factory)
        environment = environment.model_copy(update={"rebuilt": changed})
    if baseline.environment is not None:
        environment = environment.model_copy(update={"task_environment": baseline.environment.digest})
    return environment, baseline


def _check_repo(task: TaskSpec) -> None:
    location = task.repo
    if "://" in location or location.startswith("git@"):
        raise SpecError(f"repo: {location} is a URL; clone it and set repo to the checkout (task {task.task_id})")
    path = Path(location)
    if path.is_file() and not (location.endswith((".tar.gz", ".tgz")) and tarfile.is_tarfile(path)):
        raise SpecError(
            f"repo: {location} is a file, not a git repository, a folder or a .tar.gz (task {task.task_id})"
        )
