"""F2 on the flagged runtime: unload during a first load, reconfiguration with queued work,
invalid replacements, same-ID publication and deferred-callback leases; plus the
overlapping-managers part of F1.fifo (two reconfigurations in observed order).

Configurations are told apart by their outputs: the probes file's distinct
session_options make the same request produce a different output per configuration
(checked first; identical outputs leave the configuration checks PENDING).
"""

from __future__ import annotations

from typing import Any

import anyio

from parval.framework.checks import Verdict
from parval.framework.context import Context
from parval.framework.preconditions import BULK_UNLOAD, MANAGEMENT
from parval.framework.probes_f1 import tested_counts
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import (
    STALLED,
    all_ok,
    enqueue,
    model_count,
    occupy,
    outputs_match,
    own_references,
    references,
    registry_stalled,
    stagger_manager,
    timing,
    unloaded_ids,
)
from parval.status import Status

NEEDS_UI = "needs server.ui_management (403 dynamic model management is disabled)"
SLOTS_RANGE_TEXT = "model slots must be an integer between 1 and 16"
INVALID_SLOTS: list[Any] = [0, 17, 1.5, "2", None, True]


# -- unload during the first load --------------------------------------------------------------

async def unload_load_probe(ctx: Context) -> None:
    t = ctx.timing
    assert t is not None
    n = max(tested_counts(ctx))
    bulk_m, single_m = ctx.model_id, ctx.derived_id("targeted")
    models = [ctx.entry(bulk_m, slots=n), ctx.entry(single_m, slots=n)]
    async with open_rig(ctx, "f2-unload-load", ctx.launch_spec(models, flagged=True),
                        [bulk_m, single_m]) as rig:
        if not ctx.unmet("F2.unload_vs_load", "bulk_during_first_load", BULK_UNLOAD):
            await unload_during_load(rig, bulk_m, "bulk_during_first_load", "POST",
                                     "/v1/tasks/unload_models", {"model_ids": [bulk_m]})
        if not ctx.unmet("F2.unload_vs_load", "targeted_during_first_load", MANAGEMENT, BULK_UNLOAD):
            await own_references(rig, single_m)
            await unload_during_load(rig, single_m, "targeted_during_first_load", "POST",
                                     "/v1/models/unload", {"id": single_m})


async def unload_during_load(rig: Rig, model: str, name: str, method: str, path: str,
                             body: dict[str, Any]) -> None:
    t = timing(rig)
    v = Verdict()
    first = await rig.start_run("first", model)
    during = await rig.wait(lambda s: s.active(model) >= 1 and s.loaded(model) is False, t.slack_s)
    if during is None or first.finished:
        v.pend("the first load finished before it could be observed in progress")
    unload = await rig.start("unload", method, path, body)
    await anyio.sleep(t.gap_s)
    if not unload.finished and await registry_stalled(rig, unload):
        v.block(STALLED.format(what="the unload"))
    v.require(await rig.settle([first, unload], t.slack_s), "both completed within bound")
    if unload.status == 403:
        rig.ctx.findings.add("F2.unload_vs_load", name, Status.PENDING, NEEDS_UI)
        return
    all_ok(v, [first], "the first request")
    outputs_match(rig, v, "base", [first], "the first request", phase="cold")
    ok_reply = unload.status == 200 and (model in unloaded_ids(unload) or unload.json() == {"id": model, "loaded": False})
    v.require(ok_reply, f"the unload answered 200 naming the model (got {unload.status})")
    v.require(unload.t_done >= first.t_done - t.tol_s,
              f"the unload waited for the load in progress and its request "
              f"({(first.t_done - unload.t_done) * 1000:.0f} ms early)" if unload.t_done < first.t_done - t.tol_s
              else "the unload waited for the load in progress and its request")
    published = [s for s in rig.poller.between(first.t_send, unload.t_done) if s.loaded(model)]
    end = await rig.wait(lambda s: s.loaded(model) is False and s.active(model) == 0
                         and s.queued(model) == 0, t.slack_s)
    v.require(end is not None, "the model ended unloaded with drained counters")
    rig.ctx.findings.judge("F2.unload_vs_load", name, v, timeline=rig.timeline([first, unload]),
                           publication_observed=bool(published))


