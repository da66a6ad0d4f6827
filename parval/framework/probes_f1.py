"""F1 on the flagged runtime: capacity-one pool and calibration, the forced FIFO order at
every tested count, the request-only queue, and overdue fail-fast (F1.fifo, F1.cap1_fifo,
F1.overdue; first-wave publication evidence goes to F2.first_publish)."""

from __future__ import annotations

import statistics
import time

import anyio

from parval.framework.checks import Verdict
from parval.framework.context import Context
from parval.framework.preconditions import BULK_UNLOAD, COUNTERS, LOADED, route_absent
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import (
    all_ok,
    enqueue,
    no_overtaking,
    occupy,
    outputs_match,
    reset,
    stagger_manager,
    timing,
    trace_lines,
    unloaded_ids,
)
from parval.framework.settings import Timing
from parval.status import Status

PROVISIONAL = Timing(service_s=1.0, load_s=5.0, teardown_s=1.0)


def tested_counts(ctx: Context) -> list[int]:
    """Plan counts the advertised capacity allows (capacity 1 leaves only count 1)."""
    cap = ctx.capacity or 1
    return [n for n in ctx.plan.counts if n <= cap]


async def first_wave(rig: Rig, model: str, n: int) -> tuple[Verdict, list[Flight]]:
    """n+1 concurrent first requests on a fresh lazy model: one complete pool is published."""
    ctx = rig.ctx
    v = Verdict()
    offset = rig.server.stderr_size()
    t0 = time.monotonic()
    flights = [await rig.start_run(f"first{i}", model) for i in range(n + 1)]
    v.require(await rig.settle(flights, timing(rig).slack_s), "every first request completed")
    all_ok(v, flights, "concurrent first requests")
    window = [s for s in rig.poller.between(t0, time.monotonic()) if s.get(model)]
    caps = [s.capacity(model) for s in window]
    published = sorted({c for c in caps if c is not None})
    appearances = sum(1 for a, b in zip(caps, caps[1:], strict=False) if a is None and b is not None)
    v.require(len(published) <= 1 and appearances <= 1,
              f"max_parallel_slots appeared once with one value (seen {published}, {appearances} appearance(s))")
    loaded = [bool(s.loaded(model)) for s in window]
    flips = sum(1 for a, b in zip(loaded, loaded[1:], strict=False) if a != b)
    v.require(flips <= 1, f"loaded went false -> true once ({flips} change(s))")
    max_active = max((s.active(model) for s in window), default=0)
    v.require(max_active <= n, f"never more than {n} active slot(s) (max {max_active})")
    traces = [t for t in trace_lines(rig, offset) if t.get("model") == model]
    sessions = sorted({str(t.get("session")) for t in traces})
    if traces:
        v.require(len(sessions) <= n, f"{len(sessions)} distinct session(s) served {n} slot(s)")
    if rig.flagged and window:
        slots_field = {s.slots(model) for s in window}
        v.require(slots_field == {n}, f"/v1/models reports slots={n} (saw {sorted(map(str, slots_field))})")
        if published and ctx.capacity is None:
            ctx.capacity = published[0]
    ctx.log.append("first_wave", rig=rig.name, model=model, count=n, capacity=published,
                   max_active=max_active,
                   waiting_on_init=max((s.active(model) for s in window if not s.loaded(model)), default=0),
                   max_queued=max((s.queued(model) for s in window), default=0),
                   sessions=sessions, timeline=rig.timeline(flights))
    return v, flights


