"""F5: two (or three) models derived from the plan's model, told apart by distinct
session_options so cross-model contamination shows in the outputs.

Residency probes run with max_loaded_models 1 and 2; the bulk probes without a limit.
A retiring model is caught between its logical unload (status shows loaded=false) and the
end of its teardown (the unload has not answered yet); a first load is caught while the
status shows its request active and the model not loaded. The probes record;
parval.framework.judges_f5 judges.
"""

from __future__ import annotations

import time

import anyio

from parval.framework.observed import Facts, Obs
from parval.framework.probe_context import FrameworkContext
from parval.framework.probes_f1 import tested_counts
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import attempts, canaries, references, reset, timing
from parval.status import Status

Models = list[tuple[str, int | None, str]]


def five_models(ctx: FrameworkContext) -> Models:
    """(id, distinct session_options index, reference tag) for A, B and M."""
    return [(ctx.model_id, None, "base"), (ctx.derived_id("b"), 2, "opt2"), (ctx.derived_id("m"), 1, "opt1")]


async def _refs(rig: Rig, models: Models) -> None:
    for mid, _, tag in models:
        await references(rig, mid, tag)
    await reset(rig, [m for m, _, _ in models])


def _tags(models: Models) -> dict[str, str]:
    return {m: tag for m, _, tag in models}


def joint_samples(rig: Rig, models: list[str], t0: float, t1: float | None = None) -> list[list[object]]:
    """Status samples of several models at once as [t, {model: [active, queued, loaded] or
    None (absent)}] rows, a row only where something changed (judges_f5.joint reads them)."""
    rows: list[list[object]] = []
    last: dict[str, object] | None = None
    for s in rig.poller.between(t0, time.monotonic() if t1 is None else t1):
        values: dict[str, object] = {}
        for m in models:
            x = s.get(m)
            values[m] = None if x is None else [x.active, x.queued, x.loaded]
        if values != last:
            rows.append([rig.rel(s.t), values])
            last = values
    return rows


def _labels(flights: list[Flight]) -> list[str]:
    return [f.label for f in flights]


async def limit_probe(ctx: FrameworkContext, limit: int) -> None:
    t = ctx.timing
    assert t is not None
    n = max(tested_counts(ctx))
    models = five_models(ctx)
    entries = [ctx.entry(mid, slots=n, distinct=d) for mid, d, _ in models]
    spec = ctx.launch_spec(entries, flagged=True, max_loaded_models=limit)
    async with open_rig(ctx, f"f5-limit{limit}", spec, [m for m, _, _ in models]) as rig:
        await _refs(rig, models)
        distinct = len({frozenset(ctx.ref_outputs(mid, tag)) for mid, _, tag in models}) == len(models)
        if not distinct:
            ctx.notes.append("F5: derived models gave identical outputs; contamination is not observable")
        facts = await attempts("f5.together", lambda i: together(rig, models, n, limit))
        ctx.findings.observe("F5.two_models", f"together@limit{limit}", "f5.together", facts)
        if limit == 2:
            await warm_during_cold(rig, models)
            facts = await attempts("f5.unload_together", lambda i: unload_together(rig, models, n))
            ctx.findings.observe("F5.two_models", "unload_together@limit2", "f5.unload_together", facts)
        else:
            facts = await attempts("f5.alternate", lambda i: alternate(rig, models))
            ctx.findings.observe("F5.two_models", "alternate@limit1", "f5.alternate", facts)
        await retiring(rig, models, limit)


async def together(rig: Rig, models: Models, n: int, limit: int) -> Facts:
    """n cold requests to each of A and B at once (judged by judges_f5.together)."""
    t = timing(rig)
    obs = Obs(limit=limit, count=n)
    (a, _, _), (b, _, _) = models[0], models[1]
    await reset(rig, [a, b])
    t0 = time.monotonic()
    owned = [(m, await rig.start_run(f"{m}-{i}", m)) for i in range(n) for m in (a, b)]
    flights = [f for _, f in owned]
    obs["settled"] = await rig.settle(flights, t.slack_s)
    obs["joint"] = joint_samples(rig, [a, b], t0)
    obs["drained"] = await rig.drained([a, b], t.slack_s)
    return rig.observed(obs, flights, models=[a, b], tags=_tags(models))