# -- reconfiguration ---------------------------------------------------------------------------

class Reconf:
    """Registration bodies for the rig's model at one count, per configuration."""

    def __init__(self, rig: Rig, model: str, n: int) -> None:
        self.rig = rig
        self.model = model
        self.n = n

    def body(self, distinct: int | None, **over: Any) -> dict[str, Any]:
        ctx = self.rig.ctx
        fields: dict[str, Any] = {"slots": self.n, **over}
        return ctx.registration(ctx.entry(self.model, distinct=distinct, **fields))

    async def to(self, label: str, distinct: int | None, **over: Any) -> Flight:
        return await self.rig.call(label, "POST", "/v1/models/load", self.body(distinct, **over),
                                   timeout_s=timing(self.rig).slack_s + 30)

    async def start(self, label: str, distinct: int | None) -> Flight:
        return await self.rig.start(label, "POST", "/v1/models/load", self.body(distinct))


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
            for aid, name in (("F2.reconfigure_queued", "reconfigure_queued"),
                              ("F2.invalid_replacement", "invalid_replacement"),
                              ("F2.same_id", "same_id"), ("F1.fifo", "overlapping_managers")):
                ctx.findings.add(aid, name, Status.PENDING, NEEDS_UI)
            return
        distinct = await config_refs(rig, rc)
        short = t.too_short(ctx.options.min_service_ms)
        for aid, name, fn in (
            ("F2.reconfigure_queued", f"queued_before_barrier@{n}", queued_before_barrier),
            ("F2.reconfigure_queued", f"unload_not_undone@{n}", unload_not_undone),
            ("F1.fifo", f"overlapping_managers@{n}", overlapping_managers),
        ):
            if short is not None:
                ctx.findings.add(aid, name, Status.PENDING, short)
            elif not distinct and fn is not unload_not_undone:
                ctx.findings.add(aid, name, Status.PENDING,
                                 "the distinct session_options did not change the output, so the "
                                 "configuration a request used cannot be told; set distinct_session_options")
            else:
                ctx.findings.judge(aid, name, await fn(rig, rc))
        await invalid_replacement(rig, rc)
        await same_id(rig)


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
    return all(sets) and all(not (a & b) for i, a in enumerate(sets) for b in sets[i + 1:])


async def queued_before_barrier(rig: Rig, rc: Reconf) -> Verdict:
    """Under opt0: a queued request, then reconfiguration to base, then a later request."""
    t = timing(rig)
    v = Verdict()
    await rc.to("config-opt0", 0)
    occupants = await occupy(rig, rc.model, rc.n, v)
    older = await enqueue(rig, rc.model, "older", 1, v)
    manager = await rc.start("reconfigure-base", None)
    await stagger_manager(rig, manager, v, "the reconfiguration")
    later = await enqueue(rig, rc.model, "later", 2, v) if not v.blockers else \
        await rig.start_run("later", rc.model)
    flights = [*occupants, older, manager, later]
    v.require(await rig.settle(flights, t.slack_s), "everything completed within bound")
    if not v.blockers:
        all_ok(v, [*occupants, older, later], "requests")
        body = manager.json()
        v.require(manager.status == 200 and isinstance(body, dict) and body.get("reconfigured") is True,
                  f"the reconfiguration answered 200 reconfigured=true (got {manager.status} {body})")
        outputs_match(rig, v, "opt0", [*occupants, older], "work bound before the barrier (previous config)")
        if later.t_done < manager.t_done:
            v.block("the later request ran ahead of the waiting reconfiguration (FIFO barging, judged "
                    "by F1.fifo), so which configuration it should bind cannot be judged here")
        else:
            outputs_match(rig, v, "base", [later], "work after the barrier (new config)")
    v.require(await rig.drained([rc.model], t.slack_s), "counters drained afterwards")
    rig.ctx.log.append("reconfigure_queued", rig=rig.name, timeline=rig.timeline(flights))
    return v


