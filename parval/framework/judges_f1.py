"""Judges of the F1 observations (parval.framework.probes_f1): the first published pool,
the forced FIFO order, the request-only queue and overdue fail-fast. Pure functions of the
recorded facts."""

from __future__ import annotations

from parval.framework.checks import Verdict
from parval.framework.facts import Facts, FlightFact, Sample, flight, listed, named, samples, timing_of
from parval.framework.observed import all_ok, margin_s, ms, no_overtaking, outputs_match, unloaded_ids, waits
from parval.framework.observed import judge as register


def first_labels(f: Facts) -> list[str]:
    """The n+1 concurrent first requests a first wave sends at count n."""
    return [f"first{i}" for i in range(int(f["count"]) + 1)]


def load_seen_in_progress(rows: list[Sample]) -> bool:
    """A status sample showed the first requests admitted before the pool was published."""
    for s in rows:
        if s.loaded:
            return False
        if (s.active or 0) >= 1 and s.loaded is False:
            return True
    return False


def _pool(v: Verdict, f: Facts) -> None:
    """What one complete first pool must show: every first request completed, the load seen
    in progress and all n slots active in it, one capacity published once, loaded false ->
    true once, never more than n leases or sessions."""
    n = int(f["count"])
    v.require(bool(f["settled"]), "every first request completed")
    all_ok(v, named(f, *first_labels(f)), "concurrent first requests")
    rows = samples(f)
    if not rows:
        raise KeyError("no status sample of the first wave was recorded")
    if not load_seen_in_progress(rows):
        v.not_forced("the first load was never seen in progress (no sample with a request active before publication)")
    max_active = max((s.active or 0 for s in rows), default=0)
    if max_active < n:
        v.not_forced(f"the status never showed the {n} slot(s) of the pool active at once (max {max_active})")
    else:
        v.require(True, f"all {n} slot(s) were seen active in the first wave")
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
    v.require(max_active <= n, f"never more than {n} active slot(s) (max {max_active})")
    if f.get("traced"):
        sessions = f.get("sessions") or []
        v.require(len(sessions) <= n, f"{len(sessions)} distinct session(s) served {n} slot(s)")
    if f.get("flagged"):
        slots_field = {s.slots for s in rows}
        v.require(slots_field == {n}, f"/v1/models reports slots={n} (saw {sorted(map(str, slots_field))})")


def published_capacity(f: Facts) -> int | None:
    caps = sorted({s.capacity for s in samples(f) if s.capacity is not None})
    return caps[0] if caps else None


def first_wave(f: Facts) -> Verdict:
    """F2.first_publish: the pool above, and every output equals the registration's reference."""
    v = Verdict()
    _pool(v, f)
    outputs_match(v, f, "base", named(f, *first_labels(f)), "first-wave")
    return v


register("f1.first_wave", first_wave)


def cap1_pool(f: Facts) -> Verdict:
    """F1.cap1_fifo: a capacity-one model publishes a capacity; the pool's violations and
    what kept it from being forced count, an uncompared output does not hold it open."""
    wave = first_wave(f)
    v = Verdict()
    cap = published_capacity(f) if f.get("flagged") else None
    v.require(cap is not None and cap >= 1, f"a capacity was published (max_parallel_slots={cap})")
    v.problems.extend(wave.problems)
    v.passed.extend(wave.passed)
    v.blockers.extend(wave.blockers)
    v.unforced.extend(wave.unforced)
    return v


register("f1.cap1_pool", cap1_pool)


def forced_order(f: Facts) -> Verdict:
    """Older queued work, then an unload, then later requests: everything queued before the
    unload finishes before it, the later ones only after it, none overtakes an earlier one."""
    v = Verdict()
    waits(v, f, managers=("unload",))
    occupants = listed(f, "occupants")
    later = listed(f, "later")
    older = flight(f, "older")
    manager = flight(f, "unload")
    model = str(f["model_id"])
    m = margin_s(f)
    v.require(bool(f["settled"]), "every request and the unload completed within bound (no starvation or deadlock)")
    if not v.blockers:
        requests = [*occupants, older, *later]
        all_ok(v, requests, "requests")
        v.require(manager.status == 200 and model in unloaded_ids(manager), "the unload answered 200 listing the model")
        before = [x.label for x in (*occupants, older) if x.t_done > manager.t_done + m]
        v.require(
            not before,
            "the work queued before the unload finished before it"
            + (f" (after it: {', '.join(before)}, {ms(older.t_done - manager.t_done)} ms)" if before else ""),
        )
        early = [x.label for x in later if x.t_done < manager.t_done - m]
        v.require(
            not early, "later requests ran only after the unload" + (f" (barged: {', '.join(early)})" if early else "")
        )
        no_overtaking(v, requests, m, "requests in enqueue order")
        outputs_match(v, f, "base", requests, "all")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


register("f1.forced_order", forced_order)


