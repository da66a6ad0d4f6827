"""F1 on the flagged runtime: capacity-one pool and calibration, the forced FIFO order at
every tested count, the request-only queue, and overdue fail-fast (F1.fifo, F1.cap1_fifo,
F1.overdue; first-wave publication evidence goes to F2.first_publish). The probes record;
parval.framework.judges_f1 judges."""

from __future__ import annotations

import functools
import statistics
import time

import anyio

from parval.framework.context import Context
from parval.framework.facts import Facts, Obs
from parval.framework.preconditions import BULK_UNLOAD, COUNTERS, LOADED, route_absent
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import ATTEMPTS, attempts, enqueue, occupy, reset, stagger_manager, timing, trace_lines
from parval.framework.settings import Timing
from parval.status import Status

PROVISIONAL = Timing(service_s=1.0, load_s=5.0, teardown_s=1.0)


def tested_counts(ctx: Context) -> list[int]:
    """Plan counts the advertised capacity allows (capacity 1 leaves only count 1)."""
    cap = ctx.capacity or 1
    return [n for n in ctx.plan.counts if n <= cap]


async def first_wave(rig: Rig, model: str, n: int) -> tuple[Facts, list[Flight]]:
    """n+1 concurrent first requests on a fresh lazy model: one complete pool is published
    (judged by judges_f1.first_wave)."""
    ctx = rig.ctx
    obs = Obs(count=n)
    offset = rig.server.stderr_size()
    t0 = time.monotonic()
    flights = [await rig.start_run(f"first{i}", model) for i in range(n + 1)]
    obs["settled"] = await rig.settle(flights, timing(rig).slack_s)
    obs["samples"] = rig.samples_of(model, t0)
    traces = [t for t in trace_lines(rig, offset) if t.get("model") == model]
    obs["sessions"] = sorted({str(t.get("session")) for t in traces})
    obs["traced"] = bool(traces)
    facts = rig.observed(obs, flights)
    published = sorted({row[4] for row in obs["samples"] if row[4] is not None})
    if rig.flagged and published and ctx.capacity is None:
        ctx.capacity = published[0]
    ctx.log.append(
        "first_wave",
        rig=rig.name,
        model=model,
        count=n,
        capacity=published,
        sessions=obs["sessions"],
        timeline=rig.timeline(flights),
    )
    return facts, flights


async def first_wave_judged(rig: Rig, model: str, n: int, first: Facts) -> Facts:
    """The first wave judged with the references and timing known now; when the load could
    not be seen in progress (or the pool never showed all n active), the model is unloaded
    and the wave sent again, up to ATTEMPTS waves in all (needs the bulk unload)."""
    made = [{**first, "refs": rig.ctx.refs_json(), "timing": rig.timing_facts()}]
    from parval.framework.judges import run_judge

    while len(made) < ATTEMPTS and run_judge("f1.first_wave", made[-1]).retry:
        if not await reset(rig, [model]):
            break
        again, _ = await first_wave(rig, model, n)
        made.append(again)
    return made[0] if len(made) == 1 else {"attempts": made}


async def calibrate(rig: Rig, model: str) -> Timing:
    """Cold latency, warm latency and idle unload time measured on this candidate."""
    unloaded = await reset(rig, [model])
    cold = await rig.run("calibrate-cold", model)
    warm = [await rig.run(f"calibrate-warm{i}", model) for i in range(2)]
    td = await rig.call("calibrate-unload", "POST", "/v1/tasks/unload_models", {"model_ids": [model]})
    d = statistics.median(f.reply.elapsed_s for f in warm if f.reply is not None)
    cold_s = cold.reply.elapsed_s if cold.reply else d
    t = Timing(
        service_s=max(d, 0.001),
        load_s=max(0.0, cold_s - d),
        teardown_s=td.reply.elapsed_s if td.reply and not route_absent(td.status) else 0.0,
    )
    # Without an unload the "cold" request ran on the first wave's pool: not a cold reference.
    rig.ctx.add_refs(model, "base", [rig.output(cold) if unloaded else None, *(rig.output(f) for f in warm)])
    rig.ctx.log.append("calibration", rig=rig.name, timing=t.to_json(), statuses=[f.status for f in (cold, *warm, td)])
    if any(f.status != 200 for f in (cold, *warm)):
        raise RuntimeError(
            "calibration requests failed: "
            + ", ".join(f"{f.label}={f.status} {f.message()[:120]}" for f in (cold, *warm) if f.status != 200)
        )
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
        reply = await rig.call(
            "management-probe", "POST", "/v1/models/load", ctx.registration(ctx.entry(model, slots=0))
        )
        caps.management_status = reply.status
        if reply.status is not None:
            caps.management = reply.status != 403 and not route_absent(reply.status)
    ctx.log.append("capabilities", rig=rig.name, **caps.to_json())


