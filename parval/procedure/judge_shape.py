"""The one shape of every model-gate verdict, in one place so that no judge can skip it.

* A PASS names the evidence it rests on (`rests_on`: what → the evidence), every piece
  present and non-empty: no PASS on nothing.
* A FAIL names the observed violation (`violation`): a wrong order, counter, reply, a
  crash. No FAIL without one.
* Everything else is PENDING or BLOCKED (or UNSUPPORTED) with a reason naming what is
  missing; NOT_APPLICABLE carries its reason.

Judges build their results with `passed`, `failed`, `pending`, `blocked` below, and every
judge is registered with `@judge(ID, declaration)`: the decorator checks the result it
returns, and a result without the shape becomes PENDING naming what it lacked (the verdict
cannot be trusted, so it is not given). The declaration is the assertion's registry entry,
written at its judge (`entry_of`, `entries_of` read it back for the gate module's
`ENTRIES`). `tests/layout/test_registry.py` checks that every model-gate assertion's judge
is such a function, declared in its own module.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import ParamSpec

# PENDING, BLOCKED and NOT_APPLICABLE carry only their reason: the plain builders serve.
from parval.jsonread import iterate
from parval.procedure.entry import Declaration, Entry
from parval.status import Result, Status
from parval.status import blocked as blocked
from parval.status import not_applicable as not_applicable
from parval.status import pending as pending

P = ParamSpec("P")

JudgeFn = Callable[..., Result]


def empty(value: object) -> bool:
    """No evidence: None, False, zero, or an empty string or collection."""
    if value is None or value is False:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == 0
    if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
        return len(value) == 0
    return False


def _size(value: object) -> object:
    """How the evidence a PASS rests on is shown: its size, or the value itself. One recorded
    event (a mapping with a `kind`) is one piece of evidence, not as many as its fields."""
    if isinstance(value, dict) and "kind" in value:
        return 1
    if isinstance(value, list | tuple | dict | set | frozenset):
        return len(value)
    return value


def passed(id_: str, reason: str, rests_on: Mapping[str, object], **evidence: object) -> Result:
    """A PASS that names each piece of evidence it rests on (checked by `judge`)."""
    shown = {k: _size(v) for k, v in rests_on.items()}
    gaps = sorted(k for k, v in rests_on.items() if empty(v))
    empty_evidence = {"empty_evidence": gaps or ["(none named)"]} if gaps or not rests_on else {}
    return Result(id_, Status.PASS, reason, {**evidence, "rests_on": shown, **empty_evidence})


def rests_on(r: Result) -> Mapping[str, object]:
    """The evidence a PASS names as resting on (its `rests_on`), to name more."""
    rests = r.evidence["rests_on"]
    if not isinstance(rests, Mapping):  # as unpacking it would
        raise TypeError(f"'{type(rests).__name__}' object is not a mapping")
    return rests


def failed(id_: str, reason: str, violation: object, **evidence: object) -> Result:
    """A FAIL that carries the violation it observed (checked by `judge`)."""
    return Result(id_, Status.FAIL, reason, {**evidence, "violation": violation})


def unsupported(id_: str, reason: str, **evidence: object) -> Result:
    """The server lacks what the check needs (a route, a field): `reason` names it."""
    return Result(id_, Status.UNSUPPORTED, reason, dict(evidence))


def shape_problem(r: Result) -> str | None:
    """What keeps a result from having the verdict shape (None when it has it)."""
    if r.status is Status.PASS:
        rests = r.evidence.get("rests_on")
        if not isinstance(rests, dict) or not rests:
            return "it names no evidence it rests on"
        gaps = r.evidence.get("empty_evidence") or [k for k, v in rests.items() if empty(v)]
        if gaps:
            return f"evidence it rests on is empty: {', '.join(str(g) for g in iterate(gaps))}"
        return None
    if r.status is Status.FAIL:
        return "it records no observed violation" if empty(r.evidence.get("violation")) else None
    if not r.reason.strip():
        return "it gives no reason naming what is missing"
    return None


def enforce(r: Result, id_: str) -> Result:
    """`r` itself when it has the verdict shape, else a new Result: PENDING naming what it
    lacked (a PASS or FAIL withheld), or its status with the reason naming the problem."""
    if r.id != id_:
        raise ValueError(f"the judge of {id_} returned a result for {r.id}")
    problem = shape_problem(r)
    if problem is None:
        return r
    if r.status in (Status.PASS, Status.FAIL):
        out = Result(
            id_,
            Status.PENDING,
            f"{r.status} withheld: {problem}; {r.reason}",
            {**r.evidence, "withheld": str(r.status)},
            r.reproduction,
            list(r.limitations),
            count=r.count,
        )
        return out
    return replace(r, reason=f"unresolved ({problem})")


def judge(id_: str, declaration: Declaration) -> Callable[[Callable[P, Result]], Callable[P, Result]]:
    """Register a judge of assertion `id_`: its results are held to the verdict shape, and
    it carries the assertion's registry entry (`declaration`, naming it as the judge)."""

    def wrap(fn: Callable[P, Result]) -> Callable[P, Result]:
        @functools.wraps(fn)
        def judged(*args: P.args, **kwargs: P.kwargs) -> Result:
            return enforce(fn(*args, **kwargs), id_)

        judged.entry = declaration.entry(id_, f"{fn.__module__}:{fn.__name__}")  # type: ignore[attr-defined]
        return judged

    return wrap


def entry_of(fn: Callable[..., object]) -> Entry | None:
    """The registry entry a function was registered with by `@judge`, or None."""
    value = getattr(fn, "entry", None)
    return value if isinstance(value, Entry) else None


def entries_of(judges: Mapping[str, Callable[..., object]]) -> tuple[Entry, ...]:
    """The registry entries of a gate module's `JUDGES` table, in its order."""
    out = []
    for id_, fn in judges.items():
        found = entry_of(fn)
        if found is None or found.id != id_:
            raise ValueError(f"JUDGES[{id_!r}] is not a judge registered for {id_}")
        out.append(found)
    return tuple(out)
