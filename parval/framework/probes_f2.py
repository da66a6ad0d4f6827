"""F2 on the flagged runtime: unload during a first load, reconfiguration with queued work,
invalid replacements, runtime selection and same-ID publication with pre- and post-commit
failure, deferred-callback leases; plus the overlapping-managers part of F1.fifo (two
reconfigurations in observed order), which runs in the same reconfiguration situation.

Configurations are told apart by their outputs: the probes file's distinct
session_options make the same request produce a different output per configuration
(checked first; identical outputs leave the configuration checks PENDING). `Reconf` builds
the registration bodies the F2 probes send.

The probes record; parval.framework.judges_f2 judges (overlapping managers: judges_f1).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from parval.framework.observed import Facts, Obs
from parval.framework.poller import Snapshot
from parval.framework.preconditions import BULK_UNLOAD, COUNTERS, MANAGEMENT
from parval.framework.probe_context import FrameworkContext
from parval.framework.probes_f1 import tested_counts
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import (
    attempts,
    canaries,
    enqueue,
    model_count,
    occupy,
    own_references,
    references,
    reset,
    stagger_manager,
    timing,
)
from parval.jsonread import get, iterate
from parval.jsontypes import JsonValue
from parval.rundir.event_types import OverlappingManagersEvent, ReconfigureQueuedEvent, UnloadNotUndoneEvent
from parval.server.client import Reply
from parval.status import Status

NEEDS_UI = "needs server.ui_management (403 dynamic model management is disabled)"


# -- unload during the first load --------------------------------------------------------------


async def unload_load_probe(ctx: FrameworkContext) -> None:
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
    # Status reads while the unload still waits (facts.stalled judges them).
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


async def reconfigure_probe(ctx: FrameworkContext) -> None:
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
    rig.ctx.log.write(ReconfigureQueuedEvent(kind="reconfigure_queued", rig=rig.name, timeline=rig.timeline(flights)))
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
    rig.ctx.log.write(UnloadNotUndoneEvent(kind="unload_not_undone", rig=rig.name, timeline=rig.timeline(flights)))
    return rig.observed(obs, flights, occupants=[f.label for f in occupants])


async def overlapping_managers(rig: Rig, rc: Reconf, hold: int = 0) -> Facts:
    """Two reconfigurations queued behind work, then a request: enqueue order holds (judged
    by judges_f1.overlapping_managers)."""
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
    rig.ctx.log.write(
        OverlappingManagersEvent(kind="overlapping_managers", rig=rig.name, timeline=rig.timeline(flights))
    )
    return rig.observed(obs, flights, occupants=[f.label for f in occupants])


# -- F2.invalid_replacement, runtime selection and F2.same_id ------------------------------------


INVALID_SLOTS: list[JsonValue] = [0, 17, 1.5, "2", None, True]


class Reconf:
    """Registration bodies for the rig's model at one count, per configuration."""

    def __init__(self, rig: Rig, model: str, n: int) -> None:
        self.rig = rig
        self.model = model
        self.n = n

    def body(self, distinct: int | None, **over: object) -> dict[str, object]:
        ctx = self.rig.ctx
        fields: dict[str, object] = {"slots": self.n, **over}
        return ctx.registration(ctx.entry(self.model, distinct=distinct, **fields))

    async def to(self, label: str, distinct: int | None, **over: object) -> Flight:
        return await self.rig.call(
            label, "POST", "/v1/models/load", self.body(distinct, **over), timeout_s=timing(self.rig).slack_s + 30
        )

    async def start(self, label: str, distinct: int | None) -> Flight:
        return await self.rig.start(label, "POST", "/v1/models/load", self.body(distinct))