async def forced_order(rig: Rig, model: str, n: int, *, hold: int = 0) -> Facts:
    """Older queued request, then an unload, then staggered later requests (judged by
    judges_f1.forced_order). `hold` more rounds of n requests queue ahead of the older one,
    so the slots stay held until the whole order is seen queued even on a slow machine."""
    t = timing(rig)
    obs = Obs(count=n, hold=hold)
    await reset(rig, [model])
    await rig.run("warm", model)
    occupants = await occupy(rig, model, n, obs)
    for k in range(hold * n):
        occupants.append(await enqueue(rig, model, f"occupant{n + k}", obs))
    older = await enqueue(rig, model, "older", obs)
    manager = await rig.bulk("unload", [model])
    await stagger_manager(rig, manager, obs, "the unload", [*occupants, older])
    later: list[Flight] = []
    for i in range(max(2, n)):
        if obs.blocked:
            later.append(await rig.start_run(f"later{i}", model))
            continue
        later.append(await enqueue(rig, model, f"later{i}", obs))
        await anyio.sleep(t.gap_s)
    everything = [*occupants, older, manager, *later]
    obs["settled"] = await rig.settle(everything, t.slack_s)
    obs["drained"] = await rig.drained([model], t.slack_s)
    rig.ctx.log.append("forced_order", rig=rig.name, model=model, count=n, timeline=rig.timeline(everything))
    return rig.observed(obs, everything, occupants=[f.label for f in occupants], later=[f.label for f in later])


async def _forced_order_attempt(rig: Rig, model: str, n: int, attempt: int) -> Facts:
    return await forced_order(rig, model, n, hold=attempt)


async def _queue_attempt(rig: Rig, model: str, n: int, attempt: int) -> Facts:
    return await request_only_queue(rig, model, n)


async def request_only_queue(rig: Rig, model: str, n: int) -> Facts:
    """n occupants, then 2n requests queued one by one: FIFO admission (judged by
    judges_f1.request_only_queue). The second n can only start a whole request after the
    first n, so without an observer trace their completions still show the order."""
    t = timing(rig)
    obs = Obs(count=n)
    await reset(rig, [model])
    await rig.run("warm", model)
    base = rig.ctx.base_request()
    marked = "seed" in base  # only vary the seed when the model already takes one
    offset = rig.server.stderr_size()
    occupants = await occupy(rig, model, n, obs)
    queued: list[Flight] = []
    for i in range(2 * n):
        request = {**base, "seed": 7100 + i} if marked else None
        queued.append(await enqueue(rig, model, f"queued{i}", obs, request=request))
    obs["settled"] = await rig.settle([*occupants, *queued], t.slack_s)
    obs["trace_seeds"] = [str(x.get("seed")) for x in trace_lines(rig, offset) if x.get("model") == model]
    obs["drained"] = await rig.drained([model], t.slack_s)
    rig.ctx.log.append(
        "request_only_queue", rig=rig.name, model=model, count=n, timeline=rig.timeline([*occupants, *queued])
    )
    return rig.observed(
        obs,
        [*occupants, *queued],
        marked=marked,
        occupants=[f.label for f in occupants],
        queued=[f.label for f in queued],
    )


# -- rigs ------------------------------------------------------------------------------------