async def calibrate(rig: Rig, model: str) -> Timing:
    """Cold latency, warm latency and idle unload time measured on this candidate."""
    unloaded = await reset(rig, [model])
    cold = await rig.run("calibrate-cold", model)
    warm = [await rig.run(f"calibrate-warm{i}", model) for i in range(2)]
    td = await rig.call("calibrate-unload", "POST", "/v1/tasks/unload_models", {"model_ids": [model]})
    d = statistics.median(f.reply.elapsed_s for f in warm if f.reply is not None)
    cold_s = cold.reply.elapsed_s if cold.reply else d
    t = Timing(service_s=max(d, 0.001), load_s=max(0.0, cold_s - d),
               teardown_s=td.reply.elapsed_s if td.reply and not route_absent(td.status) else 0.0)
    # Without an unload the "cold" request ran on the first wave's pool: not a cold reference.
    rig.ctx.add_refs(model, "base", [rig.output(cold) if unloaded else None, *(rig.output(f) for f in warm)])
    rig.ctx.log.append("calibration", rig=rig.name, timing=t.to_json(),
                       statuses=[f.status for f in (cold, *warm, td)])
    if any(f.status != 200 for f in (cold, *warm)):
        raise RuntimeError("calibration requests failed: " + ", ".join(
            f"{f.label}={f.status} {f.message()[:120]}" for f in (cold, *warm) if f.status != 200))
    return t


async def discover(rig: Rig, model: str) -> None:
    """What the candidate publishes and answers, from the calibration start itself."""
    ctx = rig.ctx
    caps = ctx.caps
    samples = [x for s in rig.poller.samples if s.ok and (x := s.get(model)) is not None]
    if samples:
        caps.counters = any(x.active is not None and x.queued is not None for x in samples)
        caps.loaded = any(x.loaded is not None for x in samples)
    unload = next((f for f in rig.flights if f.label == "calibrate-unload"), None)
    if unload is not None and unload.status is not None:
        caps.bulk_status = unload.status
        caps.bulk_unload = not route_absent(unload.status)
    if ctx.ui:
        # An invalid slots value: a server with the route rejects it without a state change.
        reply = await rig.call("management-probe", "POST", "/v1/models/load",
                               ctx.registration(ctx.entry(model, slots=0)))
        caps.management_status = reply.status
        if reply.status is not None:
            caps.management = reply.status != 403 and not route_absent(reply.status)
    ctx.log.append("capabilities", rig=rig.name, **caps.to_json())


async def forced_order(rig: Rig, model: str, n: int) -> Verdict:
    """Older queued request, then an unload, then staggered later requests."""
    t = timing(rig)
    v = Verdict()
    occupants = await occupy(rig, model, n, v)
    older = await enqueue(rig, model, "older", 1, v)
    manager = await rig.bulk("unload", [model])
    await stagger_manager(rig, manager, v, "the unload")
    later: list[Flight] = []
    for i in range(max(2, n)):
        if v.blockers:
            later.append(await rig.start_run(f"later{i}", model))
            continue
        later.append(await enqueue(rig, model, f"later{i}", 2 + i, v))
        await anyio.sleep(t.gap_s)
    everything = [*occupants, older, manager, *later]
    v.require(await rig.settle(everything, t.slack_s),
              "every request and the unload completed within bound (no starvation or deadlock)")
    if not v.blockers:
        all_ok(v, [*occupants, older, *later], "requests")
        v.require(manager.status == 200 and model in unloaded_ids(manager), "the unload answered 200 listing the model")
        v.require(older.t_done <= manager.t_done + t.tol_s,
                  f"the older queued request finished before the unload "
                  f"({_ms(older.t_done - manager.t_done)} ms relative)")
        early = [f.label for f in later if f.t_done < manager.t_done + t.tol_s]
        v.require(not early, "later requests ran only after the unload"
                  + (f" (barged: {', '.join(early)})" if early else ""))
        no_overtaking(v, [*occupants, older, *later], t.tol_s, "requests in enqueue order")
        outputs_match(rig, v, "base", [*occupants, older, *later], "all")
    v.require(await rig.drained([model], t.slack_s), "counters drained afterwards")
    rig.ctx.log.append("forced_order", rig=rig.name, model=model, count=n,
                       timeline=rig.timeline(everything))
    return v


