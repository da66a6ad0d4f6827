"""F5: two (or three) models derived from the plan's model, told apart by distinct
session_options so cross-model contamination shows in the outputs.

Residency probes run with max_loaded_models 1 and 2; the bulk probes without a limit.
A retiring model is caught between its logical unload (status shows loaded=false) and the
end of its teardown (the unload has not answered yet); a first load is caught while the
status shows its request active and the model not loaded.
"""

from __future__ import annotations

import time

import anyio

from parval.framework.checks import Verdict
from parval.framework.context import Context
from parval.framework.probes_f1 import tested_counts
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import (
    STALLED,
    all_ok,
    outputs_match,
    references,
    registry_stalled,
    reset,
    timing,
    unloaded_ids,
)
from parval.status import Status

BUSY_LIMIT_TEXT = "every loaded model is busy"


def five_models(ctx: Context) -> list[tuple[str, int | None, str]]:
    """(id, distinct session_options index, reference tag) for A, B and M."""
    return [(ctx.model_id, None, "base"), (ctx.derived_id("b"), 2, "opt2"), (ctx.derived_id("m"), 1, "opt1")]


async def _refs(rig: Rig, models: list[tuple[str, int | None, str]]) -> None:
    for mid, _, tag in models:
        await references(rig, mid, tag)
    await reset(rig, [m for m, _, _ in models])


def _tags(models: list[tuple[str, int | None, str]]) -> dict[str, str]:
    return {m: tag for m, _, tag in models}


async def limit_probe(ctx: Context, limit: int) -> None:
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
        await together(rig, models, n, limit)
        if limit == 2:
            await warm_during_cold(rig, models)
            await unload_together(rig, models, n)
        else:
            await alternate(rig, models)
        await retiring(rig, models, limit)


async def together(rig: Rig, models: list[tuple[str, int | None, str]], n: int, limit: int) -> None:
    """n cold requests to each of A and B at once."""
    t = timing(rig)
    v = Verdict()
    (a, _, _), (b, _, _) = models[0], models[1]
    tags = _tags(models)
    t0 = time.monotonic()
    owned = [(m, await rig.start_run(f"{m}-{i}", m)) for i in range(n) for m in (a, b)]
    flights = [f for _, f in owned]
    v.require(await rig.settle(flights, t.slack_s), "every request completed (no deadlock)")
    window = rig.poller.between(t0, time.monotonic())
    if limit >= 2:
        all_ok(v, flights, "requests")
        both = [s for s in window if s.active(a) >= 1 and s.active(b) >= 1]
        v.require(bool(both), "both models held slots at the same time")
    else:
        odd = [f"{f.label}={f.status}" for f in flights if f.status != 200 and not
               (f.status == 503 and BUSY_LIMIT_TEXT in f.message())]
        v.require(not odd, "each request answered 200 or 503 'max_loaded_models ... every loaded model is busy'"
                  + (f" (got {', '.join(odd)})" if odd else ""))
        v.require(any(f.status == 200 for f in flights), "at least one request was served")
        both = [s for s in window if s.loaded(a) and s.loaded(b)]
        v.require(not both, "never two models loaded under max_loaded_models=1")
    for m in (a, b):
        mine = [f for owner, f in owned if owner == m]
        # Under limit 1 one model may be refused every time (the busy 503 above).
        if limit >= 2 or any(f.status == 200 for f in mine):
            outputs_match(rig, v, tags[m], mine, m)
    v.require(await rig.drained([a, b], t.slack_s), "counters drained afterwards")
    rig.ctx.findings.judge("F5.two_models", f"together@limit{limit}", v, timeline=rig.timeline(flights))


