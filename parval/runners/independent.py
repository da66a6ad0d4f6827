"""P3 (optional): the same N requests on N independent one-slot candidate servers, one
request each, released together — the deployment alternative to N shared slots."""

from __future__ import annotations

import time
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel

from parval.jsontypes import JsonValue
from parval.rundir.event_types import PerfEvent
from parval.server.client import Reply

if TYPE_CHECKING:
    from parval.runners.campaign_context import CampaignContext
    from parval.runners.start import Start


async def independent_servers(c: CampaignContext, n: int) -> None:
    base = c.requests[0]
    async with AsyncExitStack() as stack:
        starts: list[Start] = []
        for i in range(n):
            spec = c.launch("candidate", flagged=True, slots=1)
            starts.append(await stack.enter_async_context(c.start(f"independent-{n}-{i}", "independent", spec, 1)))
        cold_s: float | None = None
        for rep in range(c.plan.performance["warm_repeats"] + 1):
            replies: list[Reply | None] = [None] * n
            gate = anyio.Event()

            async def one(i: int, gate: anyio.Event, replies: list[Reply | None]) -> None:
                await gate.wait()
                replies[i] = await starts[i].client.post(c.settings.route, c.body(base))

            async with anyio.create_task_group() as tg:
                for i in range(n):
                    tg.start_soon(one, i, gate, replies)
                await anyio.lowlevel.checkpoint()
                t0 = time.monotonic()
                gate.set()
            batch = time.monotonic() - t0
            done = [r for r in replies if r is not None]
            for st, reply in zip(starts, done, strict=True):
                st.record("independent", rep, base.name, reply, history=None, slot=0)
            if rep == 0:
                cold_s = round(batch, 6)
                continue
            latencies: list[JsonValue] = [round(r.elapsed_s, 6) for r in done]
            c.log.write(
                PerfEvent(
                    kind="perf",
                    unit=f"independent-{n}",
                    series="independent_servers",
                    count=n,
                    repeat=rep - 1,
                    cold_s=cold_s,
                    batch_s=round(batch, 6),
                    latencies_s=latencies,
                    failures=sum(r.outcome != "ok" for r in done),
                )
            )
