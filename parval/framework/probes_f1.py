"""F1 on the flagged runtime: the capacity-one pool and calibration, the forced FIFO order
at every tested count, the request-only queue, overdue fail-fast (F1.fifo,
F1.cap1_fifo, F1.overdue; first-wave publication evidence goes to F2.first_publish), the
timeout bounds (F1.timeouts, also run on the legacy runtime by probes_legacy) and what the
runtime refuses (F1.unsupported). The probes record; parval.framework.judges_f1 judges
(F2.first_publish: judges_f2).

F1.timeouts: two models share one server, `A` with a short per-model `busy_timeout_ms`
ceiling and `Z` with ceiling 0 (unbounded). Every occupant is fresh when a bounded probe
arrives, so the probe takes the waiting path, not the overdue fail-fast path (that is
F1.overdue): the model ceiling, a shorter request override, timeout zero (unbounded), a
request asking for zero still getting the ceiling, a targeted manager timing out (and
waking the request behind it), and bulk unload ignoring the ceiling.

F1.unsupported: a count above the advertised capacity keeps its behaviour (a load error
naming the capacity, nothing published, no lease held, a retry gives the same answer); an
unsupported execution mode is refused without holding a lease; the FIFO has no queue
capacity, so overflow is the timeout rejection recorded by F1.timeouts.
"""

from __future__ import annotations

import functools
import statistics
import time

import anyio

from parval.framework.judges import run_judge
from parval.framework.observed import Facts, Obs, Timing
from parval.framework.preconditions import BULK_UNLOAD, COUNTERS, LOADED, MANAGEMENT, route_absent
from parval.framework.probe_context import FrameworkContext
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import (
    ATTEMPTS,
    attempts,
    enqueue,
    observe_after,
    occupy,
    reset,
    stagger_manager,
    timing,
    trace_lines,
)
from parval.rundir.event_types import (
    CalibrationEvent,
    FirstWaveEvent,
    ForcedOrderEvent,
    HealthyPlusOverdueEvent,
    RequestOnlyQueueEvent,
    plain,
)
from parval.status import Status

PROVISIONAL = Timing(service_s=1.0, load_s=5.0, teardown_s=1.0)


def tested_counts(ctx: FrameworkContext) -> list[int]:
    """Plan counts the advertised capacity allows (capacity 1 leaves only count 1)."""
    cap = ctx.capacity or 1
    return [n for n in ctx.plan.counts if n <= cap]


async def first_wave(rig: Rig, model: str, n: int) -> tuple[Facts, list[Flight]]:
    """n+1 concurrent first requests on a fresh lazy model: one complete pool is published
    (judged by judges_f2.first_wave)."""
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
    ctx.log.write(
        FirstWaveEvent(
            kind="first_wave",
            rig=rig.name,
            model=model,
            count=n,
            capacity=published,
            sessions=obs["sessions"],
            timeline=rig.timeline(flights),
        )
    )
    return facts, flights


async def first_wave_judged(rig: Rig, model: str, n: int, first: Facts) -> Facts:
    """The first wave judged with the references and timing known now; when the load could
    not be seen in progress (or the pool never showed all n active), the model is unloaded
    and the wave sent again, up to ATTEMPTS waves in all (needs the bulk unload)."""
    made = [{**first, "refs": rig.ctx.refs_json(), "timing": rig.timing_facts()}]
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
    rig.ctx.log.write(
        CalibrationEvent(
            kind="calibration", rig=rig.name, timing=plain(t.to_json()), statuses=[f.status for f in (cold, *warm, td)]
        )
    )
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
    ctx.log.write(caps.event(rig.name))


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
    rig.ctx.log.write(
        ForcedOrderEvent(kind="forced_order", rig=rig.name, model=model, count=n, timeline=rig.timeline(everything))
    )
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
    rig.ctx.log.write(
        RequestOnlyQueueEvent(
            kind="request_only_queue", rig=rig.name, model=model, count=n, timeline=rig.timeline([*occupants, *queued])
        )
    )
    return rig.observed(
        obs,
        [*occupants, *queued],
        marked=marked,
        occupants=[f.label for f in occupants],
        queued=[f.label for f in queued],
    )


# -- rigs ------------------------------------------------------------------------------------


async def cap1_probe(ctx: FrameworkContext) -> None:
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


async def fifo_probe(ctx: FrameworkContext) -> None:
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