async def cap1_probe(ctx: Context) -> None:
    """Capacity one (slots omitted, flagged): first pool, calibration, forced order."""
    model = ctx.model_id
    ctx.timing = PROVISIONAL
    spec = ctx.launch_spec([ctx.entry()], flagged=True)
    async with open_rig(ctx, "f1-cap1", spec, [model]) as rig:
        wave, _ = await first_wave(rig, model, 1)
        ctx.timing = await calibrate(rig, model)
        await discover(rig, model)
        # The first wave is judged with the references and timing calibration just measured.
        wave = await first_wave_judged(rig, model, 1, wave)
        if not ctx.unmet("F2.first_publish", "first_publish@1", COUNTERS, LOADED):
            ctx.findings.observe("F2.first_publish", "first_publish@1", "f1.first_wave", wave)
        if not ctx.unmet("F1.cap1_fifo", "cap1_pool", COUNTERS, LOADED):
            ctx.findings.observe("F1.cap1_fifo", "cap1_pool", "f1.cap1_pool", wave)
        else:
            ctx.capacity = None
        if ctx.too_short("F1.cap1_fifo", "forced_order@1"):
            return
        if ctx.unmet("F1.cap1_fifo", "forced_order@1", COUNTERS, BULK_UNLOAD):
            return
        order = await attempts("f1.forced_order", functools.partial(_forced_order_attempt, rig, model, 1))
        ctx.findings.observe("F1.cap1_fifo", "forced_order@1", "f1.forced_order", order)
        if not [n for n in tested_counts(ctx) if n >= 2]:
            ctx.findings.observe("F1.fifo", "forced_order@1", "f1.forced_order", order)
            ctx.findings.observe(
                "F1.fifo",
                "request_only_queue@1",
                "f1.request_only_queue",
                await attempts("f1.request_only_queue", functools.partial(_queue_attempt, rig, model, 1)),
            )
            ctx.findings.add(
                "F1.fifo",
                "multi_slot",
                Status.PENDING,
                f"capacity {ctx.capacity}: spare-slot FIFO needs a model with capacity >= 2 "
                "(slot-validation fixture build)",
            )


async def fifo_probe(ctx: Context) -> None:
    """At every tested count >= 2: first pool, forced order and request-only queue."""
    counts = [n for n in tested_counts(ctx) if n >= 2]
    model = ctx.model_id
    for n in counts:
        spec = ctx.launch_spec([ctx.entry(slots=n)], flagged=True)
        async with open_rig(ctx, f"f1-fifo-{n}", spec, [model]) as rig:
            wave, _ = await first_wave(rig, model, n)
            wave = await first_wave_judged(rig, model, n, wave)
            ctx.findings.observe("F2.first_publish", f"first_publish@{n}", "f1.first_wave", wave)
            if ctx.too_short("F1.fifo", f"forced_order@{n}"):
                continue
            order = await attempts("f1.forced_order", functools.partial(_forced_order_attempt, rig, model, n))
            ctx.findings.observe("F1.fifo", f"forced_order@{n}", "f1.forced_order", order)
            queue = await attempts("f1.request_only_queue", functools.partial(_queue_attempt, rig, model, n))
            ctx.findings.observe("F1.fifo", f"request_only_queue@{n}", "f1.request_only_queue", queue)
    skipped = [n for n in ctx.plan.counts if n not in tested_counts(ctx)]
    if skipped:
        ctx.notes.append(
            f"plan counts {skipped} exceed the advertised capacity {ctx.capacity}; "
            "they are exercised as unsupported counts (F1.unsupported)"
        )


async def overdue_probe(ctx: Context) -> None:
    """Overdue work fails fast even with spare slots or waiting managers; a healthy slot
    permits bounded waiting."""
    if ctx.too_short("F1.overdue", "overdue"):
        return
    n = max(tested_counts(ctx))
    model = ctx.model_id
    spec = ctx.launch_spec([ctx.entry(slots=n)], flagged=True)
    async with open_rig(ctx, f"f1-overdue-{n}", spec, [model]) as rig:
        await rig.run("warm", model)
        cases = [("full_pool_manager", n, 1), ("two_managers", n, 2)]
        if n >= 2:
            cases.append(("spare_slots_manager", n - 1, 1))
        for name, occupied, managers in cases:
            facts = await attempts(
                "f1.overdue_case", functools.partial(_overdue_attempt, rig, model, n, occupied, managers)
            )
            ctx.findings.observe("F1.overdue", f"{name}@{n}", "f1.overdue_case", facts)
        if n >= 2:
            facts = await attempts("f1.healthy_plus_overdue", functools.partial(_healthy_attempt, rig, model, n))
            ctx.findings.observe("F1.overdue", f"healthy_plus_overdue@{n}", "f1.healthy_plus_overdue", facts)
        else:
            ctx.findings.add(
                "F1.overdue",
                "spare_and_healthy_slots",
                Status.PENDING,
                f"capacity {ctx.capacity}: spare-slot and healthy-plus-overdue cases need "
                "a model with capacity >= 2 (slot-validation fixture build)",
            )


