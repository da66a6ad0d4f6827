"""The unflagged (legacy) runtime of the candidate: the original guard's admission, every
explicit slots form rejected, one legacy session from concurrent first requests, the
upstream unpublished-load skip of legacy bulk unload, and F1.timeouts on this path."""

from __future__ import annotations

from typing import Any

import anyio

from parval.errors import ServerStartError
from parval.framework.checks import Verdict
from parval.framework.context import Context
from parval.framework.preconditions import BULK_UNLOAD, LOADED, MANAGEMENT
from parval.framework.probes_timeouts import timeout_checks, timeout_models
from parval.framework.rig import Rig, open_rig
from parval.framework.scenarios import (
    all_ok,
    model_count,
    outputs_match,
    own_references,
    timing,
    unloaded_ids,
)
from parval.runners.server import spawn, wait_ready
from parval.status import Status

SLOTS_FORMS: list[Any] = [1, 2, None, False, "4"]
LEGACY_SLOTS_TEXT = "slots requires --parallel-jobs at server startup"
SLOT_FIELDS = ("slots", "active_slots", "queued_requests", "max_parallel_slots")


async def legacy_probe(ctx: Context) -> None:
    t = ctx.timing
    assert t is not None
    a, z = timeout_models(ctx)
    w = ctx.derived_id("legacy-w")
    models = [ctx.entry(a, busy_timeout_ms=t.ceiling_ms), ctx.entry(z, busy_timeout_ms=0),
              ctx.entry(w, busy_timeout_ms=0)]
    spec = ctx.launch_spec(models, flagged=False)
    async with open_rig(ctx, "legacy", spec, [a, z, w]) as rig:
        await own_references(rig, z)
        await first_session(rig, z)
        await unpublished_skip(rig, w)
        if (short := t.too_short(ctx.options.min_service_ms)) is not None:
            ctx.findings.add("F1.timeouts", "timeouts@legacy", Status.PENDING, short)
        else:
            await timeout_checks(rig, 1, "legacy")
            await guard_serializes(rig, z)
            await wedged_text(rig, z)
        await status_fields(rig)
        await registration_forms(rig)
    await config_forms(ctx)


async def first_session(rig: Rig, model: str) -> None:
    """Concurrent first requests on the legacy path publish one session, then serve it."""
    t = timing(rig)
    v = Verdict()
    flights = [await rig.start_run(f"first{i}", model) for i in range(3)]
    v.require(await rig.settle(flights, t.slack_s), "every first request completed")
    all_ok(v, flights, "concurrent first requests")
    outputs_match(rig, v, "base", flights, "legacy first-request")
    if rig.ctx.caps.loaded:
        snap = rig.poller.latest
        v.require(snap is not None and snap.loaded(model) is True, "the model ended loaded")
    else:
        v.pend("the server publishes no `loaded` field, so the published session is not observable")
    rig.ctx.findings.judge("F2.first_publish", "legacy_one_session", v, timeline=rig.timeline(flights))


async def unpublished_skip(rig: Rig, model: str) -> None:
    """Legacy bulk unload keeps upstream's skip of a load that is not yet published."""
    t = timing(rig)
    v = Verdict()
    if rig.ctx.unmet("F2.unload_vs_load", "legacy_unpublished_skip", BULK_UNLOAD, LOADED):
        return
    if t.load_s < 3 * t.gap_s:
        rig.ctx.findings.add("F2.unload_vs_load", "legacy_unpublished_skip", Status.PENDING,
                             f"the first load takes {t.load_s * 1000:.0f} ms: too fast to unload while it "
                             "is in progress")
        return
    first = await rig.start_run("first", model)
    await anyio.sleep(t.gap_s)
    during = rig.poller.latest
    bulk = await rig.call("bulk-unload", "POST", "/v1/tasks/unload_models", {"model_ids": [model]})
    v.require(await rig.settle([first], t.slack_s), "the first request completed")
    if during is not None and during.loaded(model) is True:
        v.block("the load was already published when the unload was sent")
    else:
        v.require(bulk.status == 200 and model not in unloaded_ids(bulk),
                  f"bulk unload answered at once without the unpublished model (unloaded={unloaded_ids(bulk)})")
        v.require(bulk.t_done < first.t_done - t.tol_s, "it did not wait for the load in progress")
        all_ok(v, [first], "the first request")
        ended = await rig.wait(lambda s: s.loaded(model) is True, t.slack_s)
        v.require(ended is not None, "the model ended loaded (the skipped load was published)")
    rig.ctx.findings.judge("F2.unload_vs_load", "legacy_unpublished_skip", v,
                           timeline=rig.timeline([first, bulk]))


