"""Judges of the F1 observations (parval.framework.probes_f1): the first published pool,
the forced FIFO order, the request-only queue and overdue fail-fast. Pure functions of the
recorded facts."""

from __future__ import annotations

from parval.framework.checks import Verdict
from parval.framework.facts import Facts, flight, named, samples, timing_of
from parval.framework.facts import flights as all_flights
from parval.framework.observed import all_ok, ms, no_overtaking, outputs_match, unloaded_ids, waits
from parval.framework.observed import judge as register


def _pool(v: Verdict, f: Facts) -> None:
    """What one complete first pool must show: every first request completed, one capacity
    published once, loaded false -> true once, never more than n leases or sessions."""
    n = int(f["count"])
    v.require(bool(f["settled"]), "every first request completed")
    all_ok(v, all_flights(f), "concurrent first requests")
    rows = samples(f)
    caps = [s.capacity for s in rows]
    published = sorted({c for c in caps if c is not None})
    appearances = sum(1 for a, b in zip(caps, caps[1:], strict=False) if a is None and b is not None)
    v.require(
        len(published) <= 1 and appearances <= 1,
        f"max_parallel_slots appeared once with one value (seen {published}, {appearances} appearance(s))",
    )
    loaded = [bool(s.loaded) for s in rows]
    flips = sum(1 for a, b in zip(loaded, loaded[1:], strict=False) if a != b)
    v.require(flips <= 1, f"loaded went false -> true once ({flips} change(s))")
    max_active = max((s.active or 0 for s in rows), default=0)
    v.require(max_active <= n, f"never more than {n} active slot(s) (max {max_active})")
    if f.get("traced"):
        sessions = f.get("sessions") or []
        v.require(len(sessions) <= n, f"{len(sessions)} distinct session(s) served {n} slot(s)")
    if f.get("flagged") and rows:
        slots_field = {s.slots for s in rows}
        v.require(slots_field == {n}, f"/v1/models reports slots={n} (saw {sorted(map(str, slots_field))})")


def published_capacity(f: Facts) -> int | None:
    caps = sorted({s.capacity for s in samples(f) if s.capacity is not None})
    return caps[0] if caps else None


@register("f1.first_wave")
def first_wave(f: Facts) -> Verdict:
    """F2.first_publish: the pool above, and every output equals the registration's reference."""
    v = Verdict()
    _pool(v, f)
    outputs_match(v, f, "base", all_flights(f), "first-wave")
    return v


@register("f1.cap1_pool")
def cap1_pool(f: Facts) -> Verdict:
    """F1.cap1_fifo: a capacity-one model publishes a capacity; the pool's violations and
    output mismatches count, an uncompared output does not hold it open."""
    wave = first_wave(f)
    v = Verdict()
    cap = published_capacity(f) if f.get("flagged") else None
    v.require(cap is not None and cap >= 1, f"a capacity was published (max_parallel_slots={cap})")
    v.problems.extend(wave.problems)
    v.passed.extend(wave.passed)
    return v


@register("f1.forced_order")
def forced_order(f: Facts) -> Verdict:
    """Older queued request, then an unload, then later requests: the older one finishes
    before the unload, the later ones only after it, none overtakes an earlier one."""
    t = timing_of(f)
    v = Verdict()
    waits(v, f)
    occupants = named(f, *f["occupants"])
    later = named(f, *f["later"])
    older = flight(f, "older")
    manager = flight(f, "unload")
    model = str(f["model_id"])
    v.require(bool(f["settled"]), "every request and the unload completed within bound (no starvation or deadlock)")
    if not v.blockers:
        requests = [*occupants, older, *later]
        all_ok(v, requests, "requests")
        v.require(manager.status == 200 and model in unloaded_ids(manager), "the unload answered 200 listing the model")
        v.require(
            older.t_done <= manager.t_done + t.tol_s,
            f"the older queued request finished before the unload ({ms(older.t_done - manager.t_done)} ms relative)",
        )
        early = [x.label for x in later if x.t_done < manager.t_done + t.tol_s]
        v.require(
            not early, "later requests ran only after the unload" + (f" (barged: {', '.join(early)})" if early else "")
        )
        no_overtaking(v, requests, t.tol_s, "requests in enqueue order")
        outputs_match(v, f, "base", requests, "all")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


