"""One fresh server start as the campaign's steps see it (`Start`): the wave client, the
status poller, the memory sampler, per-slot histories, and the recording of every reply.
`parval.runners.fresh.fresh_start` launches and stops the server around it."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import anyio

from parval.jsontypes import JsonObject
from parval.outputs.compare import Output, canonicalize
from parval.rundir.artifacts import ArtifactStore
from parval.rundir.event_types import (
    AdmissionInfo,
    DrainedState,
    InFlightWindow,
    RequestEvent,
    RequestOutput,
    ServerCrashEvent,
    ServerUnresponsiveEvent,
    UnloadCheck,
    WaveEvent,
    WaveMode,
)
from parval.rundir.events import EventLog
from parval.server.client import CONNECT_ERROR, INDETERMINATE, OK, Client, Reply
from parval.server.memory import MemoryConfig, MemorySample, MemorySampler, PhaseTracker
from parval.server.process import ServerProcess
from parval.server.status_poller import StatusPoller, StatusSample, summarise_window, taken_at
from parval.server.trace import TraceLine, read_trace


class StartAborted(Exception):
    """The server died, stopped answering or would not stop; the start ends here with a
    recorded outcome (`log_tail`: the end of the server's logs, for the evidence)."""

    def __init__(self, message: str, *, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail


# Waiting for ordered admission: this many service times plus this many poll intervals,
# at least ADMIT_FLOOR_S: a free slot's admission shows within a poll or two.
ADMIT_SERVICE_TIMES = 4.0
ADMIT_POLLS = 4
ADMIT_FLOOR_S = 0.05
_SAMPLE_FIELDS = ("active", "queued", "loaded", "slots", "max_parallel")

# Outcomes that say nothing about what the server did with a request.
_NO_ANSWER = (INDETERMINATE, CONNECT_ERROR)
# How long a server whose requests all went unanswered may take to be seen exiting.
EXIT_SETTLE_S = 5.0


@dataclass
class StartSettings:
    model_id: str
    request_timeout_s: float
    ready_timeout_s: float
    grace_s: float
    poll_interval_s: float
    max_wave: int
    max_body_bytes: int
    volatile: list[str]
    memory: MemoryConfig | None
    route: str = "/v1/tasks/run"


@dataclass
class Start:
    name: str
    role: str
    attempt: int
    server: ServerProcess
    client: Client
    poller: StatusPoller
    phases: PhaseTracker
    log: EventLog
    store: ArtifactStore
    settings: StartSettings
    count: int | None
    cache_sensitive: bool
    histories: list[list[str]] = field(default_factory=list)
    memory_samples: list[MemorySample] = field(default_factory=list)
    sampler: MemorySampler | None = None
    t0: float = field(default_factory=time.monotonic)
    crash_recorded: bool = False
    # Outcomes of the requests recorded since the last check_alive (stopped answering?).
    unchecked: list[str] = field(default_factory=list)
    # Client-side durations of this start's successful warm requests (a service time).
    latencies: list[float] = field(default_factory=list)
    # Status fields seen so far, and how many samples have been looked at (incremental:
    # asked on every wave, over a sample list that grows all through the start).
    _fields_seen: set[str] = field(default_factory=set)
    _scanned: int = 0

    # -- what this server shows -------------------------------------------------------
    @property
    def counters_published(self) -> bool:
        """Whether any status sample of this process carried the model's active_slots.
        Until one does, nothing waits for counters (they would never come)."""
        return self.published("active")

    def published(self, field_name: str) -> bool:
        """Whether any status sample of this process carried `field_name` (a StatusSample
        attribute: active, queued, loaded, slots, max_parallel) for the model."""
        samples = self.poller.samples
        for s in samples[self._scanned :]:
            if s.ok and s.present:
                self._fields_seen.update(f for f in _SAMPLE_FIELDS if getattr(s, f) is not None)
        self._scanned = len(samples)
        return field_name in self._fields_seen

    async def wait_status(
        self, predicate: Callable[[StatusSample], object], timeout_s: float, needs: tuple[str, ...] = ("active",)
    ) -> StatusSample | None:
        """`poller.wait_for`, but None at once when this process has never published a
        field the predicate reads: a wait for a signal that cannot come costs the timeout."""
        if not all(self.published(f) for f in needs):
            return None
        return await self.poller.wait_for(predicate, timeout_s)

    async def observe_unloaded(self, reply: Reply, timeout_s: float = 2.0) -> UnloadCheck:
        """After an unload `reply`: did /v1/models show the model loaded:false (and its
        slots drained)? Waits up to `timeout_s`; records how many successful samples came
        after the reply and whether every one still showed the model loaded, so that a
        judge can tell "stayed loaded" from "too few samples" (M2/M4)."""
        seen = await self.wait_status(
            lambda s: s.present and s.loaded is False and (s.active or 0) == 0, timeout_s, needs=("loaded",)
        )
        after = [
            s
            for s in self.poller.samples
            if s.ok and s.present and taken_at(s) >= reply.t_done and s.loaded is not None
        ]
        return {
            "reply": reply.summary(),
            "loaded_false": seen is not None,
            "polls_after": len(after),
            "still_loaded": bool(after) and all(s.loaded for s in after),
            "loaded_field": self.published("loaded"),
        }

    def loaded_false_between(self, t0: float, t1: float) -> bool:
        """Did a status sample taken wholly between t0 and t1 show the model loaded:false?"""
        return any(
            s.ok and s.present and s.loaded is False and taken_at(s) >= t0 and s.t <= t1 for s in self.poller.samples
        )

    def service_s(self) -> float | None:
        """The shortest warm request this start has served so far (None before any)."""
        return min(self.latencies) if self.latencies else None

    def admit_timeout_s(self, ceiling_s: float) -> float:
        """How long to wait for one admission to show in the counters: a few service
        times measured in this start (plus a few polls), never more than `ceiling_s`."""
        service = self.service_s()
        if service is None:
            return ceiling_s
        return min(
            ceiling_s, max(ADMIT_FLOOR_S, ADMIT_SERVICE_TIMES * service + ADMIT_POLLS * self.settings.poll_interval_s)
        )

    # -- references -------------------------------------------------------------------
    def ref_key(self, req: str, history: list[str] | None) -> str | None:
        """Which reference an output must equal: cold/warm for stateless models, the exact
        ordered session history for cache-sensitive ones (never the closest reference)."""
        if history is None:
            return None
        if self.cache_sensitive:
            # a slot whose earlier admission order was not observed has an unknown history:
            # no single-slot replay can reproduce it, so there is no reference
            return None if "?" in history else "hist:" + ">".join([*history, req])
        return f"{req}|{'cold' if not history else 'warm'}"

    def reset_histories(self) -> None:
        self.histories = [[] for _ in range(self.count or 1)]

    # -- recording --------------------------------------------------------------------
    def rel(self, t: float) -> float:
        return round(t - self.t0, 6)

    def record(
        self,
        phase: str,
        wave: int,
        req: str,
        reply: Reply,
        *,
        history: list[str] | None,
        slot: int | None = None,
        expect_error: bool = False,
        reversed: bool | None = None,
        retry: int | None = None,
        perf_n: int | None = None,
        resized_to: int | None = None,
    ) -> JsonObject:
        output = None
        artifact = None
        if reply.body:
            artifact = self.store.put(reply.body, "json")
        if reply.outcome == OK and not expect_error:
            # parval.outputs sits below rundir: Output.to_json writes a RequestOutput unnamed
            output = cast(RequestOutput, _canonical(reply.body, self.settings.volatile).to_json())
            if history:  # warm: no load inside
                self.latencies.append(max(0.0, reply.t_done - reply.t_send))
        self.unchecked.append(reply.outcome)
        event = RequestEvent(
            kind="request",
            run=self.name,
            attempt=self.attempt,
            phase=phase,
            wave=wave,
            req=req,
            ref=self.ref_key(req, history),
            slot=slot,
            history=history,
            reply=reply.summary(),
            t_send=self.rel(reply.t_send),
            t_done=self.rel(reply.t_done),
            output=output,
            artifact=artifact,
            expect_error=expect_error,
        )
        # the fields of some steps' requests (absent, not null, elsewhere)
        if reversed is not None:
            event["reversed"] = reversed
        if retry is not None:
            event["retry"] = retry
        if perf_n is not None:
            event["perf_n"] = perf_n
        if resized_to is not None:
            event["resized_to"] = resized_to
        return self.log.write(event)

    async def check_alive(self, where: str) -> None:
        """After each step: a server that exited is a crash; a server for which every
        request since the last check ended without an answer has stopped answering.
        Either way the start ends here (StartAborted) with the log tail recorded."""
        outcomes, self.unchecked = self.unchecked, []
        rc = self.server.returncode()
        if rc is None and outcomes and all(o in _NO_ANSWER for o in outcomes):
            # A dropped connection is often a process on its way out (an abort under load
            # is reaped after its sockets close): give the exit time to land, so a crash is
            # recorded as the crash it is, not as a server that stopped answering.
            if await self.server.wait_exit(EXIT_SETTLE_S):
                rc = self.server.returncode()
        if rc is not None:
            self.record_crash(where, rc)
            raise StartAborted(
                f"{self.name}: server exited with status {rc} during {where}", log_tail=self.server.log_tail()
            )
        if outcomes and all(o in _NO_ANSWER for o in outcomes):
            tail = self.server.log_tail()
            self.log.write(
                ServerUnresponsiveEvent(
                    kind="server_unresponsive",
                    run=self.name,
                    attempt=self.attempt,
                    where=where,
                    requests=len(outcomes),
                    outcomes=sorted(set(outcomes)),
                    request_timeout_s=self.settings.request_timeout_s,
                    log_tail=tail,
                )
            )
            raise StartAborted(
                f"{self.name}: server stopped answering during {where}: none of "
                f"{len(outcomes)} request(s) got a reply (timeouts.request_s="
                f"{self.settings.request_timeout_s:g})",
                log_tail=tail,
            )

    def record_crash(self, where: str, rc: int) -> None:
        if self.crash_recorded:
            return
        self.crash_recorded = True
        self.log.write(
            ServerCrashEvent(
                kind="server_crash",
                run=self.name,
                attempt=self.attempt,
                where=where,
                exit_code=rc,
                signal=_signal_name(rc),
                log_tail=self.server.log_tail(),
            )
        )

    async def settle(self, phase: str) -> None:
        """Stay in `phase` for two host-memory intervals so the sampler sees it (unloads are
        fast)."""
        interval = self.settings.memory.host_interval_s if self.settings.memory else 0.0
        self.phases.set(phase)
        await anyio.sleep(max(0.05, 2 * interval))

    async def drained(self, timeout_s: float = 1.5) -> DrainedState:
        """active_slots == 0 and queued_requests == 0, allowing the status a short lag.
        A process that has published no counters is not waited for: they would not come."""
        if not self.counters_published:
            last = self.poller.latest
            return {
                "ok": False,
                "active": None,
                "queued": None,
                "fields_present": False,
                "waited": False,
                "polls_ok": bool(last and last.ok and last.present),
            }
        t_call = time.monotonic()
        seen = await self.poller.wait_for(lambda s: s.present and s.active == 0 and s.queued == 0, timeout_s)
        last = self.poller.latest
        until = taken_at(seen) if seen is not None else time.monotonic()
        busy = [
            s
            for s in self.poller.window(t_call, until)
            if s.ok and s.present and taken_at(s) >= t_call and (s.active or s.queued)
        ]
        return {
            "ok": seen is not None,
            "active": last.active if last else None,
            "queued": last.queued if last else None,
            "fields_present": bool(last and last.active is not None),
            "lag_ms": round((taken_at(seen) - t_call) * 1000, 1) if seen is not None else None,
            "nonzero_reads": len(busy),
        }

    def wave_event(
        self,
        phase: str,
        wave: int,
        n: int,
        mode: WaveMode,
        t_start: float,
        t_end: float,
        replies: list[Reply],
        drained: DrainedState,
        *,
        admission: AdmissionInfo | None = None,
        trace_lines: int | None = None,
        trace_confirmed: bool | None = None,
        order: list[str] | None = None,
        retry: int | None = None,
    ) -> JsonObject:
        status = summarise_window(self.poller.window(t_start, t_end), n)
        sends = [r.t_send for r in replies]
        event = WaveEvent(
            kind="wave",
            run=self.name,
            attempt=self.attempt,
            count=self.count,
            phase=phase,
            wave=wave,
            n=n,
            mode=mode,
            t_start=self.rel(t_start),
            t_end=self.rel(t_end),
            batch_s=round(max((r.t_done for r in replies), default=t_end) - t_start, 6),
            send_spread_ms=round((max(sends) - min(sends)) * 1000, 3) if sends else None,
            status=status,
            drained=drained,
            all_in_flight=self.all_in_flight(replies),
        )
        # the fields of some waves (absent, not null, elsewhere)
        if admission is not None:
            event["admission"] = admission
        if trace_lines is not None:
            event["trace_lines"] = trace_lines
        if admission is not None:  # an ordered wave: whether its trace confirmed the slots, or null
            event["trace_confirmed"] = trace_confirmed
        if order is not None:
            event["order"] = order
        if retry is not None:
            event["retry"] = retry
        return self.log.write(event)

    def all_in_flight(self, replies: list[Reply]) -> InFlightWindow | None:
        """The window in which the client had every request of a wave in flight at once
        (last send to first reply) and what the status polls wholly inside it showed."""
        if len(replies) < 2:
            return None
        a = max(r.t_send for r in replies)
        b = min(r.t_done for r in replies)
        inside = [
            s for s in self.poller.window(a, b) if s.ok and s.present and s.active is not None and taken_at(s) >= a
        ]
        return {
            "ms": round(max(0.0, b - a) * 1000, 3),
            # successful samples taken wholly inside the window (a failed poll shows nothing)
            "polls": len(inside),
            "max_active": max((s.active for s in inside if s.active is not None), default=None),
            "max_active_loaded": max((s.active for s in inside if s.active is not None and s.loaded), default=None),
        }

    def trace_lines(self, offset: int) -> tuple[list[TraceLine], int]:
        """Observer-trace lines written to stderr since byte `offset`."""
        return read_trace(self.server.stderr_path, offset)


def _canonical(body: bytes, volatile: list[str]) -> Output:
    """canonicalize, but a reply that breaks the canonicaliser is malformed, not a crash."""
    try:
        return canonicalize(body, volatile)
    except Exception as exc:  # noqa: BLE001 - any failure here means "not a valid output"
        return Output(False, problem=f"reply could not be read: {type(exc).__name__}")


def _signal_name(rc: int) -> str | None:
    if rc >= 0:
        return None
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return None
