"""Concurrent waves: requests released together by one event, ordered admission
(each request admitted only after the previous one is observed active), and serial runs."""

from __future__ import annotations

import time
from typing import Any

import anyio

from parval.runners.client import Client, Reply
from parval.runners.status import StatusPoller


async def release_together(client: Client, path: str, bodies: list[Any],
                           timeout_s: float | None = None) -> list[Reply]:
    """Start one task per request, let all reach the gate, then open it once."""
    replies: list[Reply | None] = [None] * len(bodies)
    gate = anyio.Event()
    ready = 0

    async def one(i: int) -> None:
        nonlocal ready
        ready += 1
        await gate.wait()
        replies[i] = await client.post(path, bodies[i], timeout_s)

    async with anyio.create_task_group() as tg:
        for i in range(len(bodies)):
            tg.start_soon(one, i)
        while ready < len(bodies):
            await anyio.sleep(0)
        gate.set()
    return [r for r in replies if r is not None]


async def ordered_admission(client: Client, poller: StatusPoller, path: str, bodies: list[Any],
                            *, admit_timeout_s: float, timeout_s: float | None = None,
                            ) -> tuple[list[Reply], dict[str, Any]]:
    """Send request i only after the server reports i active slots (so it holds slot i-1).

    With lowest-free-slot admission this makes each slot's history predictable. The info
    dict says whether every admission was observed and whether any request finished before
    the last one was admitted (which would invalidate the slot mapping).
    """
    replies: list[Reply | None] = [None] * len(bodies)
    info: dict[str, Any] = {"ordered_ok": True, "finished_early": False, "admit_waits_ms": []}
    done = 0

    async def one(i: int) -> None:
        nonlocal done
        replies[i] = await client.post(path, bodies[i], timeout_s)
        done += 1

    async with anyio.create_task_group() as tg:
        for i in range(len(bodies)):
            t0 = time.monotonic()
            tg.start_soon(one, i)
            seen = await poller.wait_for(
                lambda s, want=i + 1: (s.active or 0) >= want and s.t > t0, admit_timeout_s
            )
            info["admit_waits_ms"].append(round((time.monotonic() - t0) * 1000, 2))
            if seen is None:
                info["ordered_ok"] = False
            if done and i < len(bodies) - 1:
                info["finished_early"] = True
    return [r for r in replies if r is not None], info


async def serial(client: Client, path: str, bodies: list[Any],
                 timeout_s: float | None = None) -> list[Reply]:
    return [await client.post(path, b, timeout_s) for b in bodies]
