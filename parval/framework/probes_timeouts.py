"""F1.timeouts on both runtimes: the model ceiling, a shorter request override, timeout
zero (unbounded), a request asking for zero still getting the ceiling, a targeted manager
timing out (and waking the request behind it), and bulk unload ignoring the ceiling.

Two models share one server: `A` with a short per-model `busy_timeout_ms` ceiling and `Z`
with ceiling 0 (unbounded). Every occupant is fresh when a bounded probe arrives, so the
probe takes the waiting path, not the overdue fail-fast path (that is F1.overdue). The
probes record; parval.framework.judges_timeouts judges.
"""

from __future__ import annotations

import anyio

from parval.framework.context import Context
from parval.framework.facts import Obs
from parval.framework.preconditions import BULK_UNLOAD, MANAGEMENT
from parval.framework.probes_f1 import tested_counts
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import timing
from parval.status import Status

FLAGGED_TIMEOUT = "timed out waiting for a slot"


def legacy_timeout_text(ceiling_ms: int) -> str:
    return f"timed out after {ceiling_ms} ms waiting for the inference lock"


def timeout_models(ctx: Context) -> tuple[str, str]:
    return ctx.model_id, ctx.derived_id("t0")


async def occupy_any(rig: Rig, model: str, n: int, obs: Obs) -> list[Flight]:
    """Hold n slots (flagged, observed) or the one legacy lock (no slot fields: a gap)."""
    t = timing(rig)
    if rig.flagged:
        flights = [await rig.start_run(f"occupant{i}", model) for i in range(n)]
        seen = await rig.wait(lambda s: s.active(model) >= n and bool(s.loaded(model)), t.slack_s)
        obs.wait(f"{n} active slot(s)", seen is not None)
        return flights
    flight = await rig.start_run("occupant0", model)
    # Long enough for it to take the lock, short enough that it is not yet "wedged" for the
    # ceiling-bounded caller that follows.
    await anyio.sleep(min(t.gap_s, t.ceiling_ms / 3000))
    return [flight]


async def timeout_checks(rig: Rig, n: int, runtime: str) -> None:
    ctx = rig.ctx
    t = timing(rig)
    a, z = timeout_models(ctx)
    ceiling = t.ceiling_ms
    text = FLAGGED_TIMEOUT if rig.flagged else legacy_timeout_text(ceiling)
    override_text = FLAGGED_TIMEOUT if rig.flagged else legacy_timeout_text(ceiling)
    for m in (a, z):
        await rig.run(f"warm-{m}", m)

    async def case(name: str, model: str, body_timeout: int | None, expect: str | None, bound_ms: int) -> None:
        """One bounded (or unbounded) probe behind fresh occupants (judged by
        judges_timeouts.case)."""
        obs = Obs(case=name, expect=expect, bound_ms=bound_ms, probe=f"probe-{name}")
        occupants = await occupy_any(rig, model, n, obs)
        probe = await rig.run(f"probe-{name}", model, busy_timeout_ms=body_timeout)
        obs["settled"] = await rig.settle(occupants, t.slack_s)
        if not obs.blocked and rig.flagged:
            # A waiter that gave up must leave the queue's accounting too.
            obs["drained"] = await rig.drained([model], t.slack_s)
        facts = rig.observed(obs, [*occupants, probe], occupants=[f.label for f in occupants])
        ctx.findings.observe("F1.timeouts", f"{name}@{runtime}", "timeouts.case", facts)

    await case("request_ceiling", a, None, text, ceiling)
    await case("request_override", z, ceiling, override_text, ceiling)
    await case("timeout_zero", z, None, None, 0)
    await case("request_zero_gets_ceiling", a, 0, text, ceiling)
    await manager_timeout(rig, a, n, runtime, text, ceiling)
    await bulk_ignores_ceiling(rig, a, n, runtime, ceiling)


async def manager_timeout(rig: Rig, model: str, n: int, runtime: str, text: str, ceiling: int) -> None:
    ctx = rig.ctx
    t = timing(rig)
    if ctx.unmet("F1.timeouts", f"manager_timeout@{runtime}", MANAGEMENT):
        return
    spare = rig.flagged and n >= 2
    obs = Obs(expect=text, bound_ms=ceiling, model=model, count=n, spare=spare)
    occupants = await occupy_any(rig, model, n - 1 if spare else n, obs)
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
    if manager.status == 403:
        ctx.findings.add(
            "F1.timeouts",
            f"manager_timeout@{runtime}",
            Status.PENDING,
            "targeted unload needs server.ui_management (403 dynamic model management is disabled)",
        )
        await rig.settle([*occupants, *([later] if later else [])], t.slack_s)
        return
    woke = None
    if later is not None:
        woke = await rig.wait(lambda s: s.active(model) >= n, t.slack_s)
    obs["woke_t"] = rig.rel(woke.t) if woke is not None else None
    # The first occupant completion known when the wake-up was seen (None: none yet).
    obs["occupants_first_done"] = rig.rel(min((f.t_done for f in occupants), default=float("inf")))
    flights = [*occupants, manager, *([later] if later else [])]
    obs["settled"] = await rig.settle(flights, t.slack_s)
    snap_end = rig.poller.latest
    obs["end_sampled"] = snap_end is not None
    obs["end_loaded"] = snap_end.loaded(model) if snap_end is not None else None
    facts = rig.observed(
        obs, flights, occupants=[f.label for f in occupants], later=later.label if later is not None else None
    )
    ctx.findings.observe("F1.timeouts", f"manager_timeout@{runtime}", "timeouts.manager_timeout", facts)


async def bulk_ignores_ceiling(rig: Rig, model: str, n: int, runtime: str, ceiling: int) -> None:
    ctx = rig.ctx
    t = timing(rig)
    if ctx.unmet("F1.timeouts", f"bulk_unbounded@{runtime}", BULK_UNLOAD):
        return
    obs = Obs(bound_ms=ceiling, model=model)
    occupants = await occupy_any(rig, model, n, obs)
    bulk = await rig.bulk("bulk-unload", [model])
    obs["settled"] = await rig.settle([*occupants, bulk], t.slack_s)
    facts = rig.observed(obs, [*occupants, bulk], occupants=[f.label for f in occupants])
    ctx.findings.observe("F1.timeouts", f"bulk_unbounded@{runtime}", "timeouts.bulk_unbounded", facts)


async def flagged_timeouts_probe(ctx: Context) -> None:
    t = ctx.timing
    assert t is not None
    if ctx.too_short("F1.timeouts", "timeouts@flagged"):
        return
    n = max(tested_counts(ctx))
    a, z = timeout_models(ctx)
    models = [ctx.entry(a, slots=n, busy_timeout_ms=t.ceiling_ms), ctx.entry(z, slots=n, busy_timeout_ms=0)]
    async with open_rig(ctx, "f1-timeouts", ctx.launch_spec(models, flagged=True), [a, z]) as rig:
        await timeout_checks(rig, n, "flagged")
