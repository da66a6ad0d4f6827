"""Judges of the F1.timeouts observations (parval.framework.probes_timeouts): a bounded
waiter gives up after its bound with the timeout text, an unbounded one waits, a targeted
manager times out and wakes the request behind it, bulk unload ignores the ceiling. Pure
functions of the recorded facts."""

from __future__ import annotations

from parval.framework.checks import Verdict
from parval.framework.facts import INF, Facts, FlightFact, flight, named, timing_of
from parval.framework.observed import STALLED, all_ok, unloaded_ids, waits
from parval.framework.observed import judge as register


def bounded(v: Verdict, probe: FlightFact, bound_ms: int, text: str, tol_s: float) -> None:
    """Rejected 503 with `text` after waiting out (about) its bound, not at once, not late."""
    msg = probe.message
    v.require(probe.status == 503 and text in msg, f"503 '{text}' (got {probe.status}: {msg[:120]})")
    lat = probe.elapsed_s or 0.0
    v.require(
        0.9 * bound_ms / 1000 <= lat < bound_ms / 1000 + tol_s + 0.05,
        f"gave up after {lat * 1000:.0f} ms for a {bound_ms} ms bound",
    )


@register("timeouts.case")
def case(f: Facts) -> Verdict:
    """A probe behind fresh occupants: with a bound (`expect` text) it gives up after the
    bound; unbounded (`expect` None) it waits and is served. On the flagged runtime the
    queue's counters drain afterwards (a waiter that gave up leaves the accounting)."""
    t = timing_of(f)
    v = Verdict()
    waits(v, f)
    occupants = named(f, *f["occupants"])
    probe = flight(f, str(f["probe"]))
    expect = f.get("expect")
    v.require(bool(f["settled"]), "occupants completed")
    if not v.blockers:
        all_ok(v, occupants, "occupants")
        if expect is None:
            v.require(probe.status == 200, f"unbounded probe completed 200 (got {probe.status})")
            lat = probe.elapsed_s or 0.0
            v.require(lat >= 0.8 * t.service_s, f"it waited for a slot ({lat * 1000:.0f} ms)")
        else:
            bounded(v, probe, int(f["bound_ms"]), str(expect), t.tol_s)
        if f.get("flagged"):
            v.require(
                bool(f.get("drained")), "counters drained afterwards (no timed-out request stays counted as queued)"
            )
    return v


def _behind(v: Verdict, f: Facts) -> None:
    """How the request sent behind the waiting manager (spare slot free) was first seen:
    queued is the forced order; taking the spare slot is barging while the manager still
    waits, or a stalled registry when the manager had already given up."""
    seen = f.get("behind")
    if not seen or int(seen["queued"]) >= 1:
        return
    if not seen["manager_finished"]:
        v.block(
            "the request behind the manager took the spare slot instead of queueing (FIFO barging, judged by F1.fifo)"
        )
    else:
        v.block(
            STALLED.format(what="the targeted unload") + " (the request reached the "
            "scheduler only after the manager gave up)"
        )


@register("timeouts.manager_timeout")
def manager_timeout(f: Facts) -> Verdict:
    """A targeted unload behind occupants gives up after the ceiling with the timeout text,
    does nothing (the model stays loaded), and its giving up wakes the request queued
    behind it before the occupants finish."""
    t = timing_of(f)
    v = Verdict()
    waits(v, f)
    _behind(v, f)
    occupants = named(f, *f["occupants"])
    manager = flight(f, "unload")
    later = flight(f, str(f["later"])) if f.get("later") else None
    v.require(bool(f["settled"]), "everything completed within bound")
    if not v.blockers:
        bounded(v, manager, int(f["bound_ms"]), str(f["expect"]), t.tol_s)
        all_ok(v, [*occupants, *([later] if later else [])], "requests")
        v.require(
            bool(f["end_sampled"]) and f.get("end_loaded") is not False,
            "the model stayed loaded (the timed-out unload did nothing)",
        )
        if later is not None:
            woke = f.get("woke_t")
            first_done = f.get("occupants_first_done")
            done_first = INF if first_done is None else float(first_done)
            v.require(
                woke is not None and float(woke) < done_first,
                "the manager giving up woke the request queued behind it (it took the spare "
                "slot before the occupants finished)",
            )
    return v


@register("timeouts.bulk_unbounded")
def bulk_unbounded(f: Facts) -> Verdict:
    """Bulk unload behind occupants waits for them, beyond the model's ceiling, and
    unloads the model (bulk waits are unbounded)."""
    v = Verdict()
    waits(v, f)
    bulk = flight(f, "bulk-unload")
    model = str(f["model"])
    ceiling = int(f["bound_ms"])
    v.require(bool(f["settled"]), "everything completed within bound")
    if not v.blockers:
        lat = bulk.elapsed_s or 0.0
        v.require(
            bulk.status == 200 and model in unloaded_ids(bulk),
            f"bulk unload answered 200 listing the model (got {bulk.status})",
        )
        v.require(
            lat * 1000 > ceiling,
            f"it waited {lat * 1000:.0f} ms, beyond the {ceiling} ms ceiling (bulk waits are unbounded)",
        )
    return v
