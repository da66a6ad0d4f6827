"""F1.timeouts on both runtimes: the model ceiling, a shorter request override, timeout
zero (unbounded), a request asking for zero still getting the ceiling, a targeted manager
timing out (and waking the request behind it), and bulk unload ignoring the ceiling.

Two models share one server: `A` with a short per-model `busy_timeout_ms` ceiling and `Z`
with ceiling 0 (unbounded). Every occupant is fresh when a bounded probe arrives, so the
probe takes the waiting path, not the overdue fail-fast path (that is F1.overdue).
"""

from __future__ import annotations

import anyio

from parval.framework.checks import Verdict
from parval.framework.context import Context
from parval.framework.preconditions import BULK_UNLOAD, MANAGEMENT
from parval.framework.probes_f1 import tested_counts
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import (
    STALLED,
    all_ok,
    timing,
    unloaded_ids,
)
from parval.status import Status

FLAGGED_TIMEOUT = "timed out waiting for a slot"


def legacy_timeout_text(ceiling_ms: int) -> str:
    return f"timed out after {ceiling_ms} ms waiting for the inference lock"


def timeout_models(ctx: Context) -> tuple[str, str]:
    return ctx.model_id, ctx.derived_id("t0")


async def occupy_any(rig: Rig, model: str, n: int, v: Verdict) -> list[Flight]:
    """Hold n slots (flagged, observed) or the one legacy lock (no slot fields: a gap)."""
    t = timing(rig)
    if rig.flagged:
        flights = [await rig.start_run(f"occupant{i}", model) for i in range(n)]
        if await rig.wait(lambda s: s.active(model) >= n and bool(s.loaded(model)), t.slack_s) is None:
            v.block(f"never observed {n} active slot(s)")
        return flights
    flight = await rig.start_run("occupant0", model)
    # Long enough for it to take the lock, short enough that it is not yet "wedged" for the
    # ceiling-bounded caller that follows.
    await anyio.sleep(min(t.gap_s, t.ceiling_ms / 3000))
    return [flight]


def _bounded(v: Verdict, probe: Flight, bound_ms: int, text: str, tol_s: float) -> None:
    msg = probe.message()
    v.require(probe.status == 503 and text in msg,
              f"503 '{text}' (got {probe.status}: {msg[:120]})")
    lat = probe.reply.elapsed_s if probe.reply else 0.0
    v.require(0.9 * bound_ms / 1000 <= lat < bound_ms / 1000 + tol_s + 0.05,
              f"gave up after {lat * 1000:.0f} ms for a {bound_ms} ms bound")


async def timeout_checks(rig: Rig, n: int, runtime: str) -> None:
    ctx = rig.ctx
    t = timing(rig)
    a, z = timeout_models(ctx)
    ceiling = t.ceiling_ms
    text = FLAGGED_TIMEOUT if rig.flagged else legacy_timeout_text(ceiling)
    override_text = FLAGGED_TIMEOUT if rig.flagged else legacy_timeout_text(ceiling)
    for m in (a, z):
        await rig.run(f"warm-{m}", m)

    async def case(name: str, model: str, body_timeout: int | None, expect: str | None,
                   bound_ms: int) -> None:
        v = Verdict()
        occupants = await occupy_any(rig, model, n, v)
        probe = await rig.run(f"probe-{name}", model, busy_timeout_ms=body_timeout)
        v.require(await rig.settle(occupants, t.slack_s), "occupants completed")
        if not v.blockers:
            all_ok(v, occupants, "occupants")
            if expect is None:
                v.require(probe.status == 200, f"unbounded probe completed 200 (got {probe.status})")
                lat = probe.reply.elapsed_s if probe.reply else 0.0
                v.require(lat >= 0.8 * t.service_s, f"it waited for a slot ({lat * 1000:.0f} ms)")
            else:
                _bounded(v, probe, bound_ms, expect, t.tol_s)
            if rig.flagged:
                # A waiter that gave up must leave the queue's accounting too.
                v.require(await rig.drained([model], t.slack_s),
                          "counters drained afterwards (no timed-out request stays counted as queued)")
        ctx.findings.judge("F1.timeouts", f"{name}@{runtime}", v, timeline=rig.timeline([*occupants, probe]))

    await case("request_ceiling", a, None, text, ceiling)
    await case("request_override", z, ceiling, override_text, ceiling)
    await case("timeout_zero", z, None, None, 0)
    await case("request_zero_gets_ceiling", a, 0, text, ceiling)
    await manager_timeout(rig, a, n, runtime, text, ceiling)
    await bulk_ignores_ceiling(rig, a, n, runtime, ceiling)


