"""The multi-model status poller of a rig: one `Snapshot` of every watched model per poll."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import httpx

from parval.procedure.server_facts import ROUTE_MODELS
from parval.server.status_poller import PollLoop, StatusSample, parse_models


@dataclass(frozen=True)
class Snapshot:
    t: float
    ok: bool
    rtt: float
    models: dict[str, StatusSample]

    def get(self, model_id: str) -> StatusSample | None:
        return self.models.get(model_id)

    def active(self, model_id: str) -> int:
        s = self.models.get(model_id)
        return (s.active or 0) if s else 0

    def queued(self, model_id: str) -> int:
        s = self.models.get(model_id)
        return (s.queued or 0) if s else 0

    def loaded(self, model_id: str) -> bool | None:
        s = self.models.get(model_id)
        return s.loaded if s else None

    def capacity(self, model_id: str) -> int | None:
        s = self.models.get(model_id)
        return s.max_parallel if s else None

    def slots(self, model_id: str) -> int | None:
        s = self.models.get(model_id)
        return s.slots if s else None


class ModelsPoller(PollLoop[Snapshot]):
    """One snapshot of every watched model per poll (observational)."""

    read_timeout_s = 30.0

    def __init__(self, base_url: str, model_ids: list[str], interval_s: float) -> None:
        super().__init__(base_url, interval_s)
        self.model_ids = list(model_ids)

    async def poll_once(self, client: httpx.AsyncClient) -> Snapshot:
        t0 = time.monotonic()
        models: dict[str, StatusSample] = {}
        ok = False
        try:
            resp = await client.get(self.base_url + ROUTE_MODELS)
            if resp.status_code == 200:
                ok = True
                for mid in self.model_ids:
                    sample = parse_models(resp.content, mid)
                    if sample is not None and sample.present:
                        models[mid] = sample
        except httpx.HTTPError:
            pass
        if not ok:
            self.errors += 1
        t1 = time.monotonic()
        self.add(Snapshot(t1, ok, t1 - t0, models))
        return self.samples[-1]

    async def wait_for(
        self, predicate: Callable[[Snapshot], bool], timeout_s: float, *, after: float | None = None
    ) -> Snapshot | None:
        """A snapshot taken after `after` (default: now) that satisfies `predicate`."""
        since = time.monotonic() if after is None else after
        with anyio.move_on_after(timeout_s):
            while True:
                s = self.latest
                if s is not None and s.ok and s.t >= since and predicate(s):
                    return s
                await self._changed.wait()
        return None

    def between(self, t0: float, t1: float) -> list[Snapshot]:
        return [s for s in self.samples if t0 <= s.t <= t1 and s.ok]
