"""Probes record, judges decide: what the framework judges of every group share.

A probe drives the server and writes down what it saw (an `observation` event): every
request's send and completion times, status, error text and output hash, the status
samples and observer-trace lines of the window, whether bounded waits saw what they waited
for, the measured timing and the references the outputs are compared with. A judge (a pure
function in the judges_f1 ... judges_f5 module of the assertion group it judges, listed in
that module's `JUDGES` table and assembled by parval.framework.judges) turns those facts
into a `Verdict`, at run time and again in `parval report --rejudge`, so a fix to a judge
applies to an old record.

This module and the `judges*` modules import nothing that talks to a server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from parval.framework.checks import Verdict
from parval.framework.facts import INF, Facts, FlightFact, Stagger, flights, named, stalled, timing_of

Judge = Callable[[Facts], Verdict]


# -- pure building blocks of judges ----------------------------------------------------------

STALLED = (
    "status reads stalled while {what} waited (registry lock held across a management "
    "wait; judged by F5.no_convoy), so the forced order could not be observed"
)


def margin_s(facts: Facts) -> float:
    """How far apart two client-observed completions may land in either order when a
    correct server orders them strictly: half a request, measured in this observation (the
    quickest successful request it holds, which ran under the same load) or, when that is
    shorter, half the calibrated request. A busy machine stretches both."""
    t = timing_of(facts)
    quick = [x.elapsed_s for x in flights(facts) if x.output is not None and x.elapsed_s is not None]
    return max(t.tol_s, 0.5 * min(quick)) if quick else t.tol_s


def waits(v: Verdict, facts: Facts, *, managers: tuple[str, ...] = ()) -> None:
    """The waits that force the situation: the probe must have recorded them, a bounded
    wait that never saw its state means the situation was not forced (BLOCKED, tried again).
    Each manager in `managers` must have been staggered behind older work: one that had
    already finished is a violation only when that older work was still running when it
    answered (else not forced); a stalled registry blocks. With a wait unseen the older
    work was not shown queued ahead of the manager, so its order is not judged."""
    recorded = facts["waits"]
    if not recorded:
        raise KeyError("observation records no bounded wait (the forced situation is unknown)")
    unseen = [w for w in recorded if not w["seen"]]
    for w in unseen:
        v.not_forced(str(w.get("unseen") or f"never observed {w['what']}"))
    staggers = {str(s["manager"]): s for s in facts["staggers"]} if managers else {}
    for label in managers:
        s = staggers[label]  # KeyError: the stagger was not recorded
        if s.get("skipped") or unseen:
            continue
        if not s["still_waiting"]:
            _finished_early(v, facts, s)
        elif stalled(s):
            v.block(STALLED.format(what=s["what"]))
        else:
            v.require(True, f"{s['what']} was still waiting for older work after the stagger")


def _finished_early(v: Verdict, facts: Facts, s: Stagger) -> None:
    """A manager seen finished after its stagger: did it skip older work still running?"""
    manager = named(facts, str(s["manager"]))[0]
    behind = named(facts, *s["behind"])
    if not behind:
        raise KeyError("the stagger names no older work the manager waited behind")
    last = max(x.t_done for x in behind)
    if manager.t_done < last - margin_s(facts):
        v.require(
            False,
            f"{s['what']} answered {ms(last - manager.t_done)} ms before the older work it had to wait for finished",
        )
    else:
        v.not_forced(f"the older work finished before {s['what']} could be seen waiting behind it")


def all_ok(v: Verdict, items: Iterable[FlightFact], what: str) -> bool:
    """Every one of `items` answered 200; no item at all is no evidence (PENDING)."""
    items = list(items)
    if not items:
        v.pend(f"no {what} were recorded")
        return False
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
    unloaded = body.get("unloaded") if isinstance(body, dict) else None
    if isinstance(unloaded, list):
        return [str(x) for x in unloaded]
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