async def request_only_queue(rig: Rig, model: str, n: int) -> Verdict:
    """n staggered occupants, then n+1 requests queued one by one: FIFO admission."""
    t = timing(rig)
    v = Verdict()
    await reset(rig, [model])
    await rig.run("warm", model)
    base = rig.ctx.base_request()
    marked = "seed" in base  # only vary the seed when the model already takes one
    offset = rig.server.stderr_size()
    # Occupants a stagger apart free their slots a stagger apart; the whole enqueue phase
    # must fit before the first of them finishes.
    stagger = min(t.gap_s, 0.5 * t.service_s / n)
    occupants = await occupy(rig, model, n, v, stagger_s=stagger)
    queued: list[Flight] = []
    for i in range(n + 1):
        request = {**base, "seed": 7100 + i} if marked else None
        queued.append(await enqueue(rig, model, f"queued{i}", i + 1, v, request=request))
    v.require(await rig.settle([*occupants, *queued], t.slack_s), "the queue drained within bound")
    all_ok(v, [*occupants, *queued], "queued requests")
    traces = [str(x.get("seed")) for x in trace_lines(rig, offset) if x.get("model") == model]
    order = [s for s in traces if s.startswith("71") and len(s) == 4]
    expected = [str(7100 + i) for i in range(n + 1)]
    if marked and sorted(order) == sorted(expected):
        v.require(order == expected, f"observer trace shows admission in enqueue order ({order})")
    elif stagger < 0.025:
        v.pend(f"no observer trace and slots free only {stagger * 1000:.0f} ms apart: completion "
               "order cannot show admission order (use a validation build or a longer request)")
    else:
        # Without a trace: staggered slots free a stagger apart, so order shows in completions.
        no_overtaking(v, [*occupants, *queued], stagger / 2, "queued requests")
    v.require(await rig.drained([model], t.slack_s), "counters drained afterwards")
    rig.ctx.log.append("request_only_queue", rig=rig.name, model=model, count=n, trace_order=order,
                       timeline=rig.timeline([*occupants, *queued]))
    return v


# -- rigs ------------------------------------------------------------------------------------

async def cap1_probe(ctx: Context) -> None:
    """Capacity one (slots omitted, flagged): first pool, calibration, forced order."""
    model = ctx.model_id
    ctx.timing = PROVISIONAL
    spec = ctx.launch_spec([ctx.entry()], flagged=True)
    async with open_rig(ctx, "f1-cap1", spec, [model]) as rig:
        wave, first = await first_wave(rig, model, 1)
        ctx.timing = await calibrate(rig, model)
        await discover(rig, model)
        if not ctx.unmet("F2.first_publish", "first_publish@1", COUNTERS, LOADED):
            outputs_match(rig, wave, "base", first, "first-wave")
            ctx.findings.judge("F2.first_publish", "first_publish@1", wave)
        if not ctx.unmet("F1.cap1_fifo", "cap1_pool", COUNTERS, LOADED):
            pool = Verdict()
            pool.require(ctx.capacity is not None and ctx.capacity >= 1,
                         f"a capacity was published (max_parallel_slots={ctx.capacity})")
            pool.problems.extend(wave.problems)
            pool.passed.extend(wave.passed)
            ctx.findings.judge("F1.cap1_fifo", "cap1_pool", pool, capacity=ctx.capacity)
        else:
            ctx.capacity = None
        if (short := ctx.timing.too_short(ctx.options.min_service_ms)) is not None:
            ctx.findings.add("F1.cap1_fifo", "forced_order@1", Status.PENDING, short)
            return
        if ctx.unmet("F1.cap1_fifo", "forced_order@1", COUNTERS, BULK_UNLOAD):
            return
        v = await forced_order(rig, model, 1)
        ctx.findings.judge("F1.cap1_fifo", "forced_order@1", v)
        if not [n for n in tested_counts(ctx) if n >= 2]:
            ctx.findings.judge("F1.fifo", "forced_order@1", v)
            q = await request_only_queue(rig, model, 1)
            ctx.findings.judge("F1.fifo", "request_only_queue@1", q)
            ctx.findings.add("F1.fifo", "multi_slot", Status.PENDING,
                             f"capacity {ctx.capacity}: spare-slot FIFO needs a model with capacity >= 2 "
                             "(slot-validation fixture build)")


