"""The unflagged (legacy) runtime of the candidate: the original guard's admission, every
explicit slots form rejected, one legacy session from concurrent first requests, the
upstream unpublished-load skip of legacy bulk unload, and F1.timeouts on this path. The
probes record; parval.framework.judges_f1 (F1) and judges_f2 (F2) judge."""

from __future__ import annotations

import anyio

from parval.errors import ServerStartError
from parval.framework.judges_f1 import LEGACY_SLOTS_TEXT
from parval.framework.observed import Facts, Obs
from parval.framework.preconditions import BULK_UNLOAD, LOADED, MANAGEMENT, Capabilities, route_absent
from parval.framework.probe_context import FrameworkContext
from parval.framework.probes_f1 import bulk_ceiling_ms, timeout_checks, timeout_models
from parval.framework.rig import Rig, open_rig
from parval.framework.scenarios import attempts, model_count, own_references, reset, timing
from parval.jsontypes import JsonValue
from parval.server.process import spawn, wait_ready
from parval.status import Status

SLOTS_FORMS: list[JsonValue] = [1, 2, None, False, "4"]


async def legacy_probe(ctx: FrameworkContext) -> None:
    t = ctx.timing
    assert t is not None
    a, z, b = timeout_models(ctx)
    w = ctx.derived_id("legacy-w")
    models = [
        ctx.entry(a, busy_timeout_ms=t.ceiling_ms),
        ctx.entry(z, busy_timeout_ms=0),
        ctx.entry(b, busy_timeout_ms=bulk_ceiling_ms(t)),
        ctx.entry(w, busy_timeout_ms=0),
    ]
    spec = ctx.launch_spec(models, flagged=False)
    async with open_rig(ctx, "legacy", spec, [a, z, b, w]) as rig:
        await own_references(rig, z)
        caps = legacy_capabilities(rig, [a, z, b, w])
        ctx.log.write(caps.event(rig.name))
        await first_session(rig, z, caps)
        await unpublished_skip(rig, w, caps)
        if not ctx.too_short("F1.timeouts", "timeouts@legacy"):
            await timeout_checks(rig, 1, "legacy")
            await guard_serializes(rig, z)
            await wedged_text(rig, z)
        else:
            # The guard's sub-checks need the same long requests: named PENDING, never left out.
            ctx.too_short("F1.legacy_admission", "guard_serializes")
            ctx.too_short("F1.legacy_admission", "guard_wedged_fail_fast")
        await status_fields(rig)
        await registration_forms(rig)
        await runtime_kept(rig)
    await config_forms(ctx)


def legacy_capabilities(rig: Rig, models: list[str]) -> Capabilities:
    """What the unflagged server itself publishes and answers (its `loaded` field, its bulk
    unload route), from this rig's status samples and its reset unloads: the flagged
    calibration start says nothing about the legacy runtime."""
    ctx = rig.ctx
    seen = [x for s in rig.poller.samples if s.ok for m in models if (x := s.get(m)) is not None]
    resets = [f for f in rig.flights if f.label == "reset" and f.status is not None]
    return Capabilities(
        counters=any(x.active is not None and x.queued is not None for x in seen) if seen else None,
        loaded=any(x.loaded is not None for x in seen) if seen else None,
        bulk_unload=(not route_absent(resets[-1].status)) if resets else None,
        bulk_status=resets[-1].status if resets else None,
        management=ctx.caps.management,
        management_status=ctx.caps.management_status,
        plan_ui_management=ctx.caps.plan_ui_management,
    )


async def first_session(rig: Rig, model: str, caps: Capabilities) -> None:
    """Concurrent first requests on the legacy path publish one session, then serve it
    (judged by judges_f2.first_session)."""
    t = timing(rig)
    obs = Obs(model=model, loaded_published=bool(caps.loaded))
    flights = [await rig.start_run(f"first{i}", model) for i in range(3)]
    obs["labels"] = [f.label for f in flights]
    obs["settled"] = await rig.settle(flights, t.slack_s)
    snap = rig.poller.latest
    obs["end_loaded"] = snap.loaded(model) if snap is not None else None
    rig.ctx.findings.observe(
        "F2.first_publish", "legacy_one_session", "legacy.first_session", rig.observed(obs, flights)
    )


