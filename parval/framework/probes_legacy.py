"""The unflagged (legacy) runtime of the candidate: the original guard's admission, every
explicit slots form rejected, one legacy session from concurrent first requests, the
upstream unpublished-load skip of legacy bulk unload, and F1.timeouts on this path. The
probes record; parval.framework.judges_legacy judges."""

from __future__ import annotations

from typing import Any

import anyio

from parval.errors import ServerStartError
from parval.framework.context import Context
from parval.framework.facts import Obs
from parval.framework.judges_legacy import LEGACY_SLOTS_TEXT
from parval.framework.preconditions import BULK_UNLOAD, LOADED, MANAGEMENT
from parval.framework.probes_timeouts import timeout_checks, timeout_models
from parval.framework.rig import Rig, open_rig
from parval.framework.scenarios import model_count, own_references, timing
from parval.server.process import spawn, wait_ready
from parval.status import Status

SLOTS_FORMS: list[Any] = [1, 2, None, False, "4"]


async def legacy_probe(ctx: Context) -> None:
    t = ctx.timing
    assert t is not None
    a, z = timeout_models(ctx)
    w = ctx.derived_id("legacy-w")
    models = [
        ctx.entry(a, busy_timeout_ms=t.ceiling_ms),
        ctx.entry(z, busy_timeout_ms=0),
        ctx.entry(w, busy_timeout_ms=0),
    ]
    spec = ctx.launch_spec(models, flagged=False)
    async with open_rig(ctx, "legacy", spec, [a, z, w]) as rig:
        await own_references(rig, z)
        await first_session(rig, z)
        await unpublished_skip(rig, w)
        if not ctx.too_short("F1.timeouts", "timeouts@legacy"):
            await timeout_checks(rig, 1, "legacy")
            await guard_serializes(rig, z)
            await wedged_text(rig, z)
        await status_fields(rig)
        await registration_forms(rig)
    await config_forms(ctx)


async def first_session(rig: Rig, model: str) -> None:
    """Concurrent first requests on the legacy path publish one session, then serve it
    (judged by judges_legacy.first_session)."""
    t = timing(rig)
    obs = Obs(model=model, loaded_published=bool(rig.ctx.caps.loaded))
    flights = [await rig.start_run(f"first{i}", model) for i in range(3)]
    obs["settled"] = await rig.settle(flights, t.slack_s)
    snap = rig.poller.latest
    obs["end_loaded"] = snap.loaded(model) if snap is not None else None
    rig.ctx.findings.observe(
        "F2.first_publish", "legacy_one_session", "legacy.first_session", rig.observed(obs, flights)
    )


async def unpublished_skip(rig: Rig, model: str) -> None:
    """Legacy bulk unload keeps upstream's skip of a load that is not yet published
    (judged by judges_legacy.unpublished_skip)."""
    t = timing(rig)
    if rig.ctx.unmet("F2.unload_vs_load", "legacy_unpublished_skip", BULK_UNLOAD, LOADED):
        return
    if rig.ctx.load_too_fast(
        "F2.unload_vs_load", "legacy_unpublished_skip", 3, "the first load", "unload while it is in progress"
    ):
        return
    obs = Obs(model=model)
    first = await rig.start_run("first", model)
    await anyio.sleep(t.gap_s)
    during = rig.poller.latest
    # `loaded` of the last sample before the unload was sent (None: not sampled).
    obs["during_loaded"] = during.loaded(model) if during is not None else None
    bulk = await rig.call("bulk-unload", "POST", "/v1/tasks/unload_models", {"model_ids": [model]})
    obs["settled"] = await rig.settle([first], t.slack_s)
    if obs["during_loaded"] is not True:
        ended = await rig.wait(lambda s: s.loaded(model) is True, t.slack_s)
        obs["ended_loaded"] = ended is not None
    rig.ctx.findings.observe(
        "F2.unload_vs_load", "legacy_unpublished_skip", "legacy.unpublished_skip", rig.observed(obs, [first, bulk])
    )