async def overdue_probe(ctx: FrameworkContext) -> None:
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
    rig.ctx.log.write(HealthyPlusOverdueEvent(kind="healthy_plus_overdue", rig=rig.name, count=n, probe_ms=probe_ms))
    return rig.observed(
        obs, [*old, *fresh, probe], probe_ms=probe_ms, overdue=[f.label for f in old], healthy=[f.label for f in fresh]
    )


# -- F1.timeouts ---------------------------------------------------------------------------------


FLAGGED_TIMEOUT = "timed out waiting for a slot"


def legacy_timeout_text(ceiling_ms: int) -> str:
    return f"timed out after {ceiling_ms} ms waiting for the inference lock"


def timeout_models(ctx: FrameworkContext) -> tuple[str, str, str]:
    """A (the short ceiling), Z (ceiling 0: unbounded) and B (a shorter ceiling still, for
    the bulk unload that must wait beyond it)."""
    return ctx.model_id, ctx.derived_id("t0"), ctx.derived_id("tb")


def bulk_ceiling_ms(t: Timing) -> int:
    """B's ceiling: a third of A's, so a request's remaining run outlasts it by a margin."""
    return max(10, t.ceiling_ms // 3)


async def occupy_any(rig: Rig, model: str, n: int, obs: Obs, *, hold: int = 0, cold: bool = False) -> list[Flight]:
    """Hold n slots (flagged, observed; `hold` more rounds of n queued behind them; `cold`:
    on an unloaded model, so the leases are held through the load as well) or the one legacy
    lock (no slot fields: a gap, and the bounded caller that follows must still find the
    holder younger than the ceiling, or the attempt did not force the case)."""
    t = timing(rig)
    if rig.flagged:
        if cold:
            await reset(rig, [model])
        flights = [await rig.start_run(f"occupant{i}", model) for i in range(n)]
        seen = await rig.wait(lambda s: s.active(model) >= n and (cold or bool(s.loaded(model))), t.slack_s)
        obs.wait(f"{n} active slot(s)", seen is not None)
        for k in range(hold * n):
            flights.append(await enqueue(rig, model, f"occupant{n + k}", obs))
        return flights
    flight = await rig.start_run("occupant0", model)
    # Long enough for it to take the lock, short enough that it is not yet "wedged" for the
    # ceiling-bounded caller that follows.
    await anyio.sleep(min(t.gap_s, t.ceiling_ms / 3000))
    age_ms = (time.monotonic() - flight.t_send) * 1000
    obs.wait(
        f"the holder younger than the {t.ceiling_ms} ms ceiling when the bounded caller is sent",
        not flight.finished and age_ms < t.ceiling_ms,
        unseen=f"the holder was {age_ms:.0f} ms old (or done) before the bounded caller could be sent",
    )
    return [flight]


async def timeout_checks(rig: Rig, n: int, runtime: str) -> None:
    ctx = rig.ctx
    t = timing(rig)
    a, z, b = timeout_models(ctx)
    ceiling = t.ceiling_ms
    text = FLAGGED_TIMEOUT if rig.flagged else legacy_timeout_text(ceiling)
    override_text = FLAGGED_TIMEOUT if rig.flagged else legacy_timeout_text(ceiling)
    for m in (a, z, b):
        await rig.run(f"warm-{m}", m)

    async def attempt(
        name: str, model: str, body_timeout: int | None, expect: str | None, bound_ms: int, i: int
    ) -> Facts:
        """One bounded (or unbounded) probe behind fresh occupants (judged by
        judges_f1.timeout_case)."""
        obs = Obs(case=name, expect=expect, bound_ms=bound_ms, probe=f"probe-{name}", attempt=i)
        occupants = await occupy_any(rig, model, n, obs)
        probe = await rig.run(f"probe-{name}", model, busy_timeout_ms=body_timeout)
        obs["settled"] = await rig.settle(occupants, t.slack_s)
        if rig.flagged:
            # A waiter that gave up must leave the queue's accounting too.
            obs["drained"] = await rig.drained([model], t.slack_s)
        return rig.observed(obs, [*occupants, probe], occupants=[f.label for f in occupants])

    async def case(name: str, model: str, body_timeout: int | None, expect: str | None, bound_ms: int) -> None:
        facts = await attempts("timeouts.case", functools.partial(attempt, name, model, body_timeout, expect, bound_ms))
        ctx.findings.observe("F1.timeouts", f"{name}@{runtime}", "timeouts.case", facts)

    await case("request_ceiling", a, None, text, ceiling)
    await case("request_override", z, ceiling, override_text, ceiling)
    await case("timeout_zero", z, None, None, 0)
    await case("request_zero_gets_ceiling", a, 0, text, ceiling)
    await manager_timeout(rig, a, n, runtime, text, ceiling)
    await bulk_ignores_ceiling(rig, b, n, runtime, bulk_ceiling_ms(t))


async def manager_timeout(rig: Rig, model: str, n: int, runtime: str, text: str, ceiling: int) -> None:
    ctx = rig.ctx
    if ctx.unmet("F1.timeouts", f"manager_timeout@{runtime}", MANAGEMENT):
        return
    made: list[Facts] = []

    async def attempt(i: int) -> Facts:
        facts = await manager_attempt(rig, model, n, text, ceiling, i)
        made.append(facts)
        return facts

    facts = await attempts("timeouts.manager_timeout", attempt)
    if any(x.get("forbidden") for x in made):
        ctx.findings.add(
            "F1.timeouts",
            f"manager_timeout@{runtime}",
            Status.PENDING,
            "targeted unload needs server.ui_management (403 dynamic model management is disabled)",
        )
        return
    ctx.findings.observe("F1.timeouts", f"manager_timeout@{runtime}", "timeouts.manager_timeout", facts)


async def manager_attempt(rig: Rig, model: str, n: int, text: str, ceiling: int, attempt: int) -> Facts:
    """A targeted unload behind occupants, with a spare slot and a request behind it on the
    flagged runtime (judged by judges_f1.manager_timeout)."""
    t = timing(rig)
    spare = rig.flagged and n >= 2
    obs = Obs(expect=text, bound_ms=ceiling, model=model, count=n, spare=spare, attempt=attempt)
    # Cold occupants hold their slots through the load: the manager gives up well before.
    occupants = await occupy_any(rig, model, n - 1 if spare else n, obs, cold=True)
    manager = await rig.start("unload", "POST", "/v1/models/unload", {"id": model})
    later: Flight | None = None
    if spare:
        await anyio.sleep(t.gap_s)
        # A spare slot exists, yet the request must queue behind the waiting manager.
        later = await rig.start_run("behind-manager", model)
        snap = await rig.wait(lambda s: s.queued(model) >= 1 or s.active(model) >= n, t.slack_s)
        obs.wait(
            "the request behind the manager queued",
            snap is not None,
            unseen="the request behind the manager was never observed queued",
        )
        if snap is not None:
            # What the sample that ended the wait showed, and whether the manager was done then.
            obs["behind"] = {
                "t": rig.rel(snap.t),
                "queued": snap.queued(model),
                "active": snap.active(model),
                "manager_finished": manager.finished,
            }
    await manager.done.wait()
    flights = [*occupants, manager, *([later] if later else [])]
    if manager.status == 403:
        await rig.settle(flights, t.slack_s)
        return {"forbidden": True, "waits": obs["waits"]}
    obs["settled"] = await rig.settle(flights, t.slack_s)
    # The status from the manager giving up until the first occupant finished: whether the
    # request behind it took the spare slot (judges_f1._woke).
    first_done = min((f.t_done for f in occupants), default=float("inf"))
    obs["after_giveup"] = rig.samples_of(model, manager.t_done, first_done) if later is not None else []
    snap_end = rig.poller.latest
    obs["end_sampled"] = snap_end is not None
    obs["end_loaded"] = snap_end.loaded(model) if snap_end is not None else None
    return rig.observed(
        obs, flights, occupants=[f.label for f in occupants], later=later.label if later is not None else None
    )


async def bulk_ignores_ceiling(rig: Rig, model: str, n: int, runtime: str, ceiling: int) -> None:
    ctx = rig.ctx
    t = timing(rig)
    if ctx.unmet("F1.timeouts", f"bulk_unbounded@{runtime}", BULK_UNLOAD):
        return

    async def attempt(i: int) -> Facts:
        """Work ahead of a bulk unload that outlasts the model's ceiling: flagged, cold
        occupants (held through the load); unflagged, a warm holder (a legacy bulk unload
        skips a load in progress). Judged by judges_f1.bulk_unbounded."""
        obs = Obs(bound_ms=ceiling, model=model, attempt=i)
        await rig.run(f"warm-{model}", model)
        occupants = await occupy_any(rig, model, n, obs, cold=rig.flagged)
        bulk = await rig.bulk("bulk-unload", [model])
        obs["settled"] = await rig.settle([*occupants, bulk], t.slack_s)
        return rig.observed(obs, [*occupants, bulk], occupants=[f.label for f in occupants])

    facts = await attempts("timeouts.bulk_unbounded", attempt)
    ctx.findings.observe("F1.timeouts", f"bulk_unbounded@{runtime}", "timeouts.bulk_unbounded", facts)


async def flagged_timeouts_probe(ctx: FrameworkContext) -> None:
    t = ctx.timing
    assert t is not None
    if ctx.too_short("F1.timeouts", "timeouts@flagged"):
        return
    n = max(tested_counts(ctx))
    a, z, b = timeout_models(ctx)
    models = [
        ctx.entry(a, slots=n, busy_timeout_ms=t.ceiling_ms),
        ctx.entry(z, slots=n, busy_timeout_ms=0),
        ctx.entry(b, slots=n, busy_timeout_ms=bulk_ceiling_ms(t)),
    ]
    async with open_rig(ctx, "f1-timeouts", ctx.launch_spec(models, flagged=True), [a, z, b]) as rig:
        await timeout_checks(rig, n, "flagged")


# -- F1.unsupported ------------------------------------------------------------------------------


async def over_capacity(rig: Rig, over: str, cap: int) -> None:
    """Two requests to a registration whose count exceeds the capacity (judged by
    judges_f1.count_over_capacity)."""
    t = timing(rig)
    obs = Obs(capacity=cap, model=over)
    replies = [await rig.run(f"over-capacity{i}", over) for i in range(2)]
    obs["drained"] = await rig.drained([over], t.slack_s)
    snap = rig.poller.latest
    sample = snap.get(over) if snap else None
    # The registration as the last status sample showed it: [t, active, queued, loaded,
    # max_parallel, slots] (None: not listed).
    obs["end"] = (
        None
        if snap is None or sample is None
        else [rig.rel(snap.t), sample.active, sample.queued, sample.loaded, sample.max_parallel, sample.slots]
    )
    rig.ctx.findings.observe(
        "F1.unsupported",
        "count_over_capacity",
        "unsupported.count_over_capacity",
        rig.observed(obs, replies, requests=[r.label for r in replies]),
        messages=[r.message()[:200] for r in replies],
    )


async def unsupported_mode(rig: Rig, model: str) -> None:
    """Streaming execution on an offline model, or native batching on a streaming one
    (judged by judges_f1.unsupported_mode)."""
    ctx = rig.ctx
    mode = str(ctx.plan.model["mode"])
    body: dict[str, object] = {"model": model}
    if mode == "offline":
        route, body["request"] = "/v1/tasks/stream", ctx.base_request()
    else:
        route, body["requests"] = "/v1/tasks/batch", [ctx.base_request()]
    if ctx.unmet("F1.unsupported", "unsupported_mode", COUNTERS):
        return
    obs = Obs(route=route, mode=mode, model=model)
    refused = await rig.call("unsupported-mode", "POST", route, body)
    obs["refused_status"] = refused.status
    check = ("F1.unsupported", "unsupported_mode", "unsupported.unsupported_mode")
    evidence = {"route": route, "reply": refused.message()[:200]}
    if route_absent(refused.status):  # nothing more to force: judged UNSUPPORTED
        ctx.findings.observe(*check, rig.observed(obs, [refused]), **evidence)
        return
    await observe_after(rig, obs, model, "after-refusal", check, [refused], **evidence)
    ctx.findings.add(
        "F1.unsupported",
        "queue_overflow",
        Status.NOT_APPLICABLE,
        "the per-model FIFO has no queue capacity; overflow is the timeout rejection "
        "(503 'timed out waiting for a slot') recorded under F1.timeouts",
    )


async def unsupported_probe(ctx: FrameworkContext) -> None:
    cap = ctx.capacity or 1
    model, over = ctx.model_id, ctx.derived_id("over")
    if cap + 1 > 16:
        ctx.findings.add(
            "F1.unsupported",
            "count_over_capacity",
            Status.NOT_APPLICABLE,
            "capacity 16 is the hard cap: no valid count exceeds it",
        )
        entries = [ctx.entry(model)]
    else:
        entries = [ctx.entry(model), ctx.entry(over, slots=cap + 1)]
    async with open_rig(
        ctx, "f1-unsupported", ctx.launch_spec(entries, flagged=True), [str(e["id"]) for e in entries]
    ) as rig:
        if len(entries) == 2 and not ctx.unmet("F1.unsupported", "count_over_capacity", COUNTERS, LOADED):
            await over_capacity(rig, over, cap)
        await unsupported_mode(rig, model)
