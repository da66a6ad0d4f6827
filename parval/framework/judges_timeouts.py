"""Judges of the F1.timeouts observations (parval.framework.probes_timeouts): a bounded
waiter gives up after its bound with the timeout text, an unbounded one waits, a targeted
manager times out and wakes the request behind it, bulk unload ignores the ceiling. Pure
functions of the recorded facts.

A duration is judged only against the bound the server was told, and only where the
observation leaves no doubt: a waiter that gave up before its bound, one served after the
slots it waited for stayed busy a margin past its bound, one that timed out although a slot
freed a margin before its bound ran out. A busy machine that delivered a reply late, or
let the occupants finish early, leaves the situation not forced (BLOCKED, tried again).
"""

from __future__ import annotations

from parval.framework.checks import Verdict
from parval.framework.facts import Facts, FlightFact, flight, listed, samples
from parval.framework.observed import all_ok, margin_s, ms, unloaded_ids, waits
from parval.framework.observed import judge as register

# Texts of a probe that met the fail-fast path instead (its occupant was already older than
# the bound when it arrived): that case is F1.overdue's / the legacy wedged check's.
FAIL_FAST = ("exceeded busy_timeout_ms", "likely wedged")


def bounded(v: Verdict, probe: FlightFact, bound_ms: int, text: str, held: list[FlightFact], m: float) -> bool:
    """A waiter with a bound behind the work `held`: rejected 503 with `text` no earlier than
    its bound; served only if the slot freed before its bound ran out. True when it gave up."""
    bound_s = bound_ms / 1000
    msg = probe.message
    freed = min(x.t_done for x in held)  # when the client saw the first held slot free
    # The client's own latency, else the recorded send and reply times (never 0: a reply
    # without its latency is not one that came at once).
    lat = probe.elapsed_s if probe.elapsed_s is not None else probe.t_done - probe.t_send
    if probe.status == 503 and text in msg:
        v.require(lat >= 0.9 * bound_s, f"gave up after {lat * 1000:.0f} ms, not before its {bound_ms} ms bound")
        v.require(
            freed + m >= probe.t_send + bound_s,
            f"timed out although a slot freed {ms(probe.t_send + bound_s - freed)} ms before its bound ran out"
            if freed + m < probe.t_send + bound_s
            else "no slot freed before its bound ran out",
        )
        return True
    if probe.status == 200:
        if probe.t_done >= freed and freed >= probe.t_send + bound_s + m:
            v.require(
                False,
                f"served {ms(probe.t_done - probe.t_send)} ms after it was sent: it waited "
                f"past its {bound_ms} ms bound while the slot stayed busy",
            )
        else:
            v.not_forced("the held slot freed before the waiter's bound ran out, so it was served")
        return False
    if probe.status == 503 and any(x in msg for x in FAIL_FAST):
        v.not_forced("the occupant had already run past the bound when the waiter arrived (the fail-fast path)")
        return False
    v.require(False, f"503 '{text}' after its bound (got {probe.status}: {msg[:120]})")
    return False


def case(f: Facts) -> Verdict:
    """A probe behind fresh occupants: with a bound (`expect` text) it gives up after the
    bound; unbounded (`expect` None) it waits and is served once a slot frees. On the
    flagged runtime the queue's counters drain afterwards (a waiter that gave up leaves the
    accounting)."""
    v = Verdict()
    waits(v, f)
    occupants = listed(f, "occupants")
    probe = flight(f, str(f["probe"]))
    expect = f.get("expect")
    m = margin_s(f)
    v.require(bool(f["settled"]), "occupants completed")
    if not v.blockers:
        all_ok(v, occupants, "occupants")
        if expect is None:
            v.require(probe.status == 200, f"unbounded probe completed 200 (got {probe.status}: {probe.message[:120]})")
            freed = min(x.t_done for x in occupants)
            early = probe.t_done < freed - m
            held = any((s := x.latest_run_start) is not None and s < probe.t_done - m for x in occupants)
            if early and not f.get("flagged") and not held:
                # No counters on this path: only an occupant's own run shows it held the slot.
                v.not_forced(
                    "no occupant's own run (timing.wall_ms) is shown to have begun before the probe was served: "
                    "it may not yet have held the slot"
                )
                return v
            v.require(
                not early,
                "it was served only once a held slot freed"
                + (f" (served {ms(freed - probe.t_done)} ms before)" if early else ""),
            )
        else:
            bounded(v, probe, int(f["bound_ms"]), str(expect), occupants, m)
        if f.get("flagged"):
            v.require(
                bool(f.get("drained")), "counters drained afterwards (no timed-out request stays counted as queued)"
            )
    return v


