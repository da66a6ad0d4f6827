"""Probes record, judges decide: the registry of pure judges and what they share.

A probe drives the server and writes down what it saw (an `observation` event): every
request's send and completion times, status, error text and output hash, the status
samples and observer-trace lines of the window, whether bounded waits saw what they waited
for, the measured timing and the references the outputs are compared with. A judge (a pure
function registered here under a key) turns those facts into a `Verdict`, at run time and
again in `parval report --rejudge`, so a fix to a judge applies to an old record.

This module and the `judges_*` modules import nothing that talks to a server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from parval.framework.checks import Verdict
from parval.framework.facts import INF, Facts, FlightFact, stalled
from parval.framework.preconditions import Capabilities, first_missing
from parval.status import Status

Judge = Callable[[Facts], Verdict]
JUDGES: dict[str, Judge] = {}


def judge(key: str) -> Callable[[Judge], Judge]:
    """Register a pure judge of one kind of observation under `key`."""

    def register(fn: Judge) -> Judge:
        if key in JUDGES and JUDGES[key] is not fn:
            raise ValueError(f"judge {key} registered twice")
        JUDGES[key] = fn
        return fn

    return register


def run_judge(key: str, facts: Facts) -> Verdict:
    fn = JUDGES.get(key)
    if fn is None:
        raise KeyError(f"no framework judge named {key!r} (recorded by another parval version?)")
    return fn(facts)


# -- pure building blocks of judges ----------------------------------------------------------

STALLED = (
    "status reads stalled while {what} waited (registry lock held across a management "
    "wait; judged by F5.no_convoy), so the forced order could not be observed"
)


def waits(v: Verdict, facts: Facts) -> None:
    """Bounded waits that never saw their state block the judgement; a manager that did
    not wait behind older work is a violation; a stalled registry blocks."""
    for w in facts.get("waits", []):
        if not w["seen"]:
            v.block(str(w.get("unseen") or f"never observed {w['what']}"))
    for s in facts.get("staggers", []):
        if s.get("skipped"):
            continue
        v.require(bool(s["still_waiting"]), f"{s['what']} was still waiting for older work after the stagger")
        if stalled(s):
            v.block(STALLED.format(what=s["what"]))


def all_ok(v: Verdict, items: Iterable[FlightFact], what: str) -> bool:
    bad = [f"{f.label}={f.status}" for f in items if f.status != 200]
    return v.require(not bad, f"{what} answered 200" + (f" (got {', '.join(bad)})" if bad else ""))


def no_overtaking(v: Verdict, ordered: list[FlightFact], tol_s: float, what: str) -> None:
    """In FIFO admission an earlier-enqueued identical request finishes no later than a
    later one (within `tol_s`, under a service time)."""
    worst: tuple[float, str, str] | None = None
    for i, early in enumerate(ordered):
        for late in ordered[i + 1 :]:
            lead = early.t_done - late.t_done
            if lead > tol_s and (worst is None or lead > worst[0]):
                worst = (lead, early.label, late.label)
    if worst is None:
        v.require(True, f"{what}: no later request finished ahead of an earlier one")
    else:
        v.require(
            False,
            f"{what}: {worst[2]} finished {worst[0] * 1000:.0f} ms before the earlier-enqueued {worst[1]} (overtaken)",
        )


def unloaded_ids(f: FlightFact) -> list[str]:
    body = f.json()
    if isinstance(body, dict) and isinstance(body.get("unloaded"), list):
        return [str(x) for x in body["unloaded"]]
    return []


def reference(refs: dict[str, dict[str, list[str]]], model: str, tag: str, phase: str | None) -> tuple[str | None, str]:
    """The one reference output a flight of this registration and phase must equal, or
    None with why it cannot be judged (no reference, or an ambiguous one)."""
    phases = refs.get(f"{model}|{tag}", {})
    if not phases:
        return None, f"no serial reference was recorded for {model} ({tag})"
    if phase is None:
        # The history of the flight is not forced: only a registration whose cold and
        # warm outputs coincide has one reference for it.
        seen = set().union(*map(set, phases.values()))
        want = "any phase"
    else:
        seen = set(phases.get(phase, []))
        want = phase
    if len(seen) == 1:
        return next(iter(seen)), ""
    if not seen:
        return None, f"no {want} serial reference was recorded for {model} ({tag})"
    return None, (
        f"the {want} serial references of {model} ({tag}) differ ({len(seen)} outputs), "
        "so the equivalent single-slot history cannot be told"
    )


def outputs_match(
    v: Verdict, facts: Facts, tag: str, items: list[FlightFact], what: str, *, phase: str | None = None
) -> None:
    """Each successful flight equals its own registration's reference for `phase` (None:
    a history the probe did not force). A missing or ambiguous reference is not judged."""
    refs = facts.get("refs") or {}
    default_model = str(facts.get("model_id", ""))
    ok = [f for f in items if f.status == 200]
    if not ok:  # nothing compared is no evidence of exact outputs
        v.pend(f"{what}: no successful reply whose output could be compared")
        return
    wrong: list[str] = []
    unjudged: list[str] = []
    for f in ok:
        ref, why = reference(refs, f.model or default_model, tag, phase)
        if ref is None:
            unjudged.append(why)
        elif f.output != ref:
            wrong.append(f.label)
    for why in sorted(set(unjudged)):
        v.pend(f"{what} outputs not compared: {why}")
    if len(unjudged) == len(ok):
        return
    ref_what = f"'{tag}' {phase} reference" if phase else f"'{tag}' reference"
    v.require(
        not wrong,
        f"{what} outputs equal their registration's {ref_what}" + (f" (differ: {', '.join(wrong)})" if wrong else ""),
    )


def ms(seconds: float) -> int:
    return int(seconds * 1000) if seconds not in (INF, -INF) else 10**9


# -- judges of situations that were not forced -----------------------------------------------


@judge("given")
def given(facts: Facts) -> Verdict:
    """A sub-check that is not a judgement of server behaviour: skipped by the probes file,
    a probe that could not finish, a too-short request, a capacity the case needs, a
    platform reason."""
    v = Verdict()
    status = Status(facts["status"])
    text = str(facts["detail"])
    if status is Status.BLOCKED:
        v.block(text)
    elif status is Status.PENDING:
        v.pend(text)
    elif status is Status.NOT_APPLICABLE:
        v.not_applicable(text)
    else:
        raise ValueError(
            f"a given sub-check cannot be {status}: PASS, FAIL and UNSUPPORTED come from a judge over what was observed"
        )
    v.verbatim = text
    return v


@judge("precondition")
def precondition(facts: Facts) -> Verdict:
    """What the calibration start found missing, from the recorded capabilities."""
    v = Verdict()
    gap = first_missing(Capabilities.from_json(facts["capabilities"]), tuple(facts["needs"]))
    if gap is None:
        v.require(True, "preconditions met: " + ", ".join(facts["needs"]))
    elif gap[0] is Status.UNSUPPORTED:
        v.unsupported(gap[1])
        v.verbatim = gap[1]
    else:
        v.pend(gap[1])
        v.verbatim = gap[1]
    return v
