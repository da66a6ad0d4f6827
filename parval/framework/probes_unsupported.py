"""F1.unsupported: a count above the advertised capacity keeps its behaviour (a load error
naming the capacity, nothing published, no lease held, a retry gives the same answer); an
unsupported execution mode is refused without holding a lease; the FIFO has no queue
capacity, so overflow is the timeout rejection recorded by F1.timeouts."""

from __future__ import annotations

from typing import Any

from parval.framework.checks import Verdict
from parval.framework.context import Context
from parval.framework.preconditions import COUNTERS, LOADED, route_absent
from parval.framework.rig import open_rig
from parval.framework.scenarios import all_ok, outputs_match, timing
from parval.status import Status


async def unsupported_probe(ctx: Context) -> None:
    cap = ctx.capacity or 1
    model, over = ctx.model_id, ctx.derived_id("over")
    if cap + 1 > 16:
        ctx.findings.add("F1.unsupported", "count_over_capacity", Status.NOT_APPLICABLE,
                         "capacity 16 is the hard cap: no valid count exceeds it")
        entries = [ctx.entry(model)]
    else:
        entries = [ctx.entry(model), ctx.entry(over, slots=cap + 1)]
    async with open_rig(ctx, "f1-unsupported", ctx.launch_spec(entries, flagged=True),
                        [e["id"] for e in entries]) as rig:
        t = timing(rig)
        if len(entries) == 2 and not ctx.unmet("F1.unsupported", "count_over_capacity", COUNTERS, LOADED):
            v = Verdict()
            replies = [await rig.run(f"over-capacity{i}", over) for i in range(2)]
            for r in replies:
                v.require(r.status is not None and r.status >= 400 and f"capacity={cap}" in r.message(),
                          f"{r.label}: an error naming capacity={cap} (got {r.status}: {r.message()[:120]})")
            v.require(await rig.drained([over], t.slack_s), "no lease stays held")
            snap = rig.poller.latest
            sample = snap.get(over) if snap else None
            v.require(sample is not None and sample.loaded is False and sample.max_parallel is None
                      and sample.slots == cap + 1,
                      f"the entry stays registered with slots={cap + 1}, unloaded, no capacity published")
            ctx.findings.judge("F1.unsupported", "count_over_capacity", v,
                               messages=[r.message()[:200] for r in replies])
        v = Verdict()
        # Streaming execution on an offline model, or native batching on a streaming one.
        body: dict[str, Any] = {"model": model}
        if ctx.plan.model["mode"] == "offline":
            route, body["request"] = "/v1/tasks/stream", ctx.base_request()
        else:
            route, body["requests"] = "/v1/tasks/batch", [ctx.base_request()]
        if ctx.unmet("F1.unsupported", "unsupported_mode", COUNTERS):
            return
        refused = await rig.call("unsupported-mode", "POST", route, body)
        if route_absent(refused.status):
            ctx.findings.add("F1.unsupported", "unsupported_mode", Status.UNSUPPORTED,
                             f"the server has no {route} route (HTTP {refused.status}), so the mode "
                             "refusal cannot be exercised", reply=refused.message()[:200])
            return
        v.require(refused.status is not None and 400 <= refused.status < 600,
                  f"{route} on a {ctx.plan.model['mode']} model is refused with an error (got {refused.status})")
        v.require(await rig.drained([model], t.slack_s), "the refusal released its lease")
        after = await rig.run("after-refusal", model)
        all_ok(v, [after], "a request after the refusal")
        outputs_match(rig, v, "base", [after], "after the refusal")
        ctx.findings.judge("F1.unsupported", "unsupported_mode", v, route=route,
                           reply=refused.message()[:200])
        ctx.findings.add("F1.unsupported", "queue_overflow", Status.NOT_APPLICABLE,
                         "the per-model FIFO has no queue capacity; overflow is the timeout rejection "
                         "(503 'timed out waiting for a slot') recorded under F1.timeouts")
