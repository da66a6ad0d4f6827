"""Model recovery (M4) on one fresh server at the largest count validated so far: an
unload during the first load, an invalid request alongside healthy work, targeted and
all-model unloads with work in flight, a failed load and its retry, then the 503
rejection-latency probe (P4)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio

from parval.jsontypes import JsonValue
from parval.procedure.server_facts import ROUTE_BULK_UNLOAD, ROUTE_LOAD
from parval.rundir.event_types import (
    LaterSamples,
    M4InFlightUnloadEvent,
    M4InvalidAlongsideEvent,
    M4LoadFailureEvent,
    M4ProbeSkippedEvent,
    M4UnloadDuringFirstLoadEvent,
    RejectionLatencyEvent,
)
from parval.runners.start import Start
from parval.server.client import Reply
from parval.server.status_poller import taken_at
from parval.server.waves import release_together

if TYPE_CHECKING:
    from parval.runners.campaign_context import CampaignContext


async def recovery_start(c: CampaignContext, n: int) -> None:
    spec = c.launch("candidate", flagged=True, slots=n, ui_management=bool(c.plan.server["ui_management"]))
    async with c.start("recovery", "recovery", spec, n) as st:
        await unload_during_first_load(c, st)
        await invalid_alongside(c, st, n)
        await unload_in_flight(c, st, n, "targeted")
        await unload_in_flight(c, st, n, "all")
        await load_failure_retry(c, st, n)
        await rejection_latency(c, st, n)


async def unload_during_first_load(c: CampaignContext, st: Start) -> None:
    base = c.requests[0]
    st.phases.set("cold_load")
    first: dict[str, Reply] = {}

    async def send() -> None:
        first["reply"] = await st.client.post(c.settings.route, c.body(base))

    async with anyio.create_task_group() as tg:
        tg.start_soon(send)
        during = await st.wait_status(
            lambda s: (s.active or 0) >= 1 and s.loaded is False, 5.0, needs=("active", "loaded")
        )
        st.phases.set("unload")
        unload = await st.client.post(ROUTE_BULK_UNLOAD, {"model_ids": [c.plan.model_id]})
    check = await st.observe_unloaded(unload)
    await st.settle("unload")
    st.phases.set("reload")
    req = first["reply"]
    st.record("unload_during_load_first", 0, base.name, req, history=[])
    st.reset_histories()
    reload = await st.client.post(c.settings.route, c.body(base))
    st.record("unload_during_load_reload", 0, base.name, reload, history=[])
    st.histories[0].append(base.name)
    body = unload.json()
    event = M4UnloadDuringFirstLoadEvent(
        kind="m4_unload_during_first_load",
        run=st.name,
        attempt=st.attempt,
        issued_during_load=during is not None,
        unload=unload.summary(),
        listed=isinstance(body, dict) and c.plan.model_id in (body.get("unloaded") or []),
        unload_done=st.rel(unload.t_done),
        requests_done=[st.rel(req.t_done)],
        requests_latency=[round(req.elapsed_s, 6)],
        ended_unloaded=check["loaded_false"],
        unload_check=check,
    )
    st.log.write(event)
    await st.check_alive("unload during first load")


async def invalid_alongside(c: CampaignContext, st: Start, n: int) -> None:
    invalid = c.plan.invalid_request()
    if invalid is None:
        c.log.write(
            M4ProbeSkippedEvent(kind="m4_invalid_alongside", run=st.name, skipped="plan names no invalid request")
        )
        return
    await _unload_all(c, st)
    base = c.requests[0]
    bodies = [c.body(base)] * max(1, n - 1) + [c.body(invalid)]
    st.phases.set("invalid_alongside")
    replies = await release_together(st.client, c.settings.route, bodies)
    for reply in replies[:-1]:
        st.record("invalid_alongside", 0, base.name, reply, history=[])
    st.record("invalid_request", 0, "invalid", replies[-1], history=None, expect_error=True)
    await st.check_alive("invalid alongside")
    drained = await st.drained()
    bad = replies[-1]
    st.log.write(
        M4InvalidAlongsideEvent(
            kind="m4_invalid_alongside",
            run=st.name,
            attempt=st.attempt,
            invalid=bad.summary(),
            rejected=bad.status is not None and bad.status >= 400,
            drained=drained,
        )
    )
    st.reset_histories()
    await _unload_all(c, st)


# An unload probe whose later request was not seen queued behind the waiting unload is tried
# this many times in all (each try recorded). The server's FIFO is enqueue order, not packet
# arrival, so a later request admitted past the unload on a busy machine may have reached
# the queue first: barging is a FAIL only when every try shows it.
UNLOAD_TRIES = 3


def later_gap_s(st: Start) -> float:
    """How long after the unload the later request is sent on the first try: long enough
    for the server to have taken the unload first (a few polls, a fraction of a measured
    service time), as the framework's forced orders stagger managers. The unload is checked
    to be still pending when it is sent."""
    service = st.service_s() or 0.0
    return round(max(0.01, 4 * st.settings.poll_interval_s, 0.25 * service), 6)


def next_gap_s(st: Start, gap: float, order: str) -> float:
    """The gap of the next try, from what this one saw: half as long again after the later
    request was admitted past the unload (a busy server may not have enqueued the unload
    yet); half as long after it was not seen queued at all (the unload was over, or the
    work it waited for ended, before a status read could see the later request queued: a
    quick model), never under two status reads. Barging is a FAIL only when every try saw
    it, so the gap has grown on every try before one can be."""
    if order == "admitted_past":
        return round(gap * 1.5, 6)
    return round(max(0.002, 2 * st.settings.poll_interval_s, gap / 2), 6)


def later_order(st: Start, busy: int, t_later: float, t_unload_done: float) -> tuple[str, LaterSamples]:
    """Where the server put the request sent after the waiting unload, from the status
    samples taken after it was sent and before the unload returned: queued behind the
    unload with a slot free (queued_behind), admitted past it (admitted_past: one more
    active slot than the work in front), or not observed."""
    window = [s for s in st.poller.samples if s.ok and s.present and taken_at(s) >= t_later and s.t <= t_unload_done]
    actives = [s.active for s in window if s.active is not None]
    queued = [s.queued for s in window if s.queued is not None]
    info: LaterSamples = {
        "polls": len(window),
        "max_active": max(actives, default=None),
        "max_queued": max(queued, default=None),
    }
    if any((s.active or 0) > busy for s in window):
        return "admitted_past", info
    if any((s.queued or 0) >= 1 and s.active is not None and s.active <= busy for s in window):
        return "queued_behind", info
    return "unobserved", info


async def unload_in_flight(c: CampaignContext, st: Start, n: int, which: str) -> None:
    """The unload probe, tried again (bounded) until the later request is seen queued
    behind the waiting unload: an order not observed, or a later request admitted past the
    unload (which a busy server may not have enqueued yet), is tried again with the gap
    changed for what that try saw (`next_gap_s`)."""
    gap = later_gap_s(st)
    for tried in range(1, UNLOAD_TRIES + 1):
        order = await _unload_in_flight_once(c, st, n, which, tried, gap)
        if order == "queued_behind":
            return
        gap = next_gap_s(st, gap, order)


async def _unload_in_flight_once(c: CampaignContext, st: Start, n: int, which: str, tried: int, gap: float) -> str:
    """N requests active, then an unload: it must wait for them (admitting nothing past
    it) and leave the model unloaded; then a cold reload. Returns the observed order."""
    await _unload_all(c, st)
    base = c.requests[0]
    st.phases.set(f"unload_{which}")
    route, payload = (
        (ROUTE_BULK_UNLOAD, {"model_ids": [c.plan.model_id]})
        if which == "targeted"
        else ("/v1/tasks/unload_all_models", {})
    )
    history = list(st.histories[0])
    replies: list[Reply] = []
    unload: dict[str, Reply] = {}
    later: dict[str, Reply] = {}
    # Keep one slot spare (when there is more than one): a later request must still queue
    # behind the waiting unload instead of taking the free slot (no barging).
    busy = max(1, n - 1)
    sent: dict[str, float | bool] = {}

    async def wave() -> None:
        replies.extend(await release_together(st.client, c.settings.route, [c.body(base)] * busy))

    async def manage() -> None:
        sent["unload"] = time.monotonic()
        unload["reply"] = await st.client.post(route, payload)

    async def late() -> None:
        sent["t"] = time.monotonic()
        sent["unload_pending"] = "reply" not in unload
        later["reply"] = await st.client.post(c.settings.route, c.body(base))

    async with anyio.create_task_group() as tg:
        tg.start_soon(wave)
        active = await st.wait_status(
            lambda s: (s.active or 0) >= busy and bool(s.loaded), 5.0, needs=("active", "loaded")
        )
        tg.start_soon(manage)
        await anyio.sleep(gap)
        tg.start_soon(late)
    for reply in replies:
        st.record(
            f"unload_{which}_inflight",
            0,
            base.name,
            reply,
            history=history if all(h == history for h in st.histories[:n]) else None,
        )
    st.reset_histories()
    late_reply = later["reply"]
    # The later request ran after the unload: on a freshly rebuilt pool (cold).
    st.record(f"unload_{which}_later", 0, base.name, late_reply, history=[])
    st.histories[0].append(base.name)
    u = unload["reply"]
    order, samples = later_order(st, busy, sent["t"], u.t_done)
    # Status reads the server answered in full between the unload's send and the later
    # request's: the server was serving requests that came after the unload before the
    # later one existed, so the unload had reached it first (see ORDER_SHOWN_POLLS).
    t_unload = sent.get("unload")
    answered_between = (
        0
        if t_unload is None
        else sum(1 for s in st.poller.samples if s.ok and taken_at(s) >= t_unload and s.t <= sent["t"])
    )
    # Unloaded: loaded:false seen after the in-flight work was done (before the later
    # request's reload finished), and on a quiet second unload of the same kind.
    last_inflight = max((r.t_done for r in replies), default=u.t_done)
    seen_unloaded = st.loaded_false_between(last_inflight, late_reply.t_done)
    await st.settle(f"unload_{which}")
    again = await st.client.post(route, payload)
    check = await st.observe_unloaded(again)
    st.reset_histories()
    event = M4InFlightUnloadEvent(
        kind="m4_targeted_unload" if which == "targeted" else "m4_all_unload",
        run=st.name,
        attempt=st.attempt,
        issued_while_active=active is not None,
        unload=u.summary(),
        unload_done=st.rel(u.t_done),
        requests_done=[st.rel(r.t_done) for r in replies],
        requests_latency=[round(r.elapsed_s, 6) for r in replies],
        later_done=st.rel(late_reply.t_done),
        busy=busy,
        gap_s=gap,
        unload_pending_at_later_send=bool(sent.get("unload_pending")),
        polls_before_later=answered_between,
        later_order=order if sent.get("unload_pending") else "unobserved",
        later_samples=samples,
        # Kept for older readers: the most active slots while the unload waited.
        active_while_unload_waits=samples["max_active"] or 0,
        unloaded_seen=seen_unloaded,
        unload_check=check,
        ended_unloaded=seen_unloaded or check["loaded_false"],
        tries=tried,
        max_tries=UNLOAD_TRIES,
    )
    st.log.write(event)
    await st.check_alive(f"{which} unload")
    return order if sent.get("unload_pending") else "unobserved"


async def load_failure_retry(c: CampaignContext, st: Start, n: int) -> None:
    """A failed load of the plan's own registration while healthy work is in flight, then
    the retry of that same registration.

    The broken entry keeps the model's id and every option and changes only the path; the
    retry registers the plan's entry again. So the retried output comes from the very
    registration the references were taken from (a server may make outputs depend on the
    id or path). The healthy requests are admitted before the broken load and must finish
    exact; afterwards the model's counters must drain (the failure released its lease)."""
    if c.plan.recovery["load_failure"] == "none":
        c.log.write(
            M4ProbeSkippedEvent(kind="m4_load_failure", run=st.name, skipped="plan sets recovery.load_failure: none")
        )
        return
    if not c.plan.server["ui_management"]:
        c.log.write(
            M4ProbeSkippedEvent(
                kind="m4_load_failure",
                run=st.name,
                skipped="registration needs server.ui_management (a native-model-manager build)",
            )
        )
        return
    await _unload_all(c, st)
    base = c.requests[0]
    st.phases.set("load_failure")
    broken = c.model_entry(slots=n, path=str(c.run_dir / "missing-model.bin"))
    replies: list[Reply] = []
    failure: dict[str, Reply] = {}

    async def healthy() -> None:
        replies.extend(await release_together(st.client, c.settings.route, [c.body(base)] * n))

    async def fail() -> None:
        failure["reply"] = await st.client.post(ROUTE_LOAD, broken)

    async with anyio.create_task_group() as tg:
        tg.start_soon(healthy)
        active = await st.wait_status(lambda s: (s.active or 0) >= 1, 5.0)
        tg.start_soon(fail)
    fail_reply = failure["reply"]
    # Every healthy request ran on a fresh pool (unloaded just before): cold.
    for reply in replies:
        st.record("load_failure_alongside", 0, base.name, reply, history=[])
    st.reset_histories()
    await st.check_alive("failed load")
    drained = await st.drained()
    good = await st.client.post(ROUTE_LOAD, c.model_entry(slots=n))
    out = await st.client.post(c.settings.route, c.body(base))
    st.record("load_retry", 0, base.name, out, history=[])
    st.histories[0].append(base.name)
    event = M4LoadFailureEvent(
        kind="m4_load_failure",
        run=st.name,
        attempt=st.attempt,
        failure=fail_reply.summary(),
        failed=fail_reply.status is not None and fail_reply.status >= 400,
        retry=good.summary(),
        retried=good.status == 200,
        registration={"id": c.plan.model_id, "path": str(c.plan.model_path), "broken_path": str(broken["path"])},
        healthy_in_flight=active is not None,
        healthy=len(replies),
        healthy_done=[st.rel(r.t_done) for r in replies],
        failure_done=st.rel(fail_reply.t_done),
        drained=drained,
    )
    st.log.write(event)
    await st.check_alive("load failure retry")


