"""F1.unsupported: a count above the advertised capacity keeps its behaviour (a load error
naming the capacity, nothing published, no lease held, a retry gives the same answer); an
unsupported execution mode is refused without holding a lease; the FIFO has no queue
capacity, so overflow is the timeout rejection recorded by F1.timeouts. The probe records;
parval.framework.judges_unsupported judges."""

from __future__ import annotations

from parval.framework.context import Context
from parval.framework.facts import Obs
from parval.framework.preconditions import COUNTERS, LOADED, route_absent
from parval.framework.rig import Rig, open_rig
from parval.framework.scenarios import observe_after, timing
from parval.status import Status


async def over_capacity(rig: Rig, over: str, cap: int) -> None:
    """Two requests to a registration whose count exceeds the capacity (judged by
    judges_unsupported.count_over_capacity)."""
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
    (judged by judges_unsupported.unsupported_mode)."""
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


async def unsupported_probe(ctx: Context) -> None:
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
        ctx, "f1-unsupported", ctx.launch_spec(entries, flagged=True), [e["id"] for e in entries]
    ) as rig:
        if len(entries) == 2 and not ctx.unmet("F1.unsupported", "count_over_capacity", COUNTERS, LOADED):
            await over_capacity(rig, over, cap)
        await unsupported_mode(rig, model)