# The observer's interval in the later attempts: fine enough to see the cold load start and
# end within a small share of it (never coarser than the plan's own interval).
FAST_POLL_LOADS = 40
FAST_POLL_FLOOR_S = 0.002


async def warm_during_cold(rig: Rig, models: Models) -> None:
    """A warm model is not held up by another model's guarded cold load (judged by
    judges_f5.warm_during_cold), with the warm model's requests measured just before and after.

    Where an attempt could not force that (the load ended too soon after the warm request
    was sent to tell waiting from a slow request), the next one forces it differently, each
    way recorded as the attempt's `forcing`: attempt 1 makes the cold load first evict an
    idle third model (the evict -> load sequence the load guard covers, so the guarded
    window grows by a measured teardown), has the warm model send the plan's quickest
    request as measured on it (so the load outlasts more of a request) and reads the status
    more often; attempt 2 does the same with the roles swapped."""
    t = timing(rig)
    (a, _, _), (b, _, _), (m, _, _) = models
    window = t.load_s + t.teardown_s  # the longest guarded window an attempt can force
    if window < 2 * t.gap_s:
        rig.ctx.findings.add(
            "F5.two_models",
            "warm_during_cold@limit2",
            Status.PENDING,
            f"the load takes {t.load_s * 1000:.0f} ms and an idle unload {t.teardown_s * 1000:.0f} ms: too fast "
            "to overlap with, even when the load first evicts another model",
        )
        return
    quickest: dict[str, tuple[str, dict[str, float]]] = {}
    plan_poll = rig.poller.interval_s
    fast_poll = min(plan_poll, max(FAST_POLL_FLOOR_S, t.load_s / FAST_POLL_LOADS))
    tags = _tags(models)
    schedule = [(a, b, None, False), (a, b, m, True), (b, a, m, True)]

    async def attempt(i: int) -> Facts:
        cold_id, warm_id, evict, harder = schedule[min(i, len(schedule) - 1)]
        obs = Obs(attempt=i)
        rig.poller.interval_s = fast_poll if harder else plan_poll
        try:
            await reset(rig, [cold_id])
            if evict is not None:
                # Used before the warm model, so the oldest idle one the cold load evicts.
                await rig.run("evictee", evict)
            await rig.run("warm-warmup", warm_id)
            name = "base"
            measured: dict[str, float] = {}
            if harder:
                if warm_id not in quickest:
                    quickest[warm_id] = await _quickest_request(rig, warm_id, tags[warm_id])
                name, measured = quickest[warm_id]
            request = _plan_request(rig, name)
            obs["forcing"] = {
                "cold": cold_id,
                "warm": warm_id,
                "request": name,
                "tag": tags[warm_id] if name == "base" else _variation_tag(tags[warm_id], name),
                "measured_ms": measured,
                "evict": evict,
                "teardown_ms": round(t.teardown_s * 1000, 2) if evict is not None else None,
                "status_poll_ms": round(rig.poller.interval_s * 1000, 3),
            }
            before = await rig.run("warm-before", warm_id, request=request)
            cold = await rig.start_run("cold", cold_id)
            during = await rig.wait(lambda s: s.active(cold_id) >= 1 and s.loaded(cold_id) is False, t.slack_s)
            obs["cold_load_seen"] = during is not None and not cold.finished
            warm = await rig.start_run("warm", warm_id, request=request)
            obs["settled"] = await rig.settle([cold, warm], t.slack_s)
            after = await rig.run("warm-after", warm_id, request=request)
        finally:
            rig.poller.interval_s = plan_poll
        rows = rig.samples_of(cold_id, cold.t_send, cold.t_done)
        obs["published_at"] = next((row[0] for row in rows if row[3]), None)
        obs["unpublished_until"] = rig.last_read_unloaded(cold_id, cold.t_send, cold.t_done)
        if evict is not None:
            # Whether the evicted model was seen unloaded while the cold request ran (evidence
            # that the eviction was part of the window, not judged).
            gone = [row[0] for row in rig.samples_of(evict, cold.t_send, cold.t_done) if row[3] is False]
            obs["evictee_unloaded_at"] = gone[0] if gone else None
        return rig.observed(obs, [cold, warm, before, after], tags=tags)

    facts = await attempts("f5.warm_during_cold", attempt, tries=len(schedule))
    rig.ctx.findings.observe("F5.two_models", "warm_during_cold@limit2", "f5.warm_during_cold", facts)