async def _overdue_attempt(rig: Rig, model: str, n: int, occupied: int, managers: int, attempt: int) -> Facts:
    # The first attempt reads the status while the managers wait (a stalled registry is named
    # then); later attempts leave those reads out, so the probe meets the slots still overdue.
    return await overdue_case(rig, model, n, occupied=occupied, managers=managers, read_status=attempt == 0)


async def _healthy_attempt(rig: Rig, model: str, n: int, attempt: int) -> Facts:
    # After an attempt whose overdue slot freed too soon, hold it through a cold load too.
    return await healthy_plus_overdue(rig, model, n, cold=attempt > 0)


async def overdue_case(
    rig: Rig, model: str, n: int, *, occupied: int, managers: int, read_status: bool = True
) -> Facts:
    """Every occupied slot overdue, managers waiting, then a probe with a short bound (judged
    by judges_f1.overdue_case)."""
    t = timing(rig)
    obs = Obs(count=n, occupied=occupied, managers=managers)
    probe_ms = t.overdue_ms
    # Occupants admitted to a cold model hold leases through the load as well, which leaves
    # the load plus a service of runway for the managers and the probe.
    await reset(rig, [model])
    occupants = await occupy(rig, model, occupied, obs, loaded=False)
    await anyio.sleep(probe_ms / 1000 + t.gap_s)  # every occupied slot is now overdue for the probe
    mgrs = [await rig.bulk(f"unload{i}", [model]) for i in range(managers)]
    for m in mgrs:
        await stagger_manager(rig, m, obs, m.label, occupants, read_status=read_status)
    probe = await rig.run("probe", model, busy_timeout_ms=probe_ms)
    everything = [*occupants, *mgrs, probe]
    obs["settled"] = await rig.settle(everything, t.slack_s)
    obs["drained"] = await rig.drained([model], t.slack_s)
    return rig.observed(
        obs,
        everything,
        probe_ms=probe_ms,
        occupants=[f.label for f in occupants],
        manager_labels=[m.label for m in mgrs],
    )


async def healthy_plus_overdue(rig: Rig, model: str, n: int, *, cold: bool = False) -> Facts:
    """One overdue slot and n-1 fresh ones: the probe must wait (bounded), not fail fast
    (judged by judges_f1.healthy_plus_overdue).

    Its bound is a third of a service: the fresh slots stay well inside it while the probe
    arrives, and the probe may time out or be served when the overdue slot frees. `cold`:
    the overdue slot is taken on an unloaded model, so it stays held through the load."""
    t = timing(rig)
    obs = Obs(count=n, cold=cold)
    probe_ms = max(t.overdue_ms, int(t.service_s * 1000 / 3))
    if cold:
        await reset(rig, [model])
    else:
        await rig.run("warm", model)
    old = await occupy(rig, model, 1, obs, label="overdue", loaded=not cold)
    await anyio.sleep(probe_ms / 1000 + 0.01)
    t_fresh = time.monotonic()
    fresh = [await rig.start_run(f"healthy{i}", model) for i in range(n - 1)]
    obs.wait(
        f"the full pool ({n} active) while the overdue slot was held",
        await rig.wait(lambda s: s.active(model) >= n, t.service_s, after=t_fresh) is not None,
        unseen="the overdue slot freed before the full pool could be observed",
    )
    probe = await rig.run("probe", model, busy_timeout_ms=probe_ms)
    obs["settled"] = await rig.settle([*old, *fresh, probe], t.slack_s)
    obs["drained"] = await rig.drained([model], t.slack_s)
    rig.ctx.log.append("healthy_plus_overdue", rig=rig.name, count=n, probe_ms=probe_ms)
    return rig.observed(
        obs, [*old, *fresh, probe], probe_ms=probe_ms, overdue=[f.label for f in old], healthy=[f.label for f in fresh]
    )