async def unload_not_undone(rig: Rig, rc: Reconf) -> Verdict:
    """A queued request, then a targeted unload: the model must end unloaded."""
    t = timing(rig)
    v = Verdict()
    await rig.run("warm", rc.model)
    occupants = await occupy(rig, rc.model, rc.n, v)
    older = await enqueue(rig, rc.model, "older", 1, v)
    manager = await rig.start("unload", "POST", "/v1/models/unload", {"id": rc.model})
    await stagger_manager(rig, manager, v, "the unload")
    flights = [*occupants, older, manager]
    v.require(await rig.settle(flights, t.slack_s), "everything completed within bound")
    if not v.blockers:
        all_ok(v, [*occupants, older, manager], "requests and the unload")
        outputs_match(rig, v, "base", [*occupants, older], "requests")
        v.require(older.t_done <= manager.t_done + t.tol_s, "the older request ran before the unload")
        end = await rig.wait(lambda s: s.active(rc.model) == 0 and s.queued(rc.model) == 0, t.slack_s)
        v.require(end is not None and end.loaded(rc.model) is False,
                  "the model ended unloaded (no older waiter reloaded it after the unload)")
    rig.ctx.log.append("unload_not_undone", rig=rig.name, timeline=rig.timeline(flights))
    return v


async def overlapping_managers(rig: Rig, rc: Reconf) -> Verdict:
    """Two reconfigurations queued behind work, then a request: enqueue order holds."""
    t = timing(rig)
    v = Verdict()
    await rig.run("warm", rc.model)
    occupants = await occupy(rig, rc.model, rc.n, v)
    m1 = await rc.start("reconfigure-opt0", 0)
    await stagger_manager(rig, m1, v, "the first reconfiguration")
    m2 = await rc.start("reconfigure-opt1", 1)
    await stagger_manager(rig, m2, v, "the second reconfiguration")
    later = await enqueue(rig, rc.model, "later", 1, v) if not v.blockers else \
        await rig.start_run("later", rc.model)
    flights = [*occupants, m1, m2, later]
    v.require(await rig.settle(flights, t.slack_s), "everything completed within bound")
    if not v.blockers:
        all_ok(v, [*occupants, m1, m2, later], "requests and managers")
        v.require(m1.t_done < m2.t_done, "the managers completed in enqueue order")
        v.require(later.t_done > m2.t_done, "the later request ran after both managers")
        outputs_match(rig, v, "base", occupants, "work admitted before the managers")
        outputs_match(rig, v, "opt1", [later], "the later request (the last manager's configuration)")
    await rc.to("config-base", None)
    v.require(await rig.drained([rc.model], t.slack_s), "counters drained afterwards")
    rig.ctx.log.append("overlapping_managers", rig=rig.name, timeline=rig.timeline(flights))
    return v


