"""Fast /v1/models poller: the server's own proof that N requests held slots at once.

It runs alone in its task with its own connection budget, so slow memory queries or a
busy wave client never stretch its interval (a short overlap of leases must not hide).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio
import httpx

from parval.procedure.server_facts import ROUTE_MODELS
from parval.rundir.event_types import WaveStatus


@dataclass(frozen=True)
class StatusSample:
    t: float
    ok: bool
    active: int | None = None
    queued: int | None = None
    loaded: bool | None = None
    max_parallel: int | None = None
    slots: int | None = None
    present: bool = False
    # When the poll that produced this sample was sent: the state it shows is no older.
    t_sent: float | None = None

    def to_json(self) -> list[float | int | bool | None]:
        return [round(self.t, 6), self.active, self.queued, self.loaded, self.max_parallel]


def parse_models(body: bytes, model_id: str) -> StatusSample | None:
    try:
        data = json.loads(body)
        entries = data["data"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(entries, list):
        return None

    def _int(e: dict[str, object], key: str) -> int | None:
        v = e.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    for e in entries:
        if isinstance(e, dict) and e.get("id") == model_id:
            loaded = e.get("loaded")
            return StatusSample(
                t=time.monotonic(),
                ok=True,
                active=_int(e, "active_slots"),
                queued=_int(e, "queued_requests"),
                loaded=loaded if isinstance(loaded, bool) else None,
                max_parallel=_int(e, "max_parallel_slots"),
                slots=_int(e, "slots"),
                present=True,
            )
    return StatusSample(t=time.monotonic(), ok=True, present=False)


T = TypeVar("T")


class PollLoop(Generic[T]):
    """GET /v1/models in a loop every `interval_s`; each poll appends one sample and wakes
    whoever waits for the next one. Subclasses say what one poll records."""

    read_timeout_s = 5.0

    def __init__(self, base_url: str, interval_s: float) -> None:
        self.base_url = base_url
        self.interval_s = interval_s
        self.samples: list[T] = []
        self.errors = 0
        self._changed = anyio.Event()
        self._nudge = anyio.Event()

    def nudge(self) -> None:
        """Poll now instead of at the end of the interval: a caller waits for a fresh sample
        (a drain check between waves must not sit out the rest of a poll interval)."""
        self._nudge.set()

    @property
    def latest(self) -> T | None:
        return self.samples[-1] if self.samples else None

    def add(self, sample: T) -> None:
        """Record a sample and wake the waiters."""
        self.samples.append(sample)
        self._changed.set()
        self._changed = anyio.Event()

    async def poll_once(self, client: httpx.AsyncClient) -> T:
        raise NotImplementedError

    async def run(self) -> None:
        limits = httpx.Limits(max_connections=2, max_keepalive_connections=0)
        async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(self.read_timeout_s)) as client:
            while True:
                t0 = time.monotonic()
                self._nudge = anyio.Event()  # a nudge from here on asks for the next poll
                await self.poll_once(client)
                with anyio.move_on_after(max(0.0, self.interval_s - (time.monotonic() - t0))):
                    await self._nudge.wait()


class StatusPoller(PollLoop[StatusSample]):
    """One model's counters, as the campaign's starts watch them."""

    def __init__(self, base_url: str, model_id: str, interval_s: float) -> None:
        super().__init__(base_url, interval_s)
        self.model_id = model_id

    async def poll_once(self, client: httpx.AsyncClient) -> StatusSample:
        t_sent = time.monotonic()
        try:
            resp = await client.get(self.base_url + ROUTE_MODELS)
            sample = parse_models(resp.content, self.model_id) if resp.status_code == 200 else None
        except httpx.HTTPError:
            sample = None
        if sample is None:
            self.errors += 1
            sample = StatusSample(t=time.monotonic(), ok=False)
        self.add(dataclasses.replace(sample, t_sent=t_sent))
        return self.samples[-1]

    async def wait_for(self, predicate: Callable[[StatusSample], object], timeout_s: float) -> StatusSample | None:
        """Wait until a sample taken after this call started satisfies `predicate`; None on
        timeout. A sample polled before the call shows a state the caller may since have
        changed (a request just sent, an unload just asked for), so it never counts."""
        t_call = time.monotonic()
        seen = len(self.samples)  # every sample already here was polled before the call
        self.nudge()
        with anyio.move_on_after(timeout_s):
            while True:
                fresh, seen = self.samples[seen:], len(self.samples)
                for s in fresh:
                    if s.ok and taken_at(s) >= t_call and predicate(s):
                        return s
                await self._changed.wait()
        return None

    def window(self, t0: float, t1: float) -> list[StatusSample]:
        return [s for s in self.samples if t0 <= s.t <= t1]


def taken_at(s: StatusSample) -> float:
    """When the poll behind a sample was sent (its receipt time for older samples)."""
    return s.t_sent if s.t_sent is not None else s.t


def summarise_window(samples: list[StatusSample], n: int) -> WaveStatus:
    """What the poller saw during one wave."""
    ok = [s for s in samples if s.ok and s.present]
    actives = [s.active for s in ok if s.active is not None]
    loaded_actives = [s.active for s in ok if s.active is not None and s.loaded]
    span = (samples[-1].t - samples[0].t) if len(samples) > 1 else 0.0
    return {
        "polls": len(samples),
        "poll_errors": len(samples) - len(ok),
        "poll_hz": round(len(samples) / span, 1) if span > 0 else None,
        "max_active": max(actives) if actives else None,
        "max_active_loaded": max(loaded_actives) if loaded_actives else None,
        "max_queued": max((s.queued for s in ok if s.queued is not None), default=None),
        "fields_present": bool(actives),
        "expected": n,
    }