async def rejection_latency(c: CampaignContext, st: Start, n: int) -> None:
    """P4: with every slot overdue, a probe with a 1 ms busy timeout must be rejected fast."""
    if not c.plan.performance["rejection_probe"]:
        return
    base = c.requests[0]
    st.phases.set("rejection_probe")
    latencies: list[JsonValue] = []
    statuses: list[int | None] = []

    async def wave() -> None:
        await release_together(st.client, c.settings.route, [c.body(base)] * n)

    for _ in range(3):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wave)
            await st.wait_status(lambda s: (s.active or 0) >= n and bool(s.loaded), 5.0, needs=("active", "loaded"))
            await anyio.sleep(0.01)
            probe = {**c.body(base), "busy_timeout_ms": 1}
            t0 = time.monotonic()
            reply = await st.client.post(c.settings.route, probe)
            latencies.append(round((time.monotonic() - t0) * 1000, 3))
            statuses.append(reply.status)
    st.histories = [["?"] for _ in st.histories]
    st.log.write(
        RejectionLatencyEvent(
            kind="rejection_latency",
            run=st.name,
            attempt=st.attempt,
            count=n,
            latencies_ms=latencies,
            statuses=statuses,
        )
    )


async def _unload_all(c: CampaignContext, st: Start) -> None:
    await st.client.post("/v1/tasks/unload_all_models", {})
    st.reset_histories()
