"""Which tests a task scores, from repeated runs on the base and on the base with the reference.

| outcome in every run: base        | with the reference     | goes to         |
|-----------------------------------|------------------------|-----------------|
| failed, error, xfailed or missing | passed                 | ``fail_to_pass`` |
| passed                            | passed                 | ``pass_to_pass`` |
| changes between runs of one side  | (or changes there)     | ``quarantine``   |
| anything else (e.g. passed/failed)| …                      | not scored       |

An expected failure (``xfailed``) is a failure here, as in a grade under the default ``tests.xfail:
fail``: a test xfailed on the base that passes with the reference is one the fix makes pass.

Ids are written as pytest node ids (``tests/test_x.py::TestX::test_y``) when the JUnit classname
names a file of the tree, else as JUnit ``classname::name``; both match the same testcase.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from pydantic import BaseModel, Field

from gradeflow.models.evidence import Outcome, TestCaseResult

__all__ = ["DerivedTests", "derive_tests", "node_id_of"]

_FAILING = {"failed", "error", "xfailed", "missing"}


class DerivedTests(BaseModel):
    """The test lists of a derived task spec, each sorted."""

    fail_to_pass: list[str] = Field(default_factory=list)
    pass_to_pass: list[str] = Field(default_factory=list)
    quarantine: list[str] = Field(default_factory=list)
    """Tests whose outcome changed between runs of the same side."""
    unscored: list[str] = Field(default_factory=list)
    """Tests that are steady but neither fail-to-pass nor pass-to-pass (e.g. broken by the reference)."""


def node_id_of(case: TestCaseResult, files: Collection[str]) -> str:
    """The node id of ``case`` when its classname names a file in ``files``, else ``classname::name``."""
    parts = case.classname.split(".") if case.classname else []
    for cut in range(len(parts), 0, -1):
        module = "/".join(parts[:cut]) + ".py"
        if module in files:
            return "::".join([module, *parts[cut:], case.name])
    if len(parts) >= 2 and (text := "/".join(parts[:-1]) + "." + parts[-1]) in files:
        return f"{text}::{case.name}"  # a text file's doctest: pytest dots its path in the classname
    return f"{case.classname}::{case.name}"


def derive_tests(
    base: Mapping[str, Sequence[Outcome]],
    reference: Mapping[str, Sequence[Outcome]],
    cases: dict[str, TestCaseResult],
    files: Collection[str],
) -> DerivedTests:
    """Sort every test seen (``classname::name`` → outcome per run, on each side) into the task's lists."""
    derived = DerivedTests()
    for key in sorted(base.keys() | reference.keys()):
        before: set[str] = set(base.get(key, ["missing"]))
        after: set[str] = set(reference.get(key, ["missing"]))
        test_id = node_id_of(cases[key], files)
        if len(before) > 1 or len(after) > 1:
            derived.quarantine.append(test_id)
        elif after == {"passed"} and before <= _FAILING:
            derived.fail_to_pass.append(test_id)
        elif after == {"passed"} and before == {"passed"}:
            derived.pass_to_pass.append(test_id)
        else:
            derived.unscored.append(test_id)
    for name in ("fail_to_pass", "pass_to_pass", "quarantine", "unscored"):
        getattr(derived, name).sort()
    return derived
