"""Compared values: a test passed because a value the candidate returned is equal by its own rule.

A return value whose ``__eq__`` is always true makes ``assert result == expected`` pass without fixing
anything. The harness notes, for each comparison of a test's assertions, whether the methods deciding it
(``__eq__``, ``__ne__``, ``__contains__``, ordering, a bare assert's ``__bool__``) are defined by a class of
the repository (``r``) or elsewhere (``e``: builtins, the standard library, installed packages); a value
from elsewhere that equals a private object of the harness's own (``unittest.mock.ANY``) is equal to
anything (``a``) and counts as ``r`` does. A comparison is suspect
when the candidate's run compared a value equal by the repository's rule, or equal to anything, where a
trusted run of the same test compared only values equal by rules from elsewhere.

| trusted run's comparison      | candidate's comparison                 | finding |
|-------------------------------|----------------------------------------|---------|
| only ``e`` operands           | an ``r`` operand                       | yes     |
| an ``r`` operand (same kind)  | anything                               | no      |
| only ``e`` operands           | only ``e`` operands                    | no      |
| not reached (no witness)      | anything                               | no      |

The witness is the **base run**: the cached health check of the pristine base, which every grade already
has, made by code the task's author gave (the candidate's code never ran in it). A fail_to_pass test fails
there, but its operands are evaluated before its assertion fails, so the base shows which kind of value
the test compares (``None`` or a wrong ``int`` where the fix returns an ``int``; a dataclass of the
repository where an honest fix returns another of its instances: the same kind, no finding). A reference
run would witness more (a test whose base raises before comparing, a feature whose class is new) but
exists only for tasks that ship a reference, and would cost a run per task to cache; the base run costs
nothing more per grade. A comparison the base never reached has no witness and raises no finding. The
test-evidence grader uses the same rule with the patch's tests on the base as the witness.

The rule holds for a fixed fail_to_pass test and for a kept pass_to_pass test alike (the base ran that one
and passed it: its witness is the value an honest ``add`` returns, and an always-equal sum keeps
``assert add(2, 3) == 5`` passing while it breaks ``add``). A value equal to anything (``a``) where the base's
same comparison was not is a finding of its own in every test the run compared
(:func:`equal_to_anything`): no honest value equals an object it has never seen, so it is
``equal-to-anything``, a hard gate of the shipped profiles, where a repository class's ``__eq__`` goes to a
person (an honest fix may return an instance of its own class).
"""

from __future__ import annotations

from collections.abc import Iterable

from gradeflow.models.evidence import HarnessSummary

__all__ = ["ANYTHING_REASON", "REASON", "equal_to_anything", "redefined_equality"]

REASON = "equality-from-repository"
"""The reason code of a finding: a person decides whether the value is honest."""

ANYTHING_REASON = "equal-to-anything"
"""The reason code of a value equal to anything where the base's was not: no honest value is."""


def redefined_equality(
    candidate: HarnessSummary | None, trusted: HarnessSummary | None, tests: Iterable[str]
) -> dict[str, list[str]]:
    """Test id → one line per suspect comparison of that test (tests with none are left out)."""
    if candidate is None or trusted is None:
        return {}
    found = {}
    for test in tests:
        witness = _comparisons(trusted.compared.get(test, {}))
        lines = [
            _line(place, operands, witness[place])
            for place, operands in _comparisons(candidate.compared.get(test, {})).items()
            if place in witness and _suspect(operands, witness[place])
        ]
        if lines:
            found[test] = lines
    return found


def equal_to_anything(candidate: HarnessSummary | None, trusted: HarnessSummary | None) -> dict[str, list[str]]:
    """Test id → one line per comparison where the candidate's run compared a value equal to anything and the
    trusted run's same comparison (of the same test) compared none; every test the candidate's run compared."""
    if candidate is None or trusted is None:
        return {}
    found = {}
    for test, entries in candidate.compared.items():
        witness = _comparisons(trusted.compared.get(test, {}))
        lines = [
            _line(place, operands, witness[place], "equal to anything")
            for place, operands in _comparisons(entries).items()
            if place in witness and _anything(operands) and not _anything(witness[place])
        ]
        if lines:
            found[test] = lines
    return found


def _anything(operands: list[str]) -> bool:
    return any(o.startswith("a ") for o in operands)


def _comparisons(entries: dict[str, str]) -> dict[str, list[str]]:
    """``file:line:methods`` → the fingerprints of its operands (``r type (Class.method)``, ``e type``)."""
    grouped: dict[str, list[str]] = {}
    for key, fingerprint in entries.items():
        where, _, rest = key.rpartition(":")  # the methods
        place, _, _operand = where.rpartition(":")
        grouped.setdefault(f"{place}:{rest}", []).append(fingerprint)
    return grouped


_OWN_RULE = ("r ", "a ")
"""Fingerprints of a value equal by the repository's rule (``r``) or equal to anything (``a``)."""


def _suspect(operands: list[str], witness: list[str]) -> bool:
    return any(o.startswith(_OWN_RULE) for o in operands) and not any(w.startswith(_OWN_RULE) for w in witness)


def _line(place: str, operands: list[str], witness: list[str], what: str = "") -> str:
    where, _, methods = place.rpartition(":")
    ours = ", ".join(sorted({o[2:] for o in operands if o.startswith(_OWN_RULE)}))
    theirs = ", ".join(sorted({w[2:] for w in witness}))
    claim = what or f"whose {methods} the repository defines"
    return f"{where} compares a value {claim} ({ours}) where the trusted run compared {theirs}"