async def warm_during_cold(rig: Rig, models: list[tuple[str, int | None, str]]) -> None:
    """A warm model is not held up by another model's guarded cold load."""
    t = timing(rig)
    v = Verdict()
    (a, _, _), (b, _, tb) = models[0], models[1]
    if t.load_s < 2 * t.gap_s:
        rig.ctx.findings.add("F5.two_models", "warm_during_cold@limit2", Status.PENDING,
                             f"the load takes {t.load_s * 1000:.0f} ms: too fast to overlap with")
        return
    await reset(rig, [a])
    await rig.run("warm-b", b)
    cold = await rig.start_run("cold-a", a)
    during = await rig.wait(lambda s: s.active(a) >= 1 and s.loaded(a) is False, t.slack_s)
    warm = await rig.start_run("warm-b", b)
    v.require(await rig.settle([cold, warm], t.slack_s), "both completed")
    if during is None:
        v.pend("the cold load finished before it could be observed")
    all_ok(v, [cold, warm], "requests")
    lat = warm.reply.elapsed_s if warm.reply else float("inf")
    v.require(lat < t.service_s + t.load_s / 2 and warm.t_done < cold.t_done,
              f"the warm model answered in {lat * 1000:.0f} ms without waiting for the cold load")
    outputs_match(rig, v, tb, [warm], "the warm model")
    rig.ctx.findings.judge("F5.two_models", "warm_during_cold@limit2", v, timeline=rig.timeline([cold, warm]))


async def unload_together(rig: Rig, models: list[tuple[str, int | None, str]], n: int) -> None:
    t = timing(rig)
    v = Verdict()
    (a, _, _), (b, _, _) = models[0], models[1]
    for m in (a, b):
        await rig.run(f"warm-{m}", m)
    running = [await rig.start_run(f"{m}-run{i}", m) for i in range(n) for m in (a, b)]
    # Every request must be admitted (running or queued) before the barrier: one still in
    # flight to the server would rightly queue behind the unload and finish after it.
    seen = await rig.wait(lambda s: s.active(a) >= 1 and s.active(b) >= 1
                          and s.active(a) + s.queued(a) >= n and s.active(b) + s.queued(b) >= n,
                          t.slack_s)
    if seen is None:
        v.block("never observed both models' requests admitted")
    bulk = await rig.bulk("unload-both", [a, b])
    v.require(await rig.settle([*running, bulk], t.slack_s), "everything completed (no deadlock)")
    all_ok(v, [*running, bulk], "requests and the unload")
    v.require(sorted(unloaded_ids(bulk)) == sorted([a, b]), f"both listed once ({unloaded_ids(bulk)})")
    v.require(bulk.t_done >= max(f.t_done for f in running) - t.tol_s, "the unload waited for both models' work")
    end = await rig.wait(lambda s: not s.loaded(a) and not s.loaded(b) and s.active(a) == 0
                         and s.active(b) == 0, t.slack_s)
    v.require(end is not None, "both ended unloaded with drained counters")
    rig.ctx.findings.judge("F5.two_models", "unload_together@limit2", v, timeline=rig.timeline([*running, bulk]))


async def alternate(rig: Rig, models: list[tuple[str, int | None, str]]) -> None:
    """Limit 1: alternating requests evict the idle other model each time."""
    t = timing(rig)
    v = Verdict()
    (a, _, ta), (b, _, tb) = models[0], models[1]
    t0 = time.monotonic()
    seq = [await rig.run(f"alt{i}-{m}", m) for i, m in enumerate((a, b, a))]
    all_ok(v, seq, "alternating requests")
    outputs_match(rig, v, ta, [seq[0], seq[2]], a)
    outputs_match(rig, v, tb, [seq[1]], b)
    both = [s for s in rig.poller.between(t0, time.monotonic()) if s.loaded(a) and s.loaded(b)]
    v.require(not both, "never two models loaded under max_loaded_models=1")
    snap = await rig.wait(lambda s: s.loaded(a) is True and s.loaded(b) is False, t.slack_s)
    v.require(snap is not None, "the last load evicted the idle other model")
    rig.ctx.findings.judge("F5.two_models", "alternate@limit1", v, timeline=rig.timeline(seq))