async def invalid_replacement(rig: Rig, rc: Reconf) -> None:
    """Invalid replacements keep the working registration; a later valid resize works."""
    ctx = rig.ctx
    cap = ctx.capacity or 1

    async def kept(v: Verdict, what: str) -> None:
        snap = await rig.wait(lambda s: s.get(rc.model) is not None, 5.0)
        sample = snap.get(rc.model) if snap else None
        v.require(sample is not None and sample.slots == rc.n and sample.loaded is True
                  and sample.max_parallel == cap,
                  f"after {what}: slots={rc.n}, loaded, max_parallel_slots={cap} kept "
                  f"(saw slots={getattr(sample, 'slots', None)}, loaded={getattr(sample, 'loaded', None)}, "
                  f"max_parallel={getattr(sample, 'max_parallel', None)})")
        after = await rig.run(f"after-{what}", rc.model)
        all_ok(v, [after], f"a request after {what}")
        outputs_match(rig, v, "base", [after], f"after {what}")

    await rc.to("config-base", None)
    await rig.run("warm", rc.model)
    if cap + 1 <= 16:
        v = Verdict()
        reply = await rig.call("resize-over-capacity", "POST", "/v1/models/load",
                               rc.body(None, slots=cap + 1))
        body = reply.json()
        kind = body.get("error", {}).get("type") if isinstance(body, dict) else None
        v.require(reply.status == 400 and kind == "invalid_request_error" and f"capacity={cap}" in reply.message(),
                  f"slots={cap + 1} against capacity {cap}: 400 invalid_request_error naming capacity={cap} "
                  f"(got {reply.status} {reply.message()[:120]})")
        await kept(v, f"slots={cap + 1}")
        ctx.findings.judge("F2.invalid_replacement", "unsupported_count", v)
    else:
        ctx.findings.add("F2.invalid_replacement", "unsupported_count", Status.NOT_APPLICABLE,
                         "capacity 16 is the hard cap: no valid count exceeds it")
    v = Verdict()
    bad = await rig.call("bad-task", "POST", "/v1/models/load", rc.body(None, task="not-a-task"))
    v.require(bad.status is not None and bad.status >= 400, f"an unknown task is rejected (got {bad.status})")
    await kept(v, "an invalid task")
    forms = []
    for value in INVALID_SLOTS:
        reply = await rig.call(f"slots-{value!r}", "POST", "/v1/models/load", rc.body(None, slots=value))
        forms.append({"slots": value, "status": reply.status, "message": reply.message()[:120]})
        v.require(reply.status == 400 and SLOTS_RANGE_TEXT in reply.message(),
                  f"slots={value!r} rejected 400 '{SLOTS_RANGE_TEXT}' (got {reply.status})")
    await kept(v, "invalid slots values")
    ctx.findings.judge("F2.invalid_replacement", "invalid_metadata", v, slot_forms=forms)
    other = 1 if rc.n > 1 else (2 if cap >= 2 else None)
    if other is None:
        ctx.findings.add("F2.invalid_replacement", "valid_resize", Status.NOT_APPLICABLE,
                         "capacity 1: there is no other valid count to resize to")
        return
    v = Verdict()
    resize = await rig.call(f"resize-{other}", "POST", "/v1/models/load", rc.body(None, slots=other))
    body = resize.json()
    v.require(resize.status == 200 and isinstance(body, dict) and body.get("reconfigured") is True,
              f"resize {rc.n} -> {other} answered 200 reconfigured=true (got {resize.status})")
    snap = await rig.wait(lambda s: s.slots(rc.model) == other and s.loaded(rc.model) is True, 5.0)
    v.require(snap is not None, f"/v1/models shows slots={other}, loaded")
    after = await rig.run("after-resize", rc.model)
    all_ok(v, [after], "a request after the resize")
    outputs_match(rig, v, "base", [after], "after the resize")
    back = await rig.call(f"resize-{rc.n}", "POST", "/v1/models/load", rc.body(None))
    v.require(back.status == 200, f"resize back to {rc.n} answered 200")
    ctx.findings.judge("F2.invalid_replacement", "valid_resize", v)