async def unpublished_skip(rig: Rig, model: str, caps: Capabilities) -> None:
    """Legacy bulk unload keeps upstream's skip of a load that is not yet published
    (judged by judges_f2.unpublished_skip), tried again on a cold model while the load
    was published before the unload could be sent."""
    t = timing(rig)
    if rig.ctx.unmet("F2.unload_vs_load", "legacy_unpublished_skip", BULK_UNLOAD, LOADED, caps=caps):
        return
    if rig.ctx.load_too_fast(
        "F2.unload_vs_load", "legacy_unpublished_skip", 3, "the first load", "unload while it is in progress"
    ):
        return

    async def attempt(i: int) -> Facts:
        obs = Obs(model=model, attempt=i, loaded_published=bool(caps.loaded))
        if i:
            await reset(rig, [model])
        first = await rig.start_run("first", model)
        await anyio.sleep(t.gap_s)
        during = rig.poller.latest
        # `loaded` of the last sample since the first request was sent (None: not sampled).
        obs["during_loaded"] = during.loaded(model) if during is not None and during.t >= first.t_send else None
        bulk = await rig.call("bulk-unload", "POST", "/v1/tasks/unload_models", {"model_ids": [model]})
        obs["settled"] = await rig.settle([first], t.slack_s)
        if obs["during_loaded"] is not True:
            ended = await rig.wait(lambda s: s.loaded(model) is True, t.slack_s)
            obs["ended_loaded"] = ended is not None
        return rig.observed(obs, [first, bulk])

    facts = await attempts("legacy.unpublished_skip", attempt)
    rig.ctx.findings.observe("F2.unload_vs_load", "legacy_unpublished_skip", "legacy.unpublished_skip", facts)


async def guard_serializes(rig: Rig, model: str) -> None:
    """The original guard: concurrent requests to one model run one after another (judged
    by judges_f1.guard_serializes), tried again while replies read late leave whether
    the runs overlapped unseen."""
    t = timing(rig)

    async def attempt(i: int) -> Facts:
        obs = Obs(attempt=i)
        warm = await rig.run("warm", model)
        flights = [await rig.start_run(f"concurrent{k}", model) for k in range(3)]
        obs["settled"] = await rig.settle(flights, t.slack_s)
        obs["labels"] = [f.label for f in flights]
        return rig.observed(obs, [warm, *flights])

    facts = await attempts("legacy.guard_serializes", attempt)
    rig.ctx.findings.observe("F1.legacy_admission", "guard_serializes", "legacy.guard_serializes", facts)


async def wedged_text(rig: Rig, model: str) -> None:
    """A holder older than the caller's bound is treated as wedged: immediate 503 (judged by
    judges_f1.wedged_text)."""
    t = timing(rig)
    bound = t.overdue_ms

    async def attempt(i: int) -> Facts:
        obs = Obs(bound_ms=bound, attempt=i)
        await rig.run("warm", model)
        holder = await rig.start_run("holder", model)
        await anyio.sleep(bound / 1000 + t.gap_s)
        probe = await rig.run("probe", model, busy_timeout_ms=bound)
        obs["settled"] = await rig.settle([holder], t.slack_s)
        return rig.observed(obs, [holder, probe])

    facts = await attempts("legacy.wedged_text", attempt)
    rig.ctx.findings.observe("F1.legacy_admission", "guard_wedged_fail_fast", "legacy.wedged_text", facts)


async def status_fields(rig: Rig) -> None:
    """GET /v1/models on the legacy runtime (judged by judges_f1.status_fields)."""
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
    by judges_f1.registration_forms)."""
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


async def runtime_kept(rig: Rig) -> None:
    """A registration without slots on the unflagged runtime is a legacy entry: no slot
    fields appear (judged by judges_f2.legacy_runtime_kept)."""
    ctx = rig.ctx
    if ctx.unmet("F2.invalid_replacement", "runtime_immutable@legacy", MANAGEMENT):
        return
    obs = Obs()
    mid = ctx.derived_id("legacy-omitted")
    rig.watch(mid)
    reg = await rig.call("register-omitted", "POST", "/v1/models/load", ctx.registration(ctx.entry(mid)))
    if reg.status == 403:
        ctx.findings.add(
            "F2.invalid_replacement",
            "runtime_immutable@legacy",
            Status.PENDING,
            "registration needs server.ui_management (403 dynamic model management is disabled)",
        )
        return
    ran = await rig.run("after-register-omitted", mid)
    listing = await rig.call("models-after", "GET", "/v1/models")
    body = listing.json()
    entries = body.get("data", []) if isinstance(body, dict) else []
    entry = (
        next((e for e in entries if isinstance(e, dict) and e.get("id") == mid), None)
        if isinstance(entries, list)
        else None
    )
    obs["entry_keys"] = sorted(map(str, entry)) if entry is not None else None
    ctx.findings.observe(
        "F2.invalid_replacement",
        "runtime_immutable@legacy",
        "legacy.runtime_kept",
        rig.observed(obs, [reg, ran, listing]),
    )


async def config_forms(ctx: FrameworkContext) -> None:
    """An unflagged start with an explicit slots field in the config fails with the text
    (judged by judges_f1.config_forms)."""
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