async def invalid_replacement(rig: Rig, rc: Reconf) -> None:
    """Invalid replacements keep the working registration; a later valid resize works
    (judged by judges_f2.unsupported_count, invalid_metadata and valid_resize)."""
    ctx = rig.ctx
    cap = ctx.capacity or 1

    def record(name: str, obs: Obs, flights: list[Flight], **evidence: object) -> None:
        """One sub-check of F2.invalid_replacement, judged by judges_f2.<name>."""
        ctx.findings.observe("F2.invalid_replacement", name, f"f2.{name}", rig.observed(obs, flights), **evidence)

    async def kept(obs: Obs, flights: list[Flight], what: str) -> None:
        """The registration as /v1/models shows it right after `what`, and a request."""
        snap = await rig.wait(lambda s: s.get(rc.model) is not None, 5.0)
        sample = snap.get(rc.model) if snap else None
        after = await rig.run(f"after-{what}", rc.model)
        flights.append(after)
        obs.facts.setdefault("kept", []).append(
            {
                "what": what,
                "after": after.label,
                "sample": None
                if sample is None
                else {"slots": sample.slots, "loaded": sample.loaded, "max_parallel": sample.max_parallel},
            }
        )

    await rc.to("config-base", None)
    await rig.run("warm", rc.model)
    if cap + 1 <= 16:
        obs = Obs(count=rc.n, capacity=cap)
        reply = await rig.call("resize-over-capacity", "POST", "/v1/models/load", rc.body(None, slots=cap + 1))
        flights = [reply]
        await kept(obs, flights, f"slots={cap + 1}")
        record("unsupported_count", obs, flights)
    else:
        ctx.findings.add(
            "F2.invalid_replacement",
            "unsupported_count",
            Status.NOT_APPLICABLE,
            "capacity 16 is the hard cap: no valid count exceeds it",
        )
    obs = Obs(count=rc.n, capacity=cap)
    bad = await rig.call("bad-task", "POST", "/v1/models/load", rc.body(None, task="not-a-task"))
    flights = [bad]
    await kept(obs, flights, "an invalid task")
    forms = []
    for value in INVALID_SLOTS:
        reply = await rig.call(f"slots-{value!r}", "POST", "/v1/models/load", rc.body(None, slots=value))
        flights.append(reply)
        forms.append({"slots": value, "status": reply.status, "message": reply.message()[:120]})
    obs["forms"] = [{"slots": value, "label": f"slots-{value!r}"} for value in INVALID_SLOTS]
    await kept(obs, flights, "invalid slots values")
    record("invalid_metadata", obs, flights, slot_forms=forms)
    other = 1 if rc.n > 1 else (2 if cap >= 2 else None)
    if other is None:
        ctx.findings.add(
            "F2.invalid_replacement",
            "valid_resize",
            Status.NOT_APPLICABLE,
            "capacity 1: there is no other valid count to resize to",
        )
        return
    obs = Obs(count=rc.n, other=other)
    resize = await rig.call(f"resize-{other}", "POST", "/v1/models/load", rc.body(None, slots=other))
    snap = await rig.wait(lambda s: s.slots(rc.model) == other and s.loaded(rc.model) is True, 5.0)
    obs["resize_shown"] = snap is not None
    after = await rig.run("after-resize", rc.model)
    back = await rig.call(f"resize-{rc.n}", "POST", "/v1/models/load", rc.body(None))
    record("valid_resize", obs, [resize, after, back])


def entry_json(rig: Rig, model: str, snap: Snapshot | None) -> dict[str, object] | None:
    """One model's status fields as a sample showed them (None: never seen)."""
    x = snap.get(model) if snap is not None else None
    if x is None:
        return None
    return {
        "slots": x.slots,
        "active": x.active,
        "queued": x.queued,
        "loaded": x.loaded,
        "max_parallel": x.max_parallel,
    }


async def runtime_immutable(rig: Rig, rc: Reconf) -> None:
    """Runtime selection is fixed for the process: a resize across one and a registration
    without slots keep the parallel runtime (its slot counters and published capacity;
    judged by judges_f2.runtime_kept)."""
    ctx = rig.ctx
    # Counters that vanish after a resize show a changed runtime only where they were there before.
    if ctx.unmet("F2.invalid_replacement", "runtime_immutable@flagged", COUNTERS):
        return
    t = timing(rig)
    obs = Obs(count=rc.n)
    one = await rc.to("resize-1", None, slots=1)
    after_one = await rig.run("after-resize-1", rc.model)
    resized = await rig.wait(lambda s: s.slots(rc.model) == 1 and s.loaded(rc.model) is True, t.slack_s)
    back = await rc.to(f"resize-back-{rc.n}", None)
    omitted = ctx.derived_id("omitted")
    rig.watch(omitted)
    reg = await rig.call(
        "register-omitted", "POST", "/v1/models/load", ctx.registration(ctx.entry(omitted)), timeout_s=t.slack_s + 30
    )
    ran = await rig.run("after-register-omitted", omitted)
    registered = await rig.wait(lambda s: s.loaded(omitted) is True, t.slack_s)
    obs["entries"] = {"resized": entry_json(rig, rc.model, resized), "registered": entry_json(rig, omitted, registered)}
    ctx.findings.observe(
        "F2.invalid_replacement",
        "runtime_immutable@flagged",
        "f2.runtime_kept",
        rig.observed(obs, [one, after_one, back, reg, ran]),
    )