async def fifo_probe(ctx: Context) -> None:
    """At every tested count >= 2: first pool, forced order and request-only queue."""
    counts = [n for n in tested_counts(ctx) if n >= 2]
    model = ctx.model_id
    for n in counts:
        spec = ctx.launch_spec([ctx.entry(slots=n)], flagged=True)
        async with open_rig(ctx, f"f1-fifo-{n}", spec, [model]) as rig:
            wave, first = await first_wave(rig, model, n)
            outputs_match(rig, wave, "base", first, "first-wave")
            ctx.findings.judge("F2.first_publish", f"first_publish@{n}", wave)
            if (short := timing(rig).too_short(ctx.options.min_service_ms)) is not None:
                ctx.findings.add("F1.fifo", f"forced_order@{n}", Status.PENDING, short)
                continue
            ctx.findings.judge("F1.fifo", f"forced_order@{n}", await forced_order(rig, model, n))
            ctx.findings.judge("F1.fifo", f"request_only_queue@{n}",
                               await request_only_queue(rig, model, n))
    skipped = [n for n in ctx.plan.counts if n not in tested_counts(ctx)]
    if skipped:
        ctx.notes.append(f"plan counts {skipped} exceed the advertised capacity {ctx.capacity}; "
                         "they are exercised as unsupported counts (F1.unsupported)")


async def overdue_probe(ctx: Context) -> None:
    """Overdue work fails fast even with spare slots or waiting managers; a healthy slot
    permits bounded waiting."""
    t = ctx.timing
    assert t is not None
    if (short := t.too_short(ctx.options.min_service_ms)) is not None:
        ctx.findings.add("F1.overdue", "overdue", Status.PENDING, short)
        return
    n = max(tested_counts(ctx))
    model = ctx.model_id
    spec = ctx.launch_spec([ctx.entry(slots=n)], flagged=True)
    async with open_rig(ctx, f"f1-overdue-{n}", spec, [model]) as rig:
        await rig.run("warm", model)
        ctx.findings.judge("F1.overdue", f"full_pool_manager@{n}",
                           await overdue_case(rig, model, n, occupied=n, managers=1))
        ctx.findings.judge("F1.overdue", f"two_managers@{n}",
                           await overdue_case(rig, model, n, occupied=n, managers=2))
        if n >= 2:
            ctx.findings.judge("F1.overdue", f"spare_slots_manager@{n}",
                               await overdue_case(rig, model, n, occupied=n - 1, managers=1))
            ctx.findings.judge("F1.overdue", f"healthy_plus_overdue@{n}",
                               await healthy_plus_overdue(rig, model, n))
        else:
            ctx.findings.add("F1.overdue", "spare_and_healthy_slots", Status.PENDING,
                             f"capacity {ctx.capacity}: spare-slot and healthy-plus-overdue cases need "
                             "a model with capacity >= 2 (slot-validation fixture build)")