register("timeouts.case", case)


def _behind(v: Verdict, f: Facts) -> None:
    """How the request sent behind the waiting manager (spare slot free) was first seen:
    queued is the forced order; taking the spare slot while the manager still waits is
    barging; first seen only after the manager gave up, whether it queued is unseen."""
    seen = f.get("behind")
    if not seen or int(seen["queued"]) >= 1:
        return
    if not seen["manager_finished"]:
        v.block(
            "the request behind the manager took the spare slot instead of queueing (FIFO barging, judged by F1.fifo)"
        )
    else:
        v.not_forced("the request behind the manager was first seen only after the manager gave up")


def _woke(v: Verdict, f: Facts, manager: FlightFact, n: int, first_done: float, m: float) -> None:
    """After the manager gave up, the request queued behind it takes the spare slot at once:
    a status sample showing it still queued with a slot free is the violation."""
    if manager.t_done + m >= first_done:
        v.not_forced("the occupants finished about when the unload gave up, so waking the request behind it is unseen")
        return
    rows = samples(f, "after_giveup")
    # Stuck needs both counters published: a sample missing one shows nothing about a free slot.
    stuck = [
        s
        for s in rows
        if manager.t_done + m < s.t < first_done - m
        and s.queued is not None
        and s.active is not None
        and s.queued >= 1
        and s.active < n
    ]
    woke = [s for s in rows if s.t < first_done and (s.active or 0) >= n]
    if stuck:
        v.require(
            False,
            f"{ms(stuck[0].t - manager.t_done)} ms after the unload gave up the request behind it still "
            "waited with a slot free",
        )
    elif woke:
        v.require(True, "the manager giving up woke the request queued behind it (it took the spare slot)")
    else:
        v.not_forced("no status sample showed the request behind the unload before the occupants finished")


def manager_timeout(f: Facts) -> Verdict:
    """A targeted unload behind occupants gives up after the ceiling with the timeout text,
    does nothing (the model stays loaded), and its giving up wakes the request queued
    behind it before the occupants finish."""
    v = Verdict()
    waits(v, f)
    _behind(v, f)
    occupants = listed(f, "occupants")
    manager = flight(f, "unload")
    later = flight(f, str(f["later"])) if f["later"] else None
    m = margin_s(f)
    n = int(f["count"])
    v.require(bool(f["settled"]), "everything completed within bound")
    if not v.blockers:
        # A manager waits for every held slot: the last one to free is what it waited for.
        last = max(x.t_done for x in occupants)
        gave_up = bounded(v, manager, int(f["bound_ms"]), str(f["expect"]), [flight_at(last, occupants)], m)
        all_ok(v, [*occupants, *([later] if later else [])], "requests")
        if gave_up:
            v.require(
                bool(f["end_sampled"]) and f["end_loaded"] is not False,
                "the model stayed loaded (the timed-out unload did nothing)",
            )
            if later is not None:
                _woke(v, f, manager, n, min(x.t_done for x in occupants), m)
    return v


register("timeouts.manager_timeout", manager_timeout)


def flight_at(t_done: float, items: list[FlightFact]) -> FlightFact:
    return next(x for x in items if x.t_done == t_done)


def bulk_unbounded(f: Facts) -> Verdict:
    """Bulk unload behind occupants waits for them, beyond the model's ceiling, and
    unloads the model (bulk waits are unbounded)."""
    v = Verdict()
    waits(v, f)
    bulk = flight(f, "bulk-unload")
    occupants = listed(f, "occupants")
    model = str(f["model"])
    ceiling_s = int(f["bound_ms"]) / 1000
    m = margin_s(f)
    v.require(bool(f["settled"]), "everything completed within bound")
    if not v.blockers:
        all_ok(v, occupants, "occupants")
        v.require(
            bulk.status == 200 and model in unloaded_ids(bulk),
            f"bulk unload answered 200 listing the model (got {bulk.status}: {bulk.message[:120]})",
        )
        last = max(x.t_done for x in occupants)
        if bulk.t_done < last - m:
            v.require(False, f"it answered {ms(last - bulk.t_done)} ms before the work it had to wait for finished")
        elif last - bulk.t_send > ceiling_s + m:
            v.require(
                True,
                f"it waited {ms(bulk.t_done - bulk.t_send)} ms for the work ahead of it, beyond the "
                f"{ceiling_s * 1000:.0f} ms ceiling (bulk waits are unbounded)",
            )
        else:
            v.not_forced(
                "the work ahead of the bulk unload finished within the ceiling, so waiting beyond it is unseen"
            )
    return v


register("timeouts.bulk_unbounded", bulk_unbounded)