async def same_id(rig: Rig) -> None:
    """Concurrent same-ID registration publishes one entry; post-commit failure leaves the
    new configuration unloaded and a retry recovers it (judged by judges_f2.concurrent_same_id
    and post_commit_failure)."""
    ctx = rig.ctx
    t = timing(rig)
    sid = ctx.derived_id("same")
    rig.watch(sid)
    body = ctx.registration(ctx.entry(sid))
    obs = Obs(sid=sid)
    before = (await rig.call("health-before", "GET", "/health")).json()
    regs = [await rig.start(f"register{i}", "POST", "/v1/models/load", body) for i in range(2)]
    obs["settled"] = await rig.settle(regs, t.slack_s)
    after = (await rig.call("health-after", "GET", "/health")).json()
    obs["models_before"] = model_count(before)
    obs["models_after"] = model_count(after)
    listing = (await rig.call("models", "GET", "/v1/models")).json()
    obs["listed_ids"] = [get(e, "id") for e in iterate(listing.get("data", []))] if isinstance(listing, dict) else []
    ctx.findings.observe(
        "F2.same_id",
        "concurrent_same_id",
        "f2.concurrent_same_id",
        rig.observed(obs, regs),
        timeline=rig.timeline(regs),
    )

    obs = Obs(sid=sid)
    missing = str(ctx.run_dir / "missing-model.bin")
    broken = await rig.call(
        "reconfigure-missing", "POST", "/v1/models/load", ctx.registration(ctx.entry(sid, path=missing))
    )
    listing = (await rig.call("models", "GET", "/v1/models")).json()
    entry: object = {}
    if isinstance(listing, dict):
        entry = next((e for e in iterate(listing.get("data", [])) if get(e, "id") == sid), {})
    obs["entry_loaded"] = get(entry, "loaded")
    failing = await rig.run("request-while-broken", sid)
    obs["drained"] = await rig.drained([sid], t.slack_s)
    fixed = await rig.call("reconfigure-good", "POST", "/v1/models/load", body)
    ok = await rig.run("request-after-retry", sid)
    await references(rig, sid, "base")  # its own registration: outputs may depend on the id
    ctx.findings.observe(
        "F2.same_id",
        "post_commit_failure",
        "f2.post_commit_failure",
        rig.observed(obs, [broken, failing, fixed, ok]),
        registered_path=get(entry, "path"),
    )


# -- F2.callback_lease: a native batch holds its lease until the exchange ends -------------------


@dataclass
class _Exchange:
    """One native batch exchange as it went: when it was sent, and its reply and events once
    the stream ended (none when it never did)."""

    t_send: float | None = None
    reply: Reply | None = None
    events: list[object] = field(default_factory=list)


async def callback_probe(ctx: FrameworkContext) -> None:
    """Native batch responses hold their lease until the exchange completes or is dropped."""
    t = ctx.timing
    assert t is not None
    model = ctx.model_id
    spec = ctx.launch_spec([ctx.entry(model)], flagged=True)
    async with open_rig(ctx, "f2-callback", spec, [model]) as rig:
        body = {"model": model, "requests": [ctx.base_request(), ctx.base_request()]}
        probe_reply, _ = await rig.client.sse("/v1/tasks/batch", body)
        if probe_reply.status != 200:
            ctx.findings.add(
                "F2.callback_lease",
                "native_batch",
                Status.PENDING,
                f"the model serves no native batch ({probe_reply.status}: "
                f"{probe_reply.error_message()[:120]}); deferred stream/batch callbacks need a "
                "streaming or native-batch model, or CTest T14/T18",
            )
            return

        async def attempt(i: int) -> Facts:
            """A batch in flight, then an unload; the exchange's end is awaited (bounded)
            before anything is judged, then a batch dropped after one event."""
            obs = Obs(model=model, attempt=i)
            done = _Exchange()
            finished = anyio.Event()

            async def batch() -> None:
                done.t_send = time.monotonic()
                try:
                    done.reply, done.events = await rig.client.sse("/v1/tasks/batch", body)
                finally:
                    finished.set()

            rig.tg.start_soon(batch)
            seen = await rig.wait(lambda s: s.active(model) >= 1, t.slack_s)
            obs["held"] = seen is not None
            obs["batch_done_before_unload"] = finished.is_set()
            manager = await rig.bulk("unload", [model])
            with anyio.move_on_after(t.slack_s):
                await finished.wait()
            obs["settled"] = await rig.settle([manager], t.slack_s) and finished.is_set()
            reply = done.reply
            obs["batch_t_send"] = rig.rel(done.t_send) if done.t_send is not None else None
            obs["batch_t_done"] = rig.rel(reply.t_done) if reply is not None else None
            obs["events"] = [{"type": e.get("type")} if isinstance(e, dict) else str(e)[:200] for e in done.events]
            dropped, _ = await rig.client.sse("/v1/tasks/batch", body, stop_after_events=1)
            obs["dropped"] = dropped.summary()
            obs["drained"] = await rig.drained([model], t.slack_s)
            after = await rig.run("after", model)
            return rig.observed(obs, [manager, after])

        facts = await attempts("f2.native_batch", attempt)
        ctx.findings.observe("F2.callback_lease", "native_batch", "f2.native_batch", facts)
