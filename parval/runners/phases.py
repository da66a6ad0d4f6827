"""One advertised-count start (M2/M3): true cold wave first, warm waves, mixed waves with
ordered and reversed admission, unload/reload, serial reuse."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio

from parval.jsonread import as_int, get, item
from parval.jsontypes import JsonObject
from parval.plan.load import NamedRequest
from parval.plan.waves import MIN_POLLS_IN_FLIGHT, UNLOAD_CYCLES, WAVE_ATTEMPTS, mixed_waves
from parval.procedure.server_facts import ROUTE_BULK_UNLOAD
from parval.rundir.event_types import ProbeEvent, WaveRepeatEvent, WaveTimeoutEvent
from parval.runners.start import Start, StartAborted
from parval.server.status_poller import summarise_window

if TYPE_CHECKING:
    from parval.runners.campaign_context import CampaignContext


async def count_start(c: CampaignContext, name: str, n: int, s: int) -> None:
    spec = c.launch("candidate", flagged=True, slots=n)
    async with c.start(name, "count", spec, n, start_index=s) as st:
        await count_waves(c, st, n)


async def memory_baseline_start(c: CampaignContext, name: str, n: int) -> None:
    """The same waves on the baseline build (unflagged, same model settings), for the memory
    comparison the plan declares (memory.baseline_comparison, M5.baseline)."""
    spec = c.launch("baseline", flagged=False)
    async with c.start(name, "membase", spec, n, exe_role="baseline") as st:
        await count_waves(c, st, n)


async def count_waves(
    c: CampaignContext,
    st: Start,
    n: int,
    mixed: int | None = None,
    deadline: float | None = None,
    *,
    released: bool = False,
) -> None:
    """Everything one start at count n runs, in order. `mixed`: mixed warm waves (the plan's
    by default), the last of them started before `deadline` (time.monotonic) where one is
    given, each released together instead of admitted in order with `released` (a soak
    start: parval.runners.soak)."""
    base = c.requests[0]
    await wave_together(c, st, "cold_wave", 0, [base] * n)
    for w in range(1, c.plan.waves["warm"] + 1):
        await wave_together(c, st, "warm_wave", w, [base] * n)
    for m in range(mixed_waves(c.plan.raw, n) if mixed is None else mixed):
        if deadline is not None and time.monotonic() >= deadline:
            break
        wave = wave_together if released else wave_ordered
        await wave(c, st, "mixed_wave", m, mixed_order(c.requests, n, m))
    await unload_reload(c, st, n)
    await serial_reuse(c, st, c.plan.waves["serial_reuse"])


def mixed_order(reqs: list[NamedRequest], n: int, m: int) -> list[NamedRequest]:
    """Waves come in pairs: wave 2k admits a mix in order, wave 2k+1 the same mix reversed,
    so every pair of requests admitted together is also admitted in the opposite order
    (M3.reversed); successive pairs move on to other requests. A single slot has no order
    to reverse, so at n=1 every wave takes the next request."""
    if n == 1:
        return [reqs[m % len(reqs)]]
    k = m // 2
    order = [reqs[(i + k * n) % len(reqs)] for i in range(n)]
    return order[::-1] if m % 2 == 1 else order


def concurrency_shown(wave_event: JsonObject, n: int) -> bool:
    seen = get(wave_event.get("status") or {}, "max_active_loaded")  # WaveStatus: int or None
    return isinstance(seen, (int, float)) and seen >= n


def repeat_reason(st: Start, wave_event: JsonObject, n: int) -> tuple[bool, str] | None:
    """(repeat?, why) for a wave that did not show N leases at once; None when it did."""
    if n == 1 or concurrency_shown(wave_event, n):
        return None
    if not st.counters_published:
        return False, "the server publishes no slot counters (active_slots absent from /v1/models)"
    stalled = get(wave_event.get("admission") or {}, "stalled")
    if stalled:
        return False, (
            f"active_slots stayed at {item(stalled, 'max_active')} in {item(stalled, 'polls')} polls "
            f"while {item(stalled, 'outstanding')} requests were in flight (admission of "
            f"request {as_int(item(stalled, 'request')) + 1} of {n} not seen)"
        )
    flight = wave_event.get("all_in_flight") or {}
    polls = as_int(get(flight, "polls") or 0)
    if polls >= MIN_POLLS_IN_FLIGHT:
        return False, (
            f"active_slots stayed at {get(flight, 'max_active')} in {polls} polls "
            f"while all {n} requests were in flight for {get(flight, 'ms')} ms"
        )
    return True, (
        f"all {n} requests were in flight together for {get(flight, 'ms', 0)} ms, "
        f"{polls} poll(s): too short for the poller to see the overlap"
    )


def decide_repeat(c: CampaignContext, st: Start, wave_event: JsonObject, n: int, retry: int) -> bool:
    """Record why a wave is or is not repeated (the gates read it); True to repeat."""
    decision = repeat_reason(st, wave_event, n)
    if decision is None:
        return False
    repeat, why = decision
    if repeat and retry + 1 >= WAVE_ATTEMPTS:
        repeat, why = False, f"{why}; {WAVE_ATTEMPTS} attempts made"
    c.log.write(
        WaveRepeatEvent(
            kind="wave_repeat",
            run=st.name,
            attempt=st.attempt,
            count=st.count,
            phase=str(wave_event["phase"]),
            wave=as_int(wave_event["wave"]),
            n=n,
            retry=retry,
            repeat=repeat,
            reason=why,
        )
    )
    return repeat


async def wave_ordered(c: CampaignContext, st: Start, phase: str, wave: int, order: list[NamedRequest]) -> None:
    for attempt in range(WAVE_ATTEMPTS):
        event = await _wave_ordered_once(c, st, phase, wave, order, attempt)
        if not decide_repeat(c, st, event, len(order), attempt):
            return


async def _wave_ordered_once(
    c: CampaignContext, st: Start, phase: str, wave: int, order: list[NamedRequest], retry: int
) -> JsonObject:
    from parval.server.admission import ordered_admission

    n = len(order)
    st.phases.set(f"{phase}:{wave}")
    offset = st.server.stderr_size()
    t_start = time.monotonic()
    # Admission shows within a poll or two of a free slot: wait a few service times
    # measured in this start (2 s at most), and not at all without counters to watch.
    with anyio.move_on_after(c.plan.timeouts["wave_s"]) as scope:
        replies, info = await ordered_admission(
            st.client,
            st.poller,
            c.settings.route,
            [c.body(r) for r in order],
            admit_timeout_s=st.admit_timeout_s(min(2.0, c.plan.timeouts["request_s"])),
            observe=st.counters_published,
        )
    t_end = time.monotonic()
    if scope.cancelled_caught:
        wave_timed_out(c, st, phase, wave, len(order), t_start)
    mapping_known = info["ordered_ok"] and not info["finished_early"]
    trace, _ = st.trace_lines(offset)
    confirmed = confirm_slots(trace, order) if trace else None
    with st.log.group(st.store):
        for i, (req, reply) in enumerate(zip(order, replies, strict=True)):
            if mapping_known or not st.cache_sensitive:
                history: list[str] | None = list(st.histories[i]) if mapping_known else ["?"]
            else:
                history = None
            st.record(
                phase,
                wave,
                req.name,
                reply,
                history=history,
                slot=i if mapping_known else None,
                reversed=wave % 2 == 1,
                retry=retry,
            )
    for i, req in enumerate(order):
        st.histories[i].append(req.name if mapping_known else "?")
    await st.check_alive(f"{phase} wave {wave}")
    drained = await st.drained()
    event = st.wave_event(
        phase,
        wave,
        n,
        "reversed" if wave % 2 == 1 else "ordered",
        t_start,
        t_end,
        replies,
        drained,
        admission=info,
        trace_lines=len(trace),
        trace_confirmed=confirmed,
        order=[r.name for r in order],
        retry=retry,
    )
    st.phases.set("idle")
    return event


def wave_timed_out(c: CampaignContext, st: Start, phase: str, wave: int, n: int, t_start: float) -> None:
    """Record a wave that did not complete within timeouts.wave_s (a hung server) with what
    the status poller saw meanwhile, and end the start there (M2.starts BLOCKED)."""
    limit = c.plan.timeouts["wave_s"]
    seen = summarise_window(st.poller.window(t_start, time.monotonic()), n)
    c.log.write(
        WaveTimeoutEvent(
            kind="wave_timeout",
            run=st.name,
            attempt=st.attempt,
            count=st.count,
            phase=phase,
            wave=wave,
            n=n,
            reason=(
                f"{phase} wave {wave} of {n} request(s) got no complete set of replies within "
                f"timeouts.wave_s={limit:g} (the status poller saw at most {seen['max_active']} active, "
                f"{seen['max_queued']} queued)"
            ),
            status=seen,
        )
    )
    raise StartAborted(f"{st.name}: {phase} wave {wave} exceeded timeouts.wave_s={limit:g}")


def confirm_slots(trace: list[dict[str, object]], order: list[NamedRequest]) -> bool:
    """Each slot i served the request admitted i-th (matched on text and seed)."""
    for i, req in enumerate(order):
        text = str(req.body.get("text", ""))
        seed = req.body.get("seed")
        seed_s = "" if seed is None else str(seed)
        if not any(
            t.get("slot") == i and t.get("text", "") == text and str(t.get("seed", "")) == seed_s for t in trace
        ):
            return False
    return True


async def unload_reload(c: CampaignContext, st: Start, n: int) -> None:

    for cycle in range(UNLOAD_CYCLES):
        st.phases.set("unload")
        reply = await st.client.post(ROUTE_BULK_UNLOAD, {"model_ids": [c.plan.model_id]})
        # Unloaded means /v1/models shows loaded:false, not that the reply lists the id
        # (it lists every known id, loaded or not).
        check = await st.observe_unloaded(reply)
        body = reply.json()
        c.log.write(
            ProbeEvent(
                kind="probe",
                run=st.name,
                attempt=st.attempt,
                name="unload",
                cycle=cycle,
                body=body if isinstance(body, dict) else None,
                listed=isinstance(body, dict) and c.plan.model_id in (body.get("unloaded") or []),
                # what /v1/models showed after it (`Start.observe_unloaded`)
                reply=check["reply"],
                loaded_false=check["loaded_false"],
                polls_after=check["polls_after"],
                still_loaded=check["still_loaded"],
                loaded_field=check["loaded_field"],
            )
        )
        st.reset_histories()
        # the idle level after the unload, compared by M5 with the one before the first load
        await st.settle("unload")
        await st.check_alive("unload")
        await wave_together(c, st, "reload_wave", cycle, [c.requests[0]] * n)


async def serial_reuse(c: CampaignContext, st: Start, k: int) -> None:
    st.phases.set("serial")
    base = c.requests[0]
    t_start = time.monotonic()
    replies = []
    for i in range(k):
        reply = await st.client.post(c.settings.route, c.body(base))
        st.record("serial_reuse", i, base.name, reply, history=list(st.histories[0]), slot=0)
        st.histories[0].append(base.name)
        replies.append(reply)
    await st.check_alive("serial reuse")
    drained = await st.drained()
    st.wave_event("serial_reuse", 0, 1, "serial", t_start, time.monotonic(), replies, drained)
    st.phases.set("idle")


def wave_bodies(c: CampaignContext, reqs: list[NamedRequest]) -> list[dict[str, object]]:
    return [c.body(r) for r in reqs]


async def wave_together(c: CampaignContext, st: Start, phase: str, wave: int, reqs: list[NamedRequest]) -> None:
    """N requests released together; histories known when every slot's history is the same.

    A warm wave whose N leases were not seen at once is repeated (every attempt recorded
    and compared). Cold and reload waves are not: a repeat would no longer be cold."""
    attempts = WAVE_ATTEMPTS if phase == "warm_wave" and len(reqs) > 1 else 1
    for retry in range(attempts):
        event = await _wave_together_once(c, st, phase, wave, reqs, retry)
        if attempts == 1 or not decide_repeat(c, st, event, len(reqs), retry):
            return


async def _wave_together_once(
    c: CampaignContext, st: Start, phase: str, wave: int, reqs: list[NamedRequest], retry: int
) -> JsonObject:
    from parval.server.waves import release_together

    n = len(reqs)
    same_history = all(h == st.histories[0] for h in st.histories[:n])
    history = list(st.histories[0]) if same_history else None
    st.phases.set("reload" if phase == "reload_wave" else f"{phase}:{wave}")
    offset = st.server.stderr_size()
    t_start = time.monotonic()
    with anyio.move_on_after(c.plan.timeouts["wave_s"]) as scope:
        replies = await release_together(st.client, c.settings.route, wave_bodies(c, reqs))
    t_end = time.monotonic()
    if scope.cancelled_caught:
        wave_timed_out(c, st, phase, wave, n, t_start)
    with st.log.group(st.store):
        for req, reply in zip(reqs, replies, strict=True):
            st.record(phase, wave, req.name, reply, history=history, retry=retry)
    if same_history:
        for i in range(n):
            st.histories[i].append(reqs[0].name)
    trace, _ = st.trace_lines(offset)
    await st.check_alive(f"{phase} wave {wave}")
    drained = await st.drained()
    event = st.wave_event(
        phase, wave, n, "together", t_start, t_end, replies, drained, trace_lines=len(trace), retry=retry
    )
    st.phases.set("idle")
    return event