def _variation_tag(tag: str, request: str) -> str:
    """The reference tag of a registration's outputs for a plan request other than the base."""
    return f"{tag}+{request}"


def _plan_request(rig: Rig, name: str) -> dict[str, object]:
    return next(r.body for r in rig.ctx.plan.requests() if r.name == name)


async def _quickest_request(rig: Rig, model: str, tag: str) -> tuple[str, dict[str, float]]:
    """The plan request `model` answers soonest while warm (each timed twice, the quicker
    kept), with every measured time (ms). The two outputs of a variation are recorded as
    its warm references (after another request, then after itself)."""
    measured: dict[str, float] = {}
    for r in rig.ctx.plan.requests():
        runs = [await rig.run(f"measure-{r.name}{k}", model, request=r.body) for k in range(2)]
        if any(f.status != 200 or f.reply is None for f in runs):
            continue  # a request this registration does not serve is no candidate
        measured[r.name] = round(min(f.reply.elapsed_s for f in runs if f.reply is not None) * 1000, 3)
        if r.name != "base":
            rig.ctx.add_refs(model, _variation_tag(tag, r.name), [None, *(rig.output(f) for f in runs)])
    if not measured:
        return "base", measured
    return min(measured, key=lambda name: measured[name]), measured


async def unload_together(rig: Rig, models: Models, n: int) -> Facts:
    """A bulk unload of both models waits for both models' admitted work (judged by
    judges_f5.unload_together)."""
    t = timing(rig)
    obs = Obs(count=n)
    (a, _, _), (b, _, _) = models[0], models[1]
    for m in (a, b):
        await rig.run(f"warm-{m}", m)
    running = [await rig.start_run(f"{m}-run{i}", m) for i in range(n) for m in (a, b)]
    # Every request must be admitted (running or queued) before the barrier: one still in
    # flight to the server would rightly queue behind the unload and finish after it.
    seen = await rig.wait(
        lambda s: (
            s.active(a) >= 1 and s.active(b) >= 1 and s.active(a) + s.queued(a) >= n and s.active(b) + s.queued(b) >= n
        ),
        t.slack_s,
    )
    obs.wait("both models' requests admitted", seen is not None)
    bulk = await rig.bulk("unload-both", [a, b])
    obs["settled"] = await rig.settle([*running, bulk], t.slack_s)
    end = await rig.wait(
        lambda s: not s.loaded(a) and not s.loaded(b) and s.active(a) == 0 and s.active(b) == 0, t.slack_s
    )
    obs["ended_unloaded"] = end is not None
    return rig.observed(obs, [*running, bulk], models=[a, b], running=_labels(running))


async def alternate(rig: Rig, models: Models) -> Facts:
    """Limit 1: alternating requests evict the idle other model each time (judged by
    judges_f5.alternate)."""
    t = timing(rig)
    obs = Obs()
    (a, _, _), (b, _, _) = models[0], models[1]
    t0 = time.monotonic()
    seq = [await rig.run(f"alt{i}-{m}", m) for i, m in enumerate((a, b, a))]
    obs["joint"] = joint_samples(rig, [a, b], t0)
    snap = await rig.wait(lambda s: s.loaded(a) is True and s.loaded(b) is False, t.slack_s)
    obs["evicted"] = snap is not None
    return rig.observed(obs, seq, models=[a, b], tags=_tags(models), sequence=_labels(seq))


async def retiring(rig: Rig, models: Models, limit: int) -> None:
    """A model in teardown neither blocks nor evicts an unrelated keeper (judged by
    judges_f5.retiring)."""
    t = timing(rig)
    name = f"retiring@limit{limit}"
    if t.teardown_s < 2 * t.gap_s:
        rig.ctx.findings.add(
            "F5.retiring_residency",
            name,
            Status.PENDING,
            f"an idle unload takes {t.teardown_s * 1000:.0f} ms: too fast to load another "
            "model while it retires (give the model a slower teardown)",
        )
        return
    facts = await attempts("f5.retiring", lambda i: retiring_once(rig, models, limit))
    rig.ctx.findings.observe("F5.retiring_residency", name, "f5.retiring", facts)