async def same_id(rig: Rig) -> None:
    """Concurrent same-ID registration publishes one entry; post-commit failure leaves the
    new configuration unloaded and a retry recovers it."""
    ctx = rig.ctx
    t = timing(rig)
    sid = ctx.derived_id("same")
    rig.watch(sid)
    body = ctx.registration(ctx.entry(sid))
    v = Verdict()
    before = (await rig.call("health-before", "GET", "/health")).json()
    regs = [await rig.start(f"register{i}", "POST", "/v1/models/load", body) for i in range(2)]
    v.require(await rig.settle(regs, t.slack_s), "both registrations completed")
    all_ok(v, regs, "concurrent same-ID registrations")
    after = (await rig.call("health-after", "GET", "/health")).json()
    delta = (model_count(after) or 0) - (model_count(before) or 0)
    v.require(delta == 1, f"exactly one entry was published (model count +{delta})")
    listing = (await rig.call("models", "GET", "/v1/models")).json()
    ids = [e.get("id") for e in listing.get("data", [])] if isinstance(listing, dict) else []
    v.require(ids.count(sid) == 1, f"/v1/models lists {sid} once")
    ctx.findings.judge("F2.same_id", "concurrent_same_id", v, timeline=rig.timeline(regs))

    v = Verdict()
    missing = str(ctx.run_dir / "missing-model.bin")
    broken = await rig.call("reconfigure-missing", "POST", "/v1/models/load",
                            ctx.registration(ctx.entry(sid, path=missing)))
    v.require(broken.status is not None and broken.status >= 400,
              f"a replacement whose load fails after commit is an error (got {broken.status})")
    listing = (await rig.call("models", "GET", "/v1/models")).json()
    entry: dict[str, Any] = {}
    if isinstance(listing, dict):
        entry = next((e for e in listing.get("data", []) if e.get("id") == sid), {})
    v.require(entry.get("loaded") is False,
              "the new configuration stays registered and unloaded (no partial pool)")
    failing = await rig.run("request-while-broken", sid)
    v.require(failing.status is not None and failing.status >= 400, "a request on it fails cleanly")
    v.require(await rig.drained([sid], t.slack_s), "the failed load released its lease")
    fixed = await rig.call("reconfigure-good", "POST", "/v1/models/load", body)
    v.require(fixed.status == 200, f"a retry with the good path loads (got {fixed.status})")
    ok = await rig.run("request-after-retry", sid)
    all_ok(v, [ok], "a request after the retry")
    await references(rig, sid, "base")  # its own registration: outputs may depend on the id
    outputs_match(rig, v, "base", [ok], "after the retry", phase="cold")
    ctx.findings.judge("F2.same_id", "post_commit_failure", v, registered_path=entry.get("path"))


# -- deferred callbacks ------------------------------------------------------------------------

async def callback_probe(ctx: Context) -> None:
    """Native batch responses hold their lease until the exchange completes or is dropped."""
    t = ctx.timing
    assert t is not None
    model = ctx.model_id
    spec = ctx.launch_spec([ctx.entry(model)], flagged=True)
    async with open_rig(ctx, "f2-callback", spec, [model]) as rig:
        body = {"model": model, "requests": [ctx.base_request(), ctx.base_request()]}
        probe_reply, _ = await rig.client.sse("/v1/tasks/batch", body)
        if probe_reply.status != 200:
            ctx.findings.add("F2.callback_lease", "native_batch", Status.PENDING,
                             f"the model serves no native batch ({probe_reply.status}: "
                             f"{probe_reply.error_message()[:120]}); deferred stream/batch callbacks need a "
                             "streaming or native-batch model, or CTest T14/T18")
            return
        v = Verdict()
        done: dict[str, Any] = {}

        async def batch() -> None:
            done["reply"], done["events"] = await rig.client.sse("/v1/tasks/batch", body)

        rig.tg.start_soon(batch)
        seen = await rig.wait(lambda s: s.active(model) >= 1, t.slack_s)
        v.require(seen is not None, "the batch held a slot")
        manager = await rig.bulk("unload", [model])
        v.require(await rig.settle([manager], t.slack_s), "the unload completed")
        events = done.get("events", [])
        reply = done.get("reply")
        v.require(reply is not None and reply.t_done <= manager.t_done + t.tol_s,
                  "the unload waited for the whole batch exchange")
        v.require(any(isinstance(e, dict) and e.get("type") == "task.batch.done" for e in events)
                  and "[DONE]" in events, "the batch exchange completed with its done event")
        dropped, _ = await rig.client.sse("/v1/tasks/batch", body, stop_after_events=1)
        v.require(await rig.drained([model], t.slack_s), "a batch abandoned after one event released its lease")
        after = await rig.run("after", model)
        all_ok(v, [after], "a request after the abandoned batch")
        ctx.findings.judge("F2.callback_lease", "native_batch", v, dropped=dropped.summary())
