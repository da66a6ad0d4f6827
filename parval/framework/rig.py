"""A fresh candidate server for one group of probes, with a multi-model status poller and
requests in flight that the probe can start, observe, cancel and time.

Every request is a `Flight` started in the rig's task group, so a probe can send work,
wait until the server reports it queued or active, issue management behind it, and then
judge the recorded send/completion times. Every flight and a status summary are written
to the event log.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup, TaskStatus

from parval.framework.poller import ModelsPoller, Snapshot
from parval.jsontypes import JsonObject, JsonValue
from parval.rundir.event_types import FlightEvent, RigEndEvent, RigReadyEvent, RigStartEvent, plain
from parval.server.client import Client, Reply
from parval.server.process import LaunchSpec, ServerProcess, spawn, wait_ready

if TYPE_CHECKING:
    from parval.framework.observed import Facts, Obs
    from parval.framework.probe_context import FrameworkContext


@dataclass
class Flight:
    label: str
    method: str
    path: str
    t_send: float = 0.0
    model: str | None = None  # the registration a run request addressed
    reply: Reply | None = None
    cancelled: bool = False
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope | None = None

    @property
    def finished(self) -> bool:
        return self.done.is_set()

    @property
    def t_done(self) -> float:
        return self.reply.t_done if self.reply is not None else float("inf")

    @property
    def status(self) -> int | None:
        return self.reply.status if self.reply is not None else None

    def json(self) -> JsonValue:
        return self.reply.json() if self.reply is not None else None

    def message(self) -> str:
        return self.reply.error_message() if self.reply is not None else ""

    async def wait(self, timeout_s: float) -> bool:
        with anyio.move_on_after(timeout_s):
            await self.done.wait()
        return self.finished

    def cancel(self) -> None:
        """Drop the client side (the connection closes), as a client going away would."""
        if self.scope is not None and not self.finished:
            self.cancelled = True
            self.scope.cancel()


@dataclass
class Rig:
    """One fresh candidate server of a probe, its client, poller and flights."""

    ctx: FrameworkContext
    name: str
    server: ServerProcess
    client: Client
    poller: ModelsPoller
    tg: TaskGroup
    flagged: bool
    t0: float = field(default_factory=time.monotonic)
    flights: list[Flight] = field(default_factory=list)
    stop_info: JsonObject | None = None

    def rel(self, t: float) -> float | None:
        return None if t == float("inf") else round(t - self.t0, 4)

    # -- flights --------------------------------------------------------------------------
    async def start(
        self, label: str, method: str, path: str, body: object = None, timeout_s: float | None = None
    ) -> Flight:
        model = body.get("model") if isinstance(body, dict) else None
        flight = Flight(label, method, path, model=model if isinstance(model, str) else None)
        self.flights.append(flight)
        await self.tg.start(self._fly, flight, body, timeout_s)
        return flight

    async def _fly(
        self,
        flight: Flight,
        body: object,
        timeout_s: float | None,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        with anyio.CancelScope() as scope:
            flight.scope = scope
            flight.t_send = t_send = time.monotonic()
            task_status.started()
            flight.reply = await self.client.request(flight.method, flight.path, body, timeout_s)
        if scope.cancelled_caught:
            flight.cancelled = True
        sent = self.rel(t_send)
        assert sent is not None  # a clock reading, never the unset inf
        self.ctx.log.write(
            FlightEvent(
                kind="flight",
                rig=self.name,
                label=flight.label,
                path=flight.path,
                t_send=sent,
                t_done=self.rel(flight.t_done) if flight.reply else None,
                cancelled=flight.cancelled,
                reply=flight.reply.summary() if flight.reply else None,
            )
        )
        flight.done.set()

    async def call(
        self, label: str, method: str, path: str, body: object = None, timeout_s: float | None = None
    ) -> Flight:
        flight = await self.start(label, method, path, body, timeout_s)
        await flight.done.wait()
        return flight

    def run_body(
        self, model: str, request: dict[str, object] | None = None, busy_timeout_ms: int | None = None
    ) -> dict[str, object]:
        body: dict[str, object] = {"model": model, "request": request or self.ctx.base_request()}
        if busy_timeout_ms is not None:
            body["busy_timeout_ms"] = busy_timeout_ms
        return body

    async def start_run(
        self, label: str, model: str, *, request: dict[str, object] | None = None, busy_timeout_ms: int | None = None
    ) -> Flight:
        return await self.start(label, "POST", self.ctx.route, self.run_body(model, request, busy_timeout_ms))

    async def run(
        self, label: str, model: str, *, request: dict[str, object] | None = None, busy_timeout_ms: int | None = None
    ) -> Flight:
        flight = await self.start_run(label, model, request=request, busy_timeout_ms=busy_timeout_ms)
        await flight.done.wait()
        return flight

    async def bulk(self, label: str, ids: list[str]) -> Flight:
        return await self.start(label, "POST", "/v1/tasks/unload_models", {"model_ids": ids})

    def in_flight(self, model: str) -> int:
        """Requests to `model` sent and not yet answered (the client's count)."""
        return sum(1 for f in self.flights if f.model == model and not f.finished)

    async def settle(self, flights: list[Flight], timeout_s: float) -> bool:
        """Every flight finished within the bound (False means something never completed)."""
        deadline = time.monotonic() + timeout_s
        for f in flights:
            if not await f.wait(max(0.0, deadline - time.monotonic())):
                return False
        return True

    # -- status ---------------------------------------------------------------------------
    def watch(self, model_id: str) -> None:
        """Also poll a model registered after the rig started."""
        if model_id not in self.poller.model_ids:
            self.poller.model_ids.append(model_id)

    async def wait(
        self, predicate: Callable[[Snapshot], bool], timeout_s: float, *, after: float | None = None
    ) -> Snapshot | None:
        return await self.poller.wait_for(predicate, timeout_s, after=after)

    async def drained(self, models: list[str], timeout_s: float) -> bool:
        """Counters observed back at zero; absent counters never count as drained."""

        def zero(s: Snapshot, m: str) -> bool:
            x = s.get(m)
            return x is not None and x.active == 0 and x.queued == 0

        seen = await self.wait(lambda s: all(zero(s, m) for m in models), timeout_s)
        return seen is not None

    async def responsive(self, timeout_s: float) -> bool:
        """Does the registry answer a status read now? (A stalled one confounds probes.)"""
        f = await self.start("status-canary", "GET", "/health", timeout_s=timeout_s + 5)
        return await f.wait(timeout_s) and f.status == 200

    def output(self, flight: Flight) -> str | None:
        """Canonical hash of a successful reply's output (volatile fields removed)."""
        if flight.reply is None or flight.status != 200:
            return None
        return self.ctx.canon(flight.reply.body)

    def fact(self, f: Flight) -> dict[str, object]:
        """One flight as an observation records it (parval.framework.observed.FlightRecord):
        the raw reply body goes to the artifacts, a run reply's canonical output hash and a
        small management reply's JSON into the fact itself."""
        out: dict[str, object] = {
            "label": f.label,
            "model": f.model,
            "method": f.method,
            "path": f.path,
            "t_send": self.rel(f.t_send),
            "finished": f.finished,
            "t_done": self.rel(f.t_done) if f.reply is not None else None,
            "status": f.status,
            "cancelled": f.cancelled,
        }
        r = f.reply
        if r is None:
            return out
        out["ms"] = round(r.elapsed_s * 1000, 3)
        out["outcome"] = r.outcome
        if r.error:
            out["error"] = r.error[:300]
        if r.body:
            out["artifact"] = self.ctx.artifacts.put(r.body, "body")
        if f.path == self.ctx.route and r.status == 200:
            out["output"] = self.output(f)
            # The server's own prepare+run time (timing.wall_ms), where the reply reports it.
            timing = (r.json() or {}).get("timing") if isinstance(r.json(), dict) else None
            wall = timing.get("wall_ms") if isinstance(timing, dict) else None
            if isinstance(wall, int | float) and not isinstance(wall, bool):
                out["wall_ms"] = float(wall)
        else:
            out["message"] = f.message()[:300]
            if len(r.body) <= 8192:
                out["json"] = r.json()
        return out

    def samples_of(self, model: str, t0: float, t1: float | None = None) -> list[list[object]]:
        """Status samples of `model` in a window as [t, active, queued, loaded, max_parallel,
        slots] rows, a row only where something changed (parval.framework.observed.Sample)."""
        rows: list[list[object]] = []
        last: list[object] | None = None
        for s in self.poller.between(t0, time.monotonic() if t1 is None else t1):
            x = s.get(model)
            if x is None:
                continue
            values: list[object] = [x.active, x.queued, x.loaded, x.max_parallel, x.slots]
            if values != last:
                rows.append([self.rel(s.t), *values])
                last = values
        return rows

    def last_read_unloaded(self, model: str, t0: float, t1: float) -> float | None:
        """When, within a window, the last status read still showing `model` unloaded was
        taken, before any read showing it loaded (relative seconds; None: no such read). A
        load surely still ran then."""
        last = None
        for s in self.poller.between(t0, t1):
            x = s.get(model)
            if x is None:
                continue
            if x.loaded:
                break
            if x.loaded is False:  # the server answered at or after the read was sent
                last = self.rel(s.t - s.rtt)
        return last

    def observed(self, obs: Obs, flights: list[Flight], **facts: object) -> Facts:
        """The facts of one forced situation, completed with what every judge may read:
        the rig, the measured timing, the references known now and the flights."""
        obs.facts.update(facts)
        obs.facts.update(
            {
                "rig": self.name,
                "flagged": self.flagged,
                "model_id": self.ctx.model_id,
                "timing": self.timing_facts(),
                "refs": self.ctx.refs_json(),
                "flights": [self.fact(f) for f in flights],
            }
        )
        return obs.facts

    def timing_facts(self) -> dict[str, object] | None:
        """The measured timing, exact (observed.timing_of reads it back)."""
        t = self.ctx.timing
        if t is None:
            return None
        return {
            **t.to_json(),
            "service_ms": t.service_s * 1000,
            "load_ms": t.load_s * 1000,
            "teardown_ms": t.teardown_s * 1000,
        }

    def timeline(self, flights: list[Flight]) -> list[dict[str, object]]:
        return [
            {
                "label": f.label,
                "t_send": self.rel(f.t_send),
                "t_done": self.rel(f.t_done),
                "status": f.status,
                "cancelled": f.cancelled,
                "error": f.message()[:200] if f.status not in (None, 200) else "",
            }
            for f in flights
        ]


def _write_status(path: Path, rig: Rig) -> None:
    """The status trace: [t, rtt_ms, {model: [active, queued, loaded, max_parallel, slots]}]."""
    lines = []
    for s in rig.poller.samples:
        models = {m: [x.active, x.queued, x.loaded, x.max_parallel, x.slots] for m, x in s.models.items()}
        lines.append(json.dumps([rig.rel(s.t), round(s.rtt * 1000, 2), models if s.ok else None]))
    path.write_text("\n".join(lines) + ("\n" if lines else ""))


@asynccontextmanager
async def open_rig(ctx: FrameworkContext, name: str, spec: LaunchSpec, model_ids: list[str]) -> AsyncIterator[Rig]:
    """Launch, wait for /health, poll, yield; always stop the server and record the end."""
    directory: Path = ctx.run_dir / "servers" / name
    ctx.log.write(
        RigStartEvent(
            kind="rig_start",
            rig=name,
            flagged=spec.flagged,
            config=plain(spec.config),
            ui_management=spec.ui_management,
        )
    )
    server = spawn(spec, directory, name)
    rig: Rig | None = None
    try:
        ready_s = await wait_ready(server, ctx.ready_timeout_s)
        ctx.log.write(RigReadyEvent(kind="rig_ready", rig=name, ready_s=round(ready_s, 4), argv=server.argv))
        async with anyio.create_task_group() as tg:
            poller = ModelsPoller(server.base_url, model_ids, ctx.poll_interval_s)
            tg.start_soon(poller.run)
            await poller.wait_for(lambda s: True, 10.0)
            client = Client(
                server.base_url,
                max_connections=64,
                request_timeout_s=ctx.request_timeout_s,
                max_body_bytes=ctx.max_body_bytes,
            )
            rig = Rig(ctx, name, server, client, poller, tg, spec.flagged)
            try:
                yield rig
            finally:
                with anyio.CancelScope(shield=True):
                    if rig.stop_info is None:
                        rig.stop_info = await server.stop(ctx.grace_s)
                    await client.aclose()
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if server.returncode() is None:
                await server.stop(min(ctx.grace_s, 5.0))
        if rig is not None:
            _write_status(directory / "status.jsonl", rig)
        ctx.log.write(
            RigEndEvent(
                kind="rig_end",
                rig=name,
                stop=rig.stop_info if rig is not None and rig.stop_info is not None else server.stop_info,
                polls=len(rig.poller.samples) if rig else 0,
                poll_errors=rig.poller.errors if rig else 0,
                log_tail=server.log_tail(1500),
            )
        )