async def retiring_once(rig: Rig, models: Models, limit: int) -> Facts:
    """One attempt: a load sent while another model is in teardown."""
    t = timing(rig)
    obs = Obs(limit=limit)
    (a, _, _), (b, _, _), (m, _, tm) = models
    await reset(rig, [a, b, m])
    keeper: str | None = None
    if limit == 2:
        retire, keeper = b, a
        await rig.run("load-retiring", retire)  # older: the limit-2 eviction order picks it first
        await rig.run("load-keeper", keeper)
    else:
        retire = a
        await rig.run("load-retiring", retire)
    unload = await rig.bulk("unload-retiring", [retire])
    window = await rig.wait(lambda s: s.loaded(retire) is False, t.slack_s)
    # Read right then: was the incoming load sent while the retiring model was in teardown?
    obs["teardown_window"] = window is not None and not unload.finished
    t_inc = time.monotonic()
    incoming = await rig.run("incoming", m)
    inc_done = time.monotonic()
    obs["settled"] = await rig.settle([unload], t.slack_s)
    obs["registry"] = polls_during(rig, unload)
    if keeper is not None:
        obs["keeper_samples"] = rig.samples_of(keeper, t_inc, inc_done)
        end = await rig.wait(lambda s: s.get(keeper) is not None, 2.0)
        obs["keeper_end_loaded"] = end.loaded(keeper) if end is not None else None
    return rig.observed(obs, [unload, incoming], keeper=keeper, incoming_tag=tm)


def polls_during(rig: Rig, manager: Flight) -> dict[str, object] | None:
    """The slowest status poll sent in the first half of `manager`'s wait, as a canary read
    (facts.stalled judges it): a registry held across the wait answers it only when the
    manager does, so the status could not show what happened meanwhile."""
    if not manager.finished:
        return None
    half = manager.t_send + 0.5 * (manager.t_done - manager.t_send)
    sent = [s for s in rig.poller.samples if s.ok and manager.t_send <= s.t - s.rtt <= half]
    if not sent:
        return None
    slowest = max(sent, key=lambda s: s.rtt)
    read = {"t_send": rig.rel(slowest.t - slowest.rtt), "t_done": rig.rel(slowest.t), "status": 200}
    return {"canaries": [read], "manager_t_done": rig.rel(manager.t_done)}


async def bulk_probe(ctx: FrameworkContext) -> None:
    t = ctx.timing
    assert t is not None
    n = max(tested_counts(ctx))
    models = five_models(ctx)[:2]
    entries = [ctx.entry(mid, slots=n, distinct=d) for mid, d, _ in models]
    spec = ctx.launch_spec(entries, flagged=True, max_loaded_models=0)
    async with open_rig(ctx, "f5-bulk", spec, [m for m, _, _ in models]) as rig:
        await _refs(rig, models)
        if not ctx.load_too_fast("F5.bulk_ready_first", "ready_idle_first", 3, "the first load", "unload during it"):
            first = await attempts("f5.ready_first", lambda i: ready_first(rig, models))
            ctx.findings.observe("F5.bulk_ready_first", "ready_idle_first", "f5.ready_first", first)
        if not ctx.too_short("F5.no_convoy", "no_convoy"):
            facts = await attempts("f5.no_convoy", lambda i: no_convoy(rig, models, n, hold=i))
            ctx.findings.observe("F5.no_convoy", "unrelated_progress", "f5.no_convoy", facts)
        facts = await attempts("f5.selections", lambda i: selections(rig, models, n, hold=i))
        ctx.findings.observe("F5.bulk_selections", "reversed_overlapping_duplicate", "f5.selections", facts)