async def guard_serializes(rig: Rig, model: str) -> None:
    """The original guard: concurrent requests to one model run one after another."""
    t = timing(rig)
    v = Verdict()
    await rig.run("warm", model)
    flights = [await rig.start_run(f"concurrent{i}", model) for i in range(3)]
    v.require(await rig.settle(flights, t.slack_s), "every request completed")
    all_ok(v, flights, "requests")
    done = sorted(f.t_done for f in flights)
    gaps = [b - a for a, b in zip(done, done[1:], strict=False)]
    v.require(all(g >= 0.6 * t.service_s for g in gaps),
              f"completions a service apart ({[round(g * 1000) for g in gaps]} ms)")
    rig.ctx.findings.judge("F1.legacy_admission", "guard_serializes", v, timeline=rig.timeline(flights))


async def wedged_text(rig: Rig, model: str) -> None:
    """A holder older than the caller's bound is treated as wedged: immediate 503."""
    t = timing(rig)
    v = Verdict()
    bound = t.overdue_ms
    holder = await rig.start_run("holder", model)
    await anyio.sleep(bound / 1000 + t.gap_s)
    probe = await rig.run("probe", model, busy_timeout_ms=bound)
    v.require(await rig.settle([holder], t.slack_s), "the holder completed")
    msg = probe.message()
    v.require(probe.status == 503 and "current inference has run" in msg and "likely wedged" in msg,
              f"503 'current inference has run ... likely wedged' (got {probe.status}: {msg[:120]})")
    lat = probe.reply.elapsed_s * 1000 if probe.reply else 0.0
    v.require(lat < bound + t.tol_s * 1000, f"rejected in {lat:.0f} ms against its {bound} ms bound "
              "(the wedged text is only produced before waiting)")
    rig.ctx.findings.judge("F1.legacy_admission", "guard_wedged_fail_fast", v,
                           timeline=rig.timeline([holder, probe]))


async def status_fields(rig: Rig) -> None:
    v = Verdict()
    reply = await rig.call("models", "GET", "/v1/models")
    body = reply.json()
    entries = body.get("data", []) if isinstance(body, dict) else []
    present = sorted({k for e in entries if isinstance(e, dict) for k in SLOT_FIELDS if k in e})
    v.require(bool(entries) and not present, f"legacy /v1/models has no slot fields (found {present})")
    rig.ctx.findings.judge("F1.legacy_admission", "no_slot_fields", v)


async def registration_forms(rig: Rig) -> None:
    """POST /v1/models/load with every explicit slots form: 400 and no state change."""
    ctx = rig.ctx
    v = Verdict()
    if ctx.unmet("F1.legacy_admission", "registration_slots_forms", MANAGEMENT):
        return
    before = (await rig.call("health-before", "GET", "/health")).json()
    results = []
    for i, value in enumerate(SLOTS_FORMS):
        body = ctx.registration(ctx.entry(ctx.derived_id(f"slots{i}"), slots=value))
        reply = await rig.call(f"register-slots-{value!r}", "POST", "/v1/models/load", body)
        results.append({"slots": value, "status": reply.status, "message": reply.message()[:160]})
    if any(r["status"] == 403 for r in results):
        ctx.findings.add("F1.legacy_admission", "registration_slots_forms", Status.PENDING,
                         "registration needs server.ui_management (403 dynamic model management is disabled)",
                         results=results)
        return
    for r in results:
        v.require(r["status"] == 400 and r["message"] == LEGACY_SLOTS_TEXT,
                  f"slots={r['slots']!r} rejected 400 '{LEGACY_SLOTS_TEXT}' (got {r['status']})")
    after = (await rig.call("health-after", "GET", "/health")).json()
    v.require(model_count(before) == model_count(after),
              f"registered model count unchanged ({model_count(before)} -> {model_count(after)})")
    ctx.findings.judge("F1.legacy_admission", "registration_slots_forms", v, results=results)


async def config_forms(ctx: Context) -> None:
    """An unflagged start with an explicit slots field in the config fails with the text."""
    v = Verdict()
    seen = []
    for value in (1, None):
        spec = ctx.launch_spec([ctx.entry(slots=value)], flagged=False)
        name = f"legacy-config-slots-{value}"
        server = spawn(spec, ctx.run_dir / "servers" / name, name)
        try:
            await wait_ready(server, min(30.0, ctx.ready_timeout_s))
            exited = False
        except ServerStartError:
            exited = server.exit_code is not None
        stderr = server.stderr_text()
        await server.stop(5.0)
        seen.append({"slots": value, "exit_code": server.exit_code, "message": LEGACY_SLOTS_TEXT in stderr})
        v.require(exited and server.exit_code == 1 and LEGACY_SLOTS_TEXT in stderr,
                  f"config slots={value!r}: startup failed with exit 1 and the rejection text")
    ctx.findings.judge("F1.legacy_admission", "config_slots_rejected", v, starts=seen)
