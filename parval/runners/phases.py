"""One advertised-count start (M2/M3): true cold wave first, warm waves, mixed waves with
ordered and reversed admission, unload/reload, serial reuse."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import anyio

from parval.plan import NamedRequest
from parval.runners.start import Start, StartAborted

if TYPE_CHECKING:
    from parval.runners.campaign import Campaign


async def count_start(c: Campaign, name: str, n: int, s: int) -> None:
    from parval.runners.campaign import wave_together

    spec = c.launch("candidate", flagged=True, slots=n)
    async with c.start(name, "count", spec, n, start_index=s) as st:
        base = c.requests[0]
        await wave_together(c, st, "cold_wave", 0, [base] * n)
        for w in range(1, c.plan.waves["warm"] + 1):
            await wave_together(c, st, "warm_wave", w, [base] * n)
        mixed = c.plan.waves["mixed_at_largest"] if n == max(c.plan.counts) else c.plan.waves["mixed"]
        for m in range(mixed):
            await wave_ordered(c, st, "mixed_wave", m, mixed_order(c.requests, n, m))
        await unload_reload(c, st, n)
        await serial_reuse(c, st, c.plan.waves["serial_reuse"])


def mixed_order(reqs: list[NamedRequest], n: int, m: int) -> list[NamedRequest]:
    """Slot i gets a different request each wave; odd waves admit in reversed order."""
    order = [reqs[(i + m * n) % len(reqs)] for i in range(n)]
    return order[::-1] if m % 2 == 1 else order


# A wave whose N leases were not all seen at once is repeated (every attempt is recorded
# and compared): on a loaded machine the client may fail to overlap short requests, and
# that must not read as a server that cannot run N at once.
WAVE_ATTEMPTS = 3


def concurrency_shown(wave_event: dict[str, Any], n: int) -> bool:
    seen = (wave_event.get("status") or {}).get("max_active_loaded")
    return seen is not None and seen >= n


async def wave_ordered(c: Campaign, st: Start, phase: str, wave: int,
                       order: list[NamedRequest]) -> None:
    for attempt in range(WAVE_ATTEMPTS):
        event = await _wave_ordered_once(c, st, phase, wave, order, attempt)
        if concurrency_shown(event, len(order)) or len(order) == 1:
            return


async def _wave_ordered_once(c: Campaign, st: Start, phase: str, wave: int,
                             order: list[NamedRequest], retry: int) -> dict[str, Any]:
    from parval.runners.waves import ordered_admission

    n = len(order)
    st.phases.set(f"{phase}:{wave}")
    offset = st.server.stderr_size()
    t_start = time.monotonic()
    # Admission must be observed well within one service time; 2 s is generous for any
    # server whose requests last long enough to overlap at all.
    with anyio.move_on_after(c.plan.timeouts["wave_s"]) as scope:
        replies, info = await ordered_admission(
            st.client, st.poller, c.settings.route, [c.body(r) for r in order],
            admit_timeout_s=min(2.0, c.plan.timeouts["request_s"]))
    t_end = time.monotonic()
    if scope.cancelled_caught:
        c.log.append("wave_timeout", run=st.name, phase=phase, wave=wave)
        raise StartAborted(f"{st.name}: {phase} wave {wave} exceeded timeouts.wave_s")
    mapping_known = info["ordered_ok"] and not info["finished_early"]
    trace, _ = st.trace_lines(offset)
    confirmed = confirm_slots(trace, order) if trace else None
    with st.log.group(st.store):
        for i, (req, reply) in enumerate(zip(order, replies, strict=True)):
            if mapping_known or not st.cache_sensitive:
                history: list[str] | None = list(st.histories[i]) if mapping_known else ["?"]
            else:
                history = None
            st.record(phase, wave, req.name, reply, history=history,
                      slot=i if mapping_known else None, reversed=wave % 2 == 1, retry=retry)
    for i, req in enumerate(order):
        st.histories[i].append(req.name if mapping_known else "?")
    await st.check_alive(f"{phase} wave {wave}")
    drained = await st.drained()
    event = st.wave_event(phase, wave, n, "reversed" if wave % 2 == 1 else "ordered", t_start, t_end,
                          replies, drained, admission=info, trace_lines=len(trace),
                          trace_confirmed=confirmed, order=[r.name for r in order], retry=retry)
    st.phases.set("idle")
    return event


def confirm_slots(trace: list[dict[str, object]], order: list[NamedRequest]) -> bool:
    """Each slot i served the request admitted i-th (matched on text and seed)."""
    for i, req in enumerate(order):
        text = str(req.body.get("text", ""))
        seed = req.body.get("seed")
        seed_s = "" if seed is None else str(seed)
        if not any(t.get("slot") == i and t.get("text", "") == text and str(t.get("seed", "")) == seed_s
                   for t in trace):
            return False
    return True


async def unload_reload(c: Campaign, st: Start, n: int) -> None:
    from parval.runners.campaign import wave_together

    st.phases.set("unload")
    reply = await st.client.post("/v1/tasks/unload_models", {"model_ids": [c.plan.model_id]})
    seen = await st.poller.wait_for(lambda s: s.loaded is False, 2.0)
    body = reply.json()
    c.log.append("probe", run=st.name, attempt=st.attempt, name="unload", reply=reply.summary(),
                 body=body if isinstance(body, dict) else None,
                 listed=isinstance(body, dict) and c.plan.model_id in (body.get("unloaded") or []),
                 loaded_false=seen is not None)
    st.reset_histories()
    await st.settle("unload")
    await st.check_alive("unload")
    await wave_together(c, st, "reload_wave", 0, [c.requests[0]] * n)


async def serial_reuse(c: Campaign, st: Start, k: int) -> None:
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