async def guard_serializes(rig: Rig, model: str) -> None:
    """The original guard: concurrent requests to one model run one after another (judged
    by judges_legacy.guard_serializes)."""
    t = timing(rig)
    obs = Obs()
    await rig.run("warm", model)
    flights = [await rig.start_run(f"concurrent{i}", model) for i in range(3)]
    obs["settled"] = await rig.settle(flights, t.slack_s)
    rig.ctx.findings.observe(
        "F1.legacy_admission", "guard_serializes", "legacy.guard_serializes", rig.observed(obs, flights)
    )


async def wedged_text(rig: Rig, model: str) -> None:
    """A holder older than the caller's bound is treated as wedged: immediate 503 (judged by
    judges_legacy.wedged_text)."""
    t = timing(rig)
    bound = t.overdue_ms
    obs = Obs(bound_ms=bound)
    holder = await rig.start_run("holder", model)
    await anyio.sleep(bound / 1000 + t.gap_s)
    probe = await rig.run("probe", model, busy_timeout_ms=bound)
    obs["settled"] = await rig.settle([holder], t.slack_s)
    rig.ctx.findings.observe(
        "F1.legacy_admission", "guard_wedged_fail_fast", "legacy.wedged_text", rig.observed(obs, [holder, probe])
    )


async def status_fields(rig: Rig) -> None:
    """GET /v1/models on the legacy runtime (judged by judges_legacy.status_fields)."""
    obs = Obs()
    reply = await rig.call("models", "GET", "/v1/models")
    body = reply.json()
    entries = body.get("data", []) if isinstance(body, dict) else []
    entries = entries if isinstance(entries, list) else []
    # The keys of every listed entry (the body itself may be too large for the fact).
    obs["entries"] = [sorted(map(str, e)) if isinstance(e, dict) else None for e in entries]
    rig.ctx.findings.observe(
        "F1.legacy_admission", "no_slot_fields", "legacy.status_fields", rig.observed(obs, [reply])
    )


async def registration_forms(rig: Rig) -> None:
    """POST /v1/models/load with every explicit slots form: 400 and no state change (judged
    by judges_legacy.registration_forms)."""
    ctx = rig.ctx
    if ctx.unmet("F1.legacy_admission", "registration_slots_forms", MANAGEMENT):
        return
    obs = Obs()
    calls = [await rig.call("health-before", "GET", "/health")]
    before = calls[0].json()
    results = []
    for i, value in enumerate(SLOTS_FORMS):
        body = ctx.registration(ctx.entry(ctx.derived_id(f"slots{i}"), slots=value))
        reply = await rig.call(f"register-slots-{value!r}", "POST", "/v1/models/load", body)
        calls.append(reply)
        results.append({"slots": value, "status": reply.status, "message": reply.message()[:160]})
    if any(r["status"] == 403 for r in results):
        ctx.findings.add(
            "F1.legacy_admission",
            "registration_slots_forms",
            Status.PENDING,
            "registration needs server.ui_management (403 dynamic model management is disabled)",
            results=results,
        )
        return
    calls.append(await rig.call("health-after", "GET", "/health"))
    after = calls[-1].json()
    obs["results"] = results
    obs["models_before"], obs["models_after"] = model_count(before), model_count(after)
    ctx.findings.observe(
        "F1.legacy_admission",
        "registration_slots_forms",
        "legacy.registration_forms",
        rig.observed(obs, calls),
        results=results,
    )


async def config_forms(ctx: Context) -> None:
    """An unflagged start with an explicit slots field in the config fails with the text
    (judged by judges_legacy.config_forms)."""
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
        seen.append(
            {"slots": value, "exit_code": server.exit_code, "exited": exited, "message": LEGACY_SLOTS_TEXT in stderr}
        )
    ctx.findings.observe(
        "F1.legacy_admission", "config_slots_rejected", "legacy.config_forms", {"starts": seen}, starts=seen
    )
