"""Ordered admission: each request of a wave is sent only after the server is observed
holding the previous ones, so that with lowest-free-slot admission every slot's history
is known (M3.history, M3.reversed)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import anyio

from parval.rundir.event_types import AdmissionInfo
from parval.server.client import OK, Client, Reply
from parval.server.status_poller import StatusPoller, StatusSample, taken_at

# Without counters to watch, requests of an ordered wave are sent this far apart so that
# they arrive in order; their admission cannot be observed.
UNOBSERVED_GAP_S = 0.002


async def ordered_admission(
    client: Client,
    poller: StatusPoller,
    path: str,
    bodies: Sequence[object],
    *,
    admit_timeout_s: float,
    timeout_s: float | None = None,
    observe: bool = True,
) -> tuple[list[Reply], AdmissionInfo]:
    """Send request i only after the server reports i active slots (so it holds slot i-1).

    With lowest-free-slot admission this makes each slot's history predictable. The info
    dict says whether every admission was observed and whether any request finished before
    the last one was admitted (which would invalidate the slot mapping). With
    `observe=False` (the server publishes no slot counters) nothing is waited for: the
    requests go out in order, a moment apart, and the admission is recorded as unobserved.
    """
    replies: list[Reply | None] = [None] * len(bodies)
    info: AdmissionInfo = {
        "ordered_ok": True,
        "finished_early": False,
        "admit_waits_ms": [],
        "observed": observe,
        "admit_timeout_s": round(admit_timeout_s, 4),
    }
    done = 0
    done_at: list[float] = []

    async def one(i: int) -> None:
        nonlocal done
        replies[i] = await client.post(path, bodies[i], timeout_s)
        done += 1
        done_at.append(time.monotonic())

    async with anyio.create_task_group() as tg:
        for i in range(len(bodies)):
            t0 = time.monotonic()
            in_flight = i + 1 - done  # request i and the earlier ones not finished yet
            tg.start_soon(one, i)
            if not observe:
                info["ordered_ok"] = False
                if i < len(bodies) - 1:
                    await anyio.sleep(UNOBSERVED_GAP_S)
                continue

            def admitted(s: StatusSample, want: int = i + 1, t0: float = t0) -> bool:
                return (s.active or 0) >= want and s.t > t0

            def refused(i: int = i) -> bool:
                # Answered with an error (refused, connection lost): it holds no slot, so
                # no poll will show it admitted and the wait would only run out.
                reply = replies[i]
                return reply is not None and reply.outcome != OK

            seen = await poller.wait_for(lambda s: admitted(s) or refused(), admit_timeout_s)
            if seen is not None and not admitted(seen):
                seen = None
            info["admit_waits_ms"].append(round((time.monotonic() - t0) * 1000, 2))
            if seen is None:
                info["ordered_ok"] = False
                # Polls taken while all `in_flight` requests were still outstanding.
                until = min((t for t in done_at if t >= t0), default=time.monotonic())
                polls = [
                    s.active
                    for s in poller.samples
                    if s.ok and s.active is not None and t0 <= taken_at(s) and s.t <= until
                ]
                if in_flight >= 2 and len(polls) >= 2:
                    # Observed: the server kept fewer than i+1 leases while several
                    # requests were in flight. Later admissions would stall the same way,
                    # so the rest of the wave is sent without waiting.
                    info["stalled"] = {
                        "request": i,
                        "want": i + 1,
                        "outstanding": in_flight,
                        "polls": len(polls),
                        "max_active": max(polls),
                    }
                    observe = False
            if done and i < len(bodies) - 1:
                info["finished_early"] = True
    return [r for r in replies if r is not None], info