async def ready_first(rig: Rig, models: Models) -> Facts:
    """Bulk [B loading, A ready idle] frees A before B's first load finishes (judged by
    judges_f5.ready_first)."""
    t = timing(rig)
    obs = Obs()
    (a, _, _), (b, _, _) = models
    await reset(rig, [a, b])
    await rig.run("warm-a", a)
    cold = await rig.start_run("first-b", b)
    during = await rig.wait(lambda s: s.active(b) >= 1 and s.loaded(b) is False, t.slack_s)
    obs["first_load_seen"] = during is not None and not cold.finished
    bulk = await rig.bulk("unload-b-a", [b, a])
    await anyio.sleep(t.gap_s)
    waiting = not bulk.finished
    registry: dict[str, object] = {"what": "the bulk unload", "manager": bulk.label, "still_waiting": waiting}
    if waiting:
        registry["canaries"] = await canaries(rig, bulk)
        registry["manager_t_done"] = rig.rel(bulk.t_done) if bulk.finished else None
    obs["registry"] = registry
    freed = await rig.wait(lambda s: s.loaded(a) is False, t.slack_s, after=bulk.t_send)
    obs["freed_at"] = rig.rel(freed.t) if freed is not None else None
    obs["settled"] = await rig.settle([cold, bulk], t.slack_s)
    # B's status from the moment its first load was seen: when did it publish the model?
    obs["b_samples"] = rig.samples_of(b, during.t if during is not None else rig.t0)
    published = next((row[0] for row in obs["b_samples"] if row[3]), None)
    obs["published_at"] = published
    # The last sample after the bulk was sent that still showed B loading, unpublished.
    late = [row[0] for row in obs["b_samples"] if row[0] is not None and row[0] >= rig.rel(bulk.t_send) and not row[3]]
    obs["b_unpublished_at"] = max(late) if late else None
    # Both models as each sample showed them from the bulk's send (judges_f5._freed_first).
    obs["joint"] = joint_samples(rig, [a, b], bulk.t_send)
    end = await rig.wait(lambda s: not s.loaded(a) and not s.loaded(b) and s.active(b) == 0, t.slack_s)
    obs["ended_unloaded"] = end is not None
    return rig.observed(obs, [cold, bulk], models=[a, b], tags=_tags(models))


async def no_convoy(rig: Rig, models: Models, n: int, hold: int = 0) -> Facts:
    """While A's bulk unload waits for its work, status and a warm B request progress
    (judged by judges_f5.no_convoy). Each attempt queues one more round of work on A."""
    t = timing(rig)
    obs = Obs(count=n, hold=hold)
    (a, _, _), (b, _, _) = models
    for m in (a, b):
        await rig.run(f"warm-{m}", m)
    busy = [await rig.start_run(f"a-{i}", a) for i in range((2 + hold) * n)]  # rounds of work on A
    obs.wait(
        "A full with queued work",
        await rig.wait(lambda s: s.active(a) >= n and s.queued(a) >= n, t.slack_s) is not None,
    )
    bulk = await rig.bulk("unload-a", [a])
    await anyio.sleep(t.gap_s)
    obs["bulk_waiting"] = not bulk.finished
    status = await rig.start("status", "GET", "/v1/models")
    health = await rig.start("health", "GET", "/health")
    warm = await rig.start_run("warm-b", b)
    obs["settled"] = await rig.settle([*busy, bulk, status, health, warm], t.slack_s)
    return rig.observed(obs, [*busy, bulk, status, health, warm], models=[a, b], tags=_tags(models), busy=_labels(busy))


async def selections(rig: Rig, models: Models, n: int, hold: int = 0) -> Facts:
    """Reversed, overlapping and duplicate bulk selections at once, with work running
    (judged by judges_f5.selections); each attempt queues one more round of that work."""
    ctx = rig.ctx
    t = timing(rig)
    obs = Obs(count=n, hold=hold)
    (a, _, _), (b, _, _) = models
    unknown = ctx.derived_id("unknown")
    for m in (a, b):
        await rig.run(f"warm-{m}", m)
    running = [await rig.start_run(f"{m}-run{i}", m) for i in range((1 + hold) * n) for m in (a, b)]
    obs.wait(
        "work running on both models",
        await rig.wait(lambda s: s.active(a) >= 1 and s.active(b) >= 1, t.slack_s) is not None,
    )
    bulks = [
        await rig.bulk("bulk-ab", [a, b]),
        await rig.bulk("bulk-ba", [b, a]),
        await rig.bulk("bulk-dup", [a, a, b, unknown, b]),
        await rig.start("unload-all", "POST", "/v1/tasks/unload_all_models", {}),
    ]
    obs["settled"] = await rig.settle([*running, *bulks], t.slack_s)
    end = await rig.wait(
        lambda s: (
            not s.loaded(a)
            and not s.loaded(b)
            and s.active(a) == 0
            and s.active(b) == 0
            and s.queued(a) == 0
            and s.queued(b) == 0
        ),
        t.slack_s,
    )
    obs["ended_unloaded"] = end is not None
    after = [await rig.run(f"after-{m}", m) for m in (a, b)]
    return rig.observed(
        obs,
        [*running, *bulks, *after],
        models=[a, b],
        tags=_tags(models),
        unknown=unknown,
        running=_labels(running),
        bulks=_labels(bulks),
        after=_labels(after),
    )