def request_only_queue(f: Facts) -> Verdict:
    """n occupants, then 2n requests queued one by one: admission follows enqueue order,
    from the observer trace when there is one, else from completions (the second n can only
    run a whole request after the first n, so one of them finishing ahead is barging)."""
    v = Verdict()
    waits(v, f)
    queued = listed(f, "queued")
    requests = [*listed(f, "occupants"), *queued]
    v.require(bool(f["settled"]), "the queue drained within bound")
    all_ok(v, requests, "queued requests")
    order = [s for s in f.get("trace_seeds") or [] if s.startswith("71") and len(s) == 4]
    expected = [str(7100 + i) for i in range(len(queued))]
    n = int(f["count"])
    if v.blockers:
        # The queue was not seen formed: requests that never waited were admitted as they
        # arrived, so neither the trace nor the completions show an enqueue order.
        pass
    elif f["marked"] and sorted(order) == sorted(expected):
        # Requests admitted together (one round of n) print their trace lines in either
        # order; a round's lines before the earlier round's is barging.
        rounds = [sorted(order[i : i + n]) for i in range(0, len(order), n)]
        want = [sorted(expected[i : i + n]) for i in range(0, len(expected), n)]
        v.require(rounds == want, f"observer trace shows admission in enqueue order, round by round ({order})")
    else:
        no_overtaking(v, requests, margin_s(f), "queued requests")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


register("f1.request_only_queue", request_only_queue)


def _occupied_throughout(probe: FlightFact, held: list[FlightFact], m: float) -> bool:
    """Every slot in `held` was still leased when the probe was answered (its client saw its
    own reply at least a margin after the probe's)."""
    return bool(held) and min(x.t_done for x in held) >= probe.t_done + m


def overdue_case(f: Facts) -> Verdict:
    """With every occupied slot overdue, a bounded probe is rejected at once with the
    fail-fast text, whatever managers wait or slots are spare."""
    v = Verdict()
    mgrs = listed(f, "manager_labels")
    waits(v, f, managers=tuple(x.label for x in mgrs))
    probe = flight(f, "probe")
    occupants = listed(f, "occupants")
    v.require(bool(f["settled"]), "everything completed within bound")
    msg = probe.message
    barged = probe.status == 200 and probe.t_done < min(x.t_done for x in mgrs)
    if v.blockers:
        pass
    elif barged:
        v.block(
            "the probe took a spare slot ahead of the waiting manager, so the overdue rule "
            "was never reached (FIFO barging; judged by F1.fifo)"
        )
    elif probe.status == 503 and "all active slots exceeded busy_timeout_ms" in msg:
        # The text is decisive: only the check before enqueueing produces it (a probe that
        # waited out its bound gets 'timed out waiting for a slot'). Its latency is not
        # judged: a busy machine may deliver the rejection late.
        v.require(True, "probe rejected 503 'all active slots exceeded busy_timeout_ms' before enqueueing")
        all_ok(v, occupants, "occupants")
    elif not _occupied_throughout(probe, occupants, timing_of(f).tol_s):
        v.not_forced("an occupant finished before the probe was answered, so not every slot was overdue throughout")
    else:
        v.require(
            False,
            f"probe rejected 503 'all active slots exceeded busy_timeout_ms' while every slot was held "
            f"(got {probe.status}: {msg[:120]})",
        )
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


register("f1.overdue_case", overdue_case)


def healthy_plus_overdue(f: Facts) -> Verdict:
    """One overdue slot and fresh ones: the bounded probe waits (served after a slot freed,
    or 503 'timed out waiting for a slot' after its bound), never the fail-fast rejection
    while a fresh slot is younger than the bound."""
    v = Verdict()
    waits(v, f)
    probe_ms = int(f["probe_ms"])
    probe = flight(f, "probe")
    held = listed(f, "overdue", "healthy")
    fresh = listed(f, "healthy")
    v.require(bool(f["settled"]), "everything completed within bound")
    msg = probe.message
    lat_ms = (probe.elapsed_s or 0.0) * 1000
    m = margin_s(f)
    if v.blockers:
        pass
    elif min(x.t_done for x in held) < probe.t_send + m:
        v.not_forced("a slot freed before the probe arrived, so it never met a full pool")
    elif probe.status == 503 and "exceeded busy_timeout_ms" in msg:
        youngest = max(x.t_send for x in fresh)
        if (probe.t_done - youngest) * 1000 < probe_ms:
            v.require(
                False, f"fail-fast rejection while a fresh slot was younger than its {probe_ms} ms bound: {msg[:120]}"
            )
        else:
            v.not_forced("the fresh slots were older than the probe's bound by the time it arrived")
    else:
        served = probe.status == 200
        v.require(
            served or (probe.status == 503 and "timed out waiting for a slot" in msg),
            f"probe waited: served or 503 'timed out waiting for a slot' (got {probe.status}: {msg[:120]})",
        )
        # A waiter gives up no earlier than its bound (the server counts from after the send).
        v.require(served or lat_ms >= 0.9 * probe_ms, f"it waited {lat_ms:.0f} ms of its {probe_ms} ms bound")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


register("f1.healthy_plus_overdue", healthy_plus_overdue)