async def manager_timeout(rig: Rig, model: str, n: int, runtime: str, text: str, ceiling: int) -> None:
    ctx = rig.ctx
    t = timing(rig)
    v = Verdict()
    if ctx.unmet("F1.timeouts", f"manager_timeout@{runtime}", MANAGEMENT):
        return
    spare = rig.flagged and n >= 2
    occupants = await occupy_any(rig, model, n - 1 if spare else n, v)
    manager = await rig.start("unload", "POST", "/v1/models/unload", {"id": model})
    later: Flight | None = None
    if spare:
        await anyio.sleep(t.gap_s)
        # A spare slot exists, yet the request must queue behind the waiting manager.
        later = await rig.start_run("behind-manager", model)
        snap = await rig.wait(lambda s: s.queued(model) >= 1 or s.active(model) >= n, t.slack_s)
        if snap is None:
            v.block("the request behind the manager was never observed queued")
        elif snap.queued(model) < 1 and not manager.finished:
            v.block("the request behind the manager took the spare slot instead of queueing (FIFO "
                    "barging, judged by F1.fifo)")
        elif snap.queued(model) < 1:
            v.block(STALLED.format(what="the targeted unload") + " (the request reached the "
                    "scheduler only after the manager gave up)")
    await manager.done.wait()
    if manager.status == 403:
        ctx.findings.add("F1.timeouts", f"manager_timeout@{runtime}", Status.PENDING,
                         "targeted unload needs server.ui_management (403 dynamic model management is disabled)")
        await rig.settle([*occupants, *([later] if later else [])], t.slack_s)
        return
    woke = None
    if later is not None:
        woke = await rig.wait(lambda s: s.active(model) >= n, t.slack_s)
    done_first = min(f.t_done for f in occupants) if occupants else float("inf")
    flights = [*occupants, manager, *([later] if later else [])]
    v.require(await rig.settle(flights, t.slack_s), "everything completed within bound")
    if not v.blockers:
        _bounded(v, manager, ceiling, text, t.tol_s)
        all_ok(v, [*occupants, *([later] if later else [])], "requests")
        snap = rig.poller.latest
        v.require(snap is not None and snap.loaded(model) is not False,
                  "the model stayed loaded (the timed-out unload did nothing)")
        if later is not None:
            v.require(woke is not None and woke.t < done_first,
                      "the manager giving up woke the request queued behind it (it took the spare "
                      "slot before the occupants finished)")
    ctx.findings.judge("F1.timeouts", f"manager_timeout@{runtime}", v, timeline=rig.timeline(flights))


async def bulk_ignores_ceiling(rig: Rig, model: str, n: int, runtime: str, ceiling: int) -> None:
    ctx = rig.ctx
    t = timing(rig)
    v = Verdict()
    if ctx.unmet("F1.timeouts", f"bulk_unbounded@{runtime}", BULK_UNLOAD):
        return
    occupants = await occupy_any(rig, model, n, v)
    bulk = await rig.bulk("bulk-unload", [model])
    v.require(await rig.settle([*occupants, bulk], t.slack_s), "everything completed within bound")
    if not v.blockers:
        lat = bulk.reply.elapsed_s if bulk.reply else 0.0
        v.require(bulk.status == 200 and model in unloaded_ids(bulk),
                  f"bulk unload answered 200 listing the model (got {bulk.status})")
        v.require(lat * 1000 > ceiling, f"it waited {lat * 1000:.0f} ms, beyond the {ceiling} ms ceiling "
                  "(bulk waits are unbounded)")
    ctx.findings.judge("F1.timeouts", f"bulk_unbounded@{runtime}", v,
                       timeline=rig.timeline([*occupants, bulk]))


async def flagged_timeouts_probe(ctx: Context) -> None:
    t = ctx.timing
    assert t is not None
    if (short := t.too_short(ctx.options.min_service_ms)) is not None:
        ctx.findings.add("F1.timeouts", "timeouts@flagged", Status.PENDING, short)
        return
    n = max(tested_counts(ctx))
    a, z = timeout_models(ctx)
    models = [ctx.entry(a, slots=n, busy_timeout_ms=t.ceiling_ms), ctx.entry(z, slots=n, busy_timeout_ms=0)]
    async with open_rig(ctx, "f1-timeouts", ctx.launch_spec(models, flagged=True), [a, z]) as rig:
        await timeout_checks(rig, n, "flagged")