async def overdue_case(rig: Rig, model: str, n: int, *, occupied: int, managers: int) -> Verdict:
    t = timing(rig)
    v = Verdict()
    probe_ms = t.overdue_ms
    # Occupants admitted to a cold model hold leases through the load as well, which leaves
    # the load plus a service of runway for the managers and the probe.
    await reset(rig, [model])
    occupants = await occupy(rig, model, occupied, v, loaded=False)
    await anyio.sleep(probe_ms / 1000 + t.gap_s)  # every occupied slot is now overdue for the probe
    mgrs = [await rig.bulk(f"unload{i}", [model]) for i in range(managers)]
    for m in mgrs:
        await stagger_manager(rig, m, v, m.label)
    probe = await rig.run("probe", model, busy_timeout_ms=probe_ms)
    everything = [*occupants, *mgrs, probe]
    v.require(await rig.settle(everything, t.slack_s), "everything completed within bound")
    msg = probe.message()
    lat_ms = probe.reply.elapsed_s * 1000 if probe.reply else None
    barged = probe.status == 200 and probe.t_done < min(m.t_done for m in mgrs)
    if v.blockers:
        pass
    elif barged:
        v.block("the probe took a spare slot ahead of the waiting manager, so the overdue rule "
                "was never reached (FIFO barging; judged by F1.fifo)")
    else:
        v.require(probe.status == 503 and "all active slots exceeded busy_timeout_ms" in msg,
                  f"probe rejected 503 'all active slots exceeded busy_timeout_ms' (got {probe.status}: {msg[:120]})")
        # The text is decisive: only the check before enqueueing produces it (a probe that
        # waited out its bound gets 'timed out waiting for a slot'); the latency bound only
        # allows for a loaded machine.
        v.require(lat_ms is not None and lat_ms < probe_ms + t.tol_s * 1000,
                  f"rejected in {lat_ms if lat_ms is None else round(lat_ms, 1)} ms against its "
                  f"{probe_ms} ms bound (fail-fast before enqueueing)")
        all_ok(v, occupants, "occupants")
    v.require(await rig.drained([model], t.slack_s), "counters drained afterwards")
    rig.ctx.log.append("overdue_case", rig=rig.name, count=n, occupied=occupied, managers=managers,
                       probe_ms=probe_ms, probe_latency_ms=lat_ms, message=msg[:200],
                       timeline=rig.timeline(everything))
    return v


async def healthy_plus_overdue(rig: Rig, model: str, n: int) -> Verdict:
    """One overdue slot and n-1 fresh ones: the probe must wait (bounded), not fail fast.

    Its bound is a third of a service: the fresh slots stay well inside it while the probe
    arrives, and the probe may time out or be served when the overdue slot frees."""
    t = timing(rig)
    v = Verdict()
    probe_ms = max(t.overdue_ms, int(t.service_s * 1000 / 3))
    await rig.run("warm", model)
    old = await occupy(rig, model, 1, v, label="overdue")
    await anyio.sleep(probe_ms / 1000 + 0.01)
    t_fresh = time.monotonic()
    fresh = [await rig.start_run(f"healthy{i}", model) for i in range(n - 1)]
    if await rig.wait(lambda s: s.active(model) >= n, t.service_s, after=t_fresh) is None:
        v.block("the overdue slot freed before the full pool could be observed")
    probe = await rig.run("probe", model, busy_timeout_ms=probe_ms)
    v.require(await rig.settle([*old, *fresh, probe], t.slack_s), "everything completed within bound")
    msg = probe.message()
    lat_ms = probe.reply.elapsed_s * 1000 if probe.reply else 0.0
    if not v.blockers:
        served = probe.status == 200
        v.require(served or (probe.status == 503 and "timed out waiting for a slot" in msg),
                  f"probe waited: served or 503 'timed out waiting for a slot', never the fail-fast "
                  f"rejection (got {probe.status}: {msg[:120]})")
        v.require(served or lat_ms >= 0.9 * probe_ms, f"it waited {lat_ms:.0f} ms of its {probe_ms} ms bound")
    v.require(await rig.drained([model], t.slack_s), "counters drained afterwards")
    rig.ctx.log.append("healthy_plus_overdue", rig=rig.name, count=n, probe_ms=probe_ms,
                       probe_latency_ms=round(lat_ms, 2), message=msg[:200])
    return v


def _ms(seconds: float) -> int:
    return int(seconds * 1000) if seconds not in (float("inf"), float("-inf")) else 10**9