async def retiring(rig: Rig, models: list[tuple[str, int | None, str]], limit: int) -> None:
    """A model in teardown neither blocks nor evicts an unrelated keeper."""
    t = timing(rig)
    v = Verdict()
    name = f"retiring@limit{limit}"
    if t.teardown_s < 2 * t.gap_s:
        rig.ctx.findings.add("F5.retiring_residency", name, Status.PENDING,
                             f"an idle unload takes {t.teardown_s * 1000:.0f} ms: too fast to load another "
                             "model while it retires (give the model a slower teardown)")
        return
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
    if window is None or unload.finished:
        v.pend("the unload finished before another load could be sent during its teardown")
    t_inc = time.monotonic()
    incoming = await rig.run("incoming", m)
    inc_done = time.monotonic()
    v.require(await rig.settle([unload], t.slack_s), "the unload completed")
    v.require(incoming.status == 200, f"the incoming load was served during the teardown "
              f"(got {incoming.status}: {incoming.message()[:100]})")
    outputs_match(rig, v, tm, [incoming], "the incoming model")
    if keeper is not None:
        lost = [s for s in rig.poller.between(t_inc, inc_done) if s.loaded(keeper) is False]
        end = await rig.wait(lambda s: s.get(keeper) is not None, 2.0)
        v.require(not lost and end is not None and end.loaded(keeper) is True,
                  "the keeper stayed loaded (not evicted because of the retiring model)")
    rig.ctx.findings.judge("F5.retiring_residency", name, v, timeline=rig.timeline([unload, incoming]),
                           teardown_window=window is not None and not unload.finished)


async def bulk_probe(ctx: Context) -> None:
    t = ctx.timing
    assert t is not None
    n = max(tested_counts(ctx))
    models = five_models(ctx)[:2]
    entries = [ctx.entry(mid, slots=n, distinct=d) for mid, d, _ in models]
    spec = ctx.launch_spec(entries, flagged=True, max_loaded_models=0)
    async with open_rig(ctx, "f5-bulk", spec, [m for m, _, _ in models]) as rig:
        await _refs(rig, models)
        await ready_first(rig, models)
        if (short := t.too_short(ctx.options.min_service_ms)) is not None:
            ctx.findings.add("F5.no_convoy", "no_convoy", Status.PENDING, short)
        else:
            await no_convoy(rig, models, n)
        await selections(rig, models, n)


async def ready_first(rig: Rig, models: list[tuple[str, int | None, str]]) -> None:
    """Bulk [B loading, A ready idle] frees A before B's first load finishes."""
    t = timing(rig)
    v = Verdict()
    (a, _, _), (b, _, tb) = models
    await reset(rig, [a, b])
    await rig.run("warm-a", a)
    cold = await rig.start_run("first-b", b)
    during = await rig.wait(lambda s: s.active(b) >= 1 and s.loaded(b) is False, t.slack_s)
    if during is None or cold.finished:
        v.pend("the first load finished before the bulk unload could be sent during it")
    bulk = await rig.bulk("unload-b-a", [b, a])
    await anyio.sleep(t.gap_s)
    if not bulk.finished and await registry_stalled(rig, bulk):
        v.block(STALLED.format(what="the bulk unload"))
    freed = await rig.wait(lambda s: s.loaded(a) is False, t.slack_s, after=bulk.t_send)
    v.require(await rig.settle([cold, bulk], t.slack_s), "everything completed (no deadlock)")
    published = next((s.t for s in rig.poller.between(during.t if during else 0.0, time.monotonic())
                      if s.loaded(b)), None)
    all_ok(v, [cold, bulk], "the first request and the bulk unload")
    outputs_match(rig, v, tb, [cold], b, phase="cold")
    freed_first = freed is not None and freed.t < cold.t_done and (published is None or freed.t < published)
    v.require(bool(v.blockers) or freed_first, "the ready idle model was freed before the first load finished")
    v.require(unloaded_ids(bulk) == [a, b], f"reply lists the ready model first ({unloaded_ids(bulk)})")
    end = await rig.wait(lambda s: not s.loaded(a) and not s.loaded(b) and s.active(b) == 0, t.slack_s)
    v.require(end is not None, "both ended unloaded with drained counters")
    rig.ctx.findings.judge("F5.bulk_ready_first", "ready_idle_first", v, timeline=rig.timeline([cold, bulk]),
                           freed_at=rig.rel(freed.t) if freed else None,
                           published_at=rig.rel(published) if published else None)


