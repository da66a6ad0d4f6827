"""F2 on the flagged runtime: unload during a first load, reconfiguration with queued work
(invalid replacements, runtime selection and same-ID publication: probes_f2_registration;
deferred-callback leases: probes_f2_callback); plus the overlapping-managers part of F1.fifo
(two reconfigurations in observed order).

Configurations are told apart by their outputs: the probes file's distinct
session_options make the same request produce a different output per configuration
(checked first; identical outputs leave the configuration checks PENDING).

The probes record; parval.framework.judges_f2 judges.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import anyio

from parval.framework.context import Context
from parval.framework.facts import Facts, Obs
from parval.framework.preconditions import BULK_UNLOAD, MANAGEMENT
from parval.framework.probes_f1 import tested_counts
from parval.framework.probes_f2_registration import Reconf, invalid_replacement, runtime_immutable, same_id
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import (
    attempts,
    canaries,
    enqueue,
    occupy,
    own_references,
    reset,
    stagger_manager,
    timing,
)
from parval.status import Status

NEEDS_UI = "needs server.ui_management (403 dynamic model management is disabled)"


# -- unload during the first load --------------------------------------------------------------


async def unload_load_probe(ctx: Context) -> None:
    t = ctx.timing
    assert t is not None
    n = max(tested_counts(ctx))
    bulk_m, single_m = ctx.model_id, ctx.derived_id("targeted")
    models = [ctx.entry(bulk_m, slots=n), ctx.entry(single_m, slots=n)]
    async with open_rig(ctx, "f2-unload-load", ctx.launch_spec(models, flagged=True), [bulk_m, single_m]) as rig:
        if not ctx.unmet("F2.unload_vs_load", "bulk_during_first_load", BULK_UNLOAD):
            await unload_during_load(
                rig, bulk_m, "bulk_during_first_load", "POST", "/v1/tasks/unload_models", {"model_ids": [bulk_m]}
            )
        if not ctx.unmet("F2.unload_vs_load", "targeted_during_first_load", MANAGEMENT, BULK_UNLOAD):
            await own_references(rig, single_m)
            await unload_during_load(
                rig, single_m, "targeted_during_first_load", "POST", "/v1/models/unload", {"id": single_m}
            )


async def unload_during_load(rig: Rig, model: str, name: str, method: str, path: str, body: dict[str, object]) -> None:
    """An unload sent while the first load runs (judged by judges_f2.unload_during_load),
    tried again on a cold model while the load finished before it could be caught."""
    forbidden: list[bool] = []

    async def attempt(i: int) -> Facts:
        facts, refused = await unload_during_load_once(rig, model, method, path, body, cold=i > 0)
        forbidden.append(refused)
        return facts

    facts = await attempts("f2.unload_during_load", attempt)
    if any(forbidden):
        rig.ctx.findings.add("F2.unload_vs_load", name, Status.PENDING, NEEDS_UI)
        return
    rig.ctx.findings.observe("F2.unload_vs_load", name, "f2.unload_during_load", facts)


async def unload_during_load_once(
    rig: Rig, model: str, method: str, path: str, body: dict[str, object], *, cold: bool
) -> tuple[Facts, bool]:
    """One attempt: (facts, whether the unload was refused 403)."""
    t = timing(rig)
    obs = Obs(model=model)
    if cold:
        await reset(rig, [model])
    first = await rig.start_run("first", model)
    during = await rig.wait(lambda s: s.active(model) >= 1 and s.loaded(model) is False, t.slack_s)
    obs["in_progress"] = during is not None and not first.finished
    unload = await rig.start("unload", method, path, body)
    await anyio.sleep(t.gap_s)
    # Status reads while the unload still waits (observed.stalled judges them).
    obs["stall"] = (
        None
        if unload.finished
        else {
            "canaries": await canaries(rig, unload),
            "manager_t_done": rig.rel(unload.t_done) if unload.finished else None,
        }
    )
    obs["settled"] = await rig.settle([first, unload], t.slack_s)
    if unload.status == 403:
        return {"in_progress": False, "waits": obs["waits"]}, True
    obs["samples"] = rig.samples_of(model, first.t_send, unload.t_done)
    end = await rig.wait(
        lambda s: s.loaded(model) is False and s.active(model) == 0 and s.queued(model) == 0, t.slack_s
    )
    obs["ended_unloaded"] = end is not None
    obs["publication_observed"] = any(row[3] for row in obs["samples"])
    return rig.observed(obs, [first, unload]), False


# -- reconfiguration ---------------------------------------------------------------------------


async def reconfigure_probe(ctx: Context) -> None:
    t = ctx.timing
    assert t is not None
    n = max(tested_counts(ctx))
    model = ctx.model_id
    spec = ctx.launch_spec([ctx.entry(model, slots=n)], flagged=True)
    async with open_rig(ctx, "f2-reconfigure", spec, [model]) as rig:
        rc = Reconf(rig, model, n)
        await rig.run("warm", model)
        first = await rc.to("config-opt0", 0)
        if first.status == 403:
            for aid, name in (
                ("F2.reconfigure_queued", "reconfigure_queued"),
                ("F2.invalid_replacement", "invalid_replacement"),
                ("F2.same_id", "same_id"),
                ("F1.fifo", "overlapping_managers"),
            ):
                ctx.findings.add(aid, name, Status.PENDING, NEEDS_UI)
            return
        distinct = await config_refs(rig, rc)
        short = t.too_short(ctx.options.min_service_ms)
        for aid, name, fn, key in (
            ("F2.reconfigure_queued", f"queued_before_barrier@{n}", queued_before_barrier, "f2.queued_before_barrier"),
            ("F2.reconfigure_queued", f"unload_not_undone@{n}", unload_not_undone, "f2.unload_not_undone"),
            ("F1.fifo", f"overlapping_managers@{n}", overlapping_managers, "f2.overlapping_managers"),
        ):
            if short is not None:
                ctx.findings.add(aid, name, Status.PENDING, short)
            elif not distinct and fn is not unload_not_undone:
                ctx.findings.add(
                    aid,
                    name,
                    Status.PENDING,
                    "the distinct session_options did not change the output, so the "
                    "configuration a request used cannot be told; set distinct_session_options",
                )
            else:
                facts = await attempts(key, functools.partial(_attempt, fn, rig, rc))
                ctx.findings.observe(aid, name, key, facts)
        await invalid_replacement(rig, rc)
        await runtime_immutable(rig, rc)
        await same_id(rig)


async def _attempt(fn: Callable[..., Awaitable[Facts]], rig: Rig, rc: Reconf, attempt: int) -> Facts:
    return await fn(rig, rc, hold=attempt)


async def config_refs(rig: Rig, rc: Reconf) -> bool:
    """References for two other configurations; True when all three outputs differ."""
    for i in (0, 1):
        reply = await rc.to(f"config-opt{i}", i)
        if reply.status != 200:
            return False
        chain = [await rig.run(f"ref-opt{i}-{k}", rc.model) for k in range(2)]
        rig.ctx.add_refs(rc.model, f"opt{i}", [rig.output(f) for f in chain])
    await rc.to("config-base", None)
    sets = [rig.ctx.ref_outputs(rc.model, tag) for tag in ("base", "opt0", "opt1")]
    return all(sets) and all(not (a & b) for i, a in enumerate(sets) for b in sets[i + 1 :])


async def held(rig: Rig, rc: Reconf, obs: Obs, hold: int) -> list[Flight]:
    """n occupants and `hold` more rounds of n queued behind them, so the slots stay busy
    until a slow machine has queued the whole situation."""
    occupants = await occupy(rig, rc.model, rc.n, obs)
    for k in range(hold * rc.n):
        occupants.append(await enqueue(rig, rc.model, f"occupant{rc.n + k}", obs))
    return occupants


async def queued_before_barrier(rig: Rig, rc: Reconf, hold: int = 0) -> Facts:
    """Under opt0: a queued request, then reconfiguration to base, then a later request
    (judged by judges_f2.queued_before_barrier)."""
    t = timing(rig)
    obs = Obs(count=rc.n, hold=hold)
    await rc.to("config-opt0", 0)
    occupants = await held(rig, rc, obs, hold)
    older = await enqueue(rig, rc.model, "older", obs)
    manager = await rc.start("reconfigure-base", None)
    await stagger_manager(rig, manager, obs, "the reconfiguration", [*occupants, older])
    later = await enqueue(rig, rc.model, "later", obs) if not obs.blocked else await rig.start_run("later", rc.model)
    flights = [*occupants, older, manager, later]
    obs["settled"] = await rig.settle(flights, t.slack_s)
    obs["drained"] = await rig.drained([rc.model], t.slack_s)
    rig.ctx.log.append("reconfigure_queued", rig=rig.name, timeline=rig.timeline(flights))
    return rig.observed(obs, flights, occupants=[f.label for f in occupants])


async def unload_not_undone(rig: Rig, rc: Reconf, hold: int = 0) -> Facts:
    """A queued request, then a targeted unload: the model must end unloaded (judged by
    judges_f2.unload_not_undone)."""
    t = timing(rig)
    obs = Obs(count=rc.n, hold=hold)
    await rig.run("warm", rc.model)
    occupants = await held(rig, rc, obs, hold)
    older = await enqueue(rig, rc.model, "older", obs)
    manager = await rig.start("unload", "POST", "/v1/models/unload", {"id": rc.model})
    await stagger_manager(rig, manager, obs, "the unload", [*occupants, older])
    flights = [*occupants, older, manager]
    obs["settled"] = await rig.settle(flights, t.slack_s)
    if not obs.blocked:
        end = await rig.wait(lambda s: s.active(rc.model) == 0 and s.queued(rc.model) == 0, t.slack_s)
        obs["ended_unloaded"] = end is not None and end.loaded(rc.model) is False
    rig.ctx.log.append("unload_not_undone", rig=rig.name, timeline=rig.timeline(flights))
    return rig.observed(obs, flights, occupants=[f.label for f in occupants])


async def overlapping_managers(rig: Rig, rc: Reconf, hold: int = 0) -> Facts:
    """Two reconfigurations queued behind work, then a request: enqueue order holds (judged
    by judges_f2.overlapping_managers)."""
    t = timing(rig)
    obs = Obs(count=rc.n, hold=hold)
    await rig.run("warm", rc.model)
    occupants = await held(rig, rc, obs, hold)
    m1 = await rc.start("reconfigure-opt0", 0)
    await stagger_manager(rig, m1, obs, "the first reconfiguration", occupants)
    m2 = await rc.start("reconfigure-opt1", 1)
    await stagger_manager(rig, m2, obs, "the second reconfiguration", [*occupants, m1])
    later = await enqueue(rig, rc.model, "later", obs) if not obs.blocked else await rig.start_run("later", rc.model)
    flights = [*occupants, m1, m2, later]
    obs["settled"] = await rig.settle(flights, t.slack_s)
    await rc.to("config-base", None)
    obs["drained"] = await rig.drained([rc.model], t.slack_s)
    rig.ctx.log.append("overlapping_managers", rig=rig.name, timeline=rig.timeline(flights))
    return rig.observed(obs, flights, occupants=[f.label for f in occupants])
