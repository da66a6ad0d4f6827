"""F1.timeouts on both runtimes: the model ceiling, a shorter request override, timeout
zero (unbounded), a request asking for zero still getting the ceiling, a targeted manager
timing out (and waking the request behind it), and bulk unload ignoring the ceiling.

Two models share one server: `A` with a short per-model `busy_timeout_ms` ceiling and `Z`
with ceiling 0 (unbounded). Every occupant is fresh when a bounded probe arrives, so the
probe takes the waiting path, not the overdue fail-fast path (that is F1.overdue). The
probes record; parval.framework.judges_timeouts judges.
"""

from __future__ import annotations

import functools
import time

import anyio

from parval.framework.context import Context
from parval.framework.facts import Facts, Obs
from parval.framework.preconditions import BULK_UNLOAD, MANAGEMENT
from parval.framework.probes_f1 import tested_counts
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import attempts, enqueue, reset, timing
from parval.framework.settings import Timing
from parval.status import Status

FLAGGED_TIMEOUT = "timed out waiting for a slot"


def legacy_timeout_text(ceiling_ms: int) -> str:
    return f"timed out after {ceiling_ms} ms waiting for the inference lock"


def timeout_models(ctx: Context) -> tuple[str, str, str]:
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
        judges_timeouts.case)."""
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
    flagged runtime (judged by judges_timeouts.manager_timeout)."""
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
    # request behind it took the spare slot (judges_timeouts._woke).
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
        skips a load in progress). Judged by judges_timeouts.bulk_unbounded."""
        obs = Obs(bound_ms=ceiling, model=model, attempt=i)
        await rig.run(f"warm-{model}", model)
        occupants = await occupy_any(rig, model, n, obs, cold=rig.flagged)
        bulk = await rig.bulk("bulk-unload", [model])
        obs["settled"] = await rig.settle([*occupants, bulk], t.slack_s)
        return rig.observed(obs, [*occupants, bulk], occupants=[f.label for f in occupants])

    facts = await attempts("timeouts.bulk_unbounded", attempt)
    ctx.findings.observe("F1.timeouts", f"bulk_unbounded@{runtime}", "timeouts.bulk_unbounded", facts)


async def flagged_timeouts_probe(ctx: Context) -> None:
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