async def no_convoy(rig: Rig, models: list[tuple[str, int | None, str]], n: int) -> None:
    """While A's bulk unload waits for its work, status and a warm B request progress."""
    t = timing(rig)
    v = Verdict()
    (a, _, _), (b, _, tb) = models
    for m in (a, b):
        await rig.run(f"warm-{m}", m)
    busy = [await rig.start_run(f"a-{i}", a) for i in range(2 * n)]  # two services of work on A
    if await rig.wait(lambda s: s.active(a) >= n and s.queued(a) >= n, t.slack_s) is None:
        v.block("never observed A full with queued work")
    bulk = await rig.bulk("unload-a", [a])
    await anyio.sleep(t.gap_s)
    if bulk.finished:
        v.pend("A's work finished before the unrelated reads could be sent during the unload")
    status = await rig.start("status", "GET", "/v1/models")
    health = await rig.start("health", "GET", "/health")
    warm = await rig.start_run("warm-b", b)
    v.require(await rig.settle([*busy, bulk, status, health, warm], t.slack_s), "everything completed")
    for f, what in ((status, "GET /v1/models"), (health, "GET /health"), (warm, "the warm request to B")):
        v.require(f.status == 200 and f.t_done < bulk.t_done,
                  f"{what} answered before A's unload finished ({_lead(f, bulk)})")
    outputs_match(rig, v, tb, [warm], "the warm model")
    rig.ctx.findings.judge("F5.no_convoy", "unrelated_progress", v,
                           timeline=rig.timeline([*busy, bulk, status, health, warm]))


def _lead(f: Flight, bulk: Flight) -> str:
    if f.reply is None or bulk.reply is None:
        return "no reply"
    return f"{(bulk.t_done - f.t_done) * 1000:.0f} ms before it"


async def selections(rig: Rig, models: list[tuple[str, int | None, str]], n: int) -> None:
    """Reversed, overlapping and duplicate bulk selections at once, with work running."""
    ctx = rig.ctx
    t = timing(rig)
    v = Verdict()
    (a, _, ta), (b, _, tb) = models
    unknown = ctx.derived_id("unknown")
    for m in (a, b):
        await rig.run(f"warm-{m}", m)
    running = [await rig.start_run(f"{m}-run{i}", m) for i in range(n) for m in (a, b)]
    await rig.wait(lambda s: s.active(a) >= 1 and s.active(b) >= 1, t.slack_s)
    bulks = [
        await rig.bulk("bulk-ab", [a, b]),
        await rig.bulk("bulk-ba", [b, a]),
        await rig.bulk("bulk-dup", [a, a, b, unknown, b]),
        await rig.start("unload-all", "POST", "/v1/tasks/unload_all_models", {}),
    ]
    v.require(await rig.settle([*running, *bulks], t.slack_s),
              f"every selection finished within {t.slack_s:.1f} s (no deadlock)")
    all_ok(v, [*running, *bulks], "requests and bulk unloads")
    for f in bulks:
        ids = unloaded_ids(f)
        v.require(sorted(ids) == sorted([a, b]), f"{f.label} listed each model once ({ids})")
    dup = bulks[2].json()
    v.require(isinstance(dup, dict) and dup.get("not_found") == [unknown], "the unknown id is in not_found")
    end = await rig.wait(lambda s: not s.loaded(a) and not s.loaded(b) and s.active(a) == 0
                         and s.active(b) == 0 and s.queued(a) == 0 and s.queued(b) == 0, t.slack_s)
    v.require(end is not None, "both ended unloaded with drained counters")
    after = [await rig.run(f"after-{m}", m) for m in (a, b)]
    all_ok(v, after, "requests after the selections")
    outputs_match(rig, v, ta, [after[0]], a)
    outputs_match(rig, v, tb, [after[1]], b)
    rig.ctx.findings.judge("F5.bulk_selections", "reversed_overlapping_duplicate", v,
                           timeline=rig.timeline([*running, *bulks]))