@register("f1.request_only_queue")
def request_only_queue(f: Facts) -> Verdict:
    """n+1 requests queued one by one behind staggered occupants are admitted in order:
    from the observer trace when there is one, else from completions a stagger apart."""
    v = Verdict()
    waits(v, f)
    n = int(f["count"])
    requests = named(f, *f["occupants"], *f["queued"])
    v.require(bool(f["settled"]), "the queue drained within bound")
    all_ok(v, requests, "queued requests")
    order = [s for s in f.get("trace_seeds") or [] if s.startswith("71") and len(s) == 4]
    expected = [str(7100 + i) for i in range(n + 1)]
    stagger = float(f["stagger_s"])
    if f["marked"] and sorted(order) == sorted(expected):
        v.require(order == expected, f"observer trace shows admission in enqueue order ({order})")
    elif stagger < 0.025:
        v.pend(
            f"no observer trace and slots free only {stagger * 1000:.0f} ms apart: completion "
            "order cannot show admission order (use a validation build or a longer request)"
        )
    else:
        # Without a trace: staggered slots free a stagger apart, so order shows in completions.
        no_overtaking(v, requests, stagger / 2, "queued requests")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


@register("f1.overdue_case")
def overdue_case(f: Facts) -> Verdict:
    """With every occupied slot overdue, a bounded probe is rejected at once with the
    fail-fast text, whatever managers wait or slots are spare."""
    t = timing_of(f)
    v = Verdict()
    waits(v, f)
    probe_ms = int(f["probe_ms"])
    probe = flight(f, "probe")
    mgrs = named(f, *f["manager_labels"])
    occupants = named(f, *f["occupants"])
    v.require(bool(f["settled"]), "everything completed within bound")
    msg = probe.message
    lat_ms = None if probe.elapsed_s is None else probe.elapsed_s * 1000
    barged = probe.status == 200 and probe.t_done < min(m.t_done for m in mgrs)
    if v.blockers:
        pass
    elif barged:
        v.block(
            "the probe took a spare slot ahead of the waiting manager, so the overdue rule "
            "was never reached (FIFO barging; judged by F1.fifo)"
        )
    else:
        v.require(
            probe.status == 503 and "all active slots exceeded busy_timeout_ms" in msg,
            f"probe rejected 503 'all active slots exceeded busy_timeout_ms' (got {probe.status}: {msg[:120]})",
        )
        # The text is decisive: only the check before enqueueing produces it (a probe that
        # waited out its bound gets 'timed out waiting for a slot'); the latency bound only
        # allows for a loaded machine.
        v.require(
            lat_ms is not None and lat_ms < probe_ms + t.tol_s * 1000,
            f"rejected in {lat_ms if lat_ms is None else round(lat_ms, 1)} ms against its "
            f"{probe_ms} ms bound (fail-fast before enqueueing)",
        )
        all_ok(v, occupants, "occupants")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


@register("f1.healthy_plus_overdue")
def healthy_plus_overdue(f: Facts) -> Verdict:
    """One overdue slot and fresh ones: the bounded probe waits (served, or 503 'timed out
    waiting for a slot' after its bound), never the fail-fast rejection."""
    v = Verdict()
    waits(v, f)
    probe_ms = int(f["probe_ms"])
    probe = flight(f, "probe")
    v.require(bool(f["settled"]), "everything completed within bound")
    msg = probe.message
    lat_ms = 0.0 if probe.elapsed_s is None else probe.elapsed_s * 1000
    if not v.blockers:
        served = probe.status == 200
        v.require(
            served or (probe.status == 503 and "timed out waiting for a slot" in msg),
            f"probe waited: served or 503 'timed out waiting for a slot', never the fail-fast "
            f"rejection (got {probe.status}: {msg[:120]})",
        )
        v.require(served or lat_ms >= 0.9 * probe_ms, f"it waited {lat_ms:.0f} ms of its {probe_ms} ms bound")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v
