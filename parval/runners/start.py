"""One fresh server start and everything that lives with it: the wave client, the status
poller, the memory sampler, per-slot histories, and the recording of every reply."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from parval.errors import ServerStartError
from parval.evidence import ArtifactStore, EventLog, atomic_write
from parval.gates.compare import Output, canonicalize
from parval.runners.client import CONNECT_ERROR, INDETERMINATE, OK, Client, Reply
from parval.runners.memory import MemoryConfig, MemorySampler, PhaseTracker
from parval.runners.server import (
    WARNING_MARKER,
    LaunchSpec,
    ServerProcess,
    spawn,
    wait_ready,
)
from parval.runners.status import StatusPoller, StatusSample, summarise_window, taken_at
from parval.runners.trace import read_trace


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
_FIELD = {"active_slots": "active", "queued_requests": "queued", "slots": "slots",
          "max_parallel_slots": "max_parallel", "loaded": "loaded"}

# Outcomes that say nothing about what the server did with a request.
_NO_ANSWER = (INDETERMINATE, CONNECT_ERROR)


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
    memory_samples: list[dict[str, Any]] = field(default_factory=list)
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
        for s in samples[self._scanned:]:
            if s.ok and s.present:
                self._fields_seen.update(f for f in _SAMPLE_FIELDS if getattr(s, f) is not None)
        self._scanned = len(samples)
        return field_name in self._fields_seen

    async def wait_status(self, predicate: Any, timeout_s: float,
                          needs: tuple[str, ...] = ("active",)) -> StatusSample | None:
        """`poller.wait_for`, but None at once when this process has never published a
        field the predicate reads: a wait for a signal that cannot come costs the timeout."""
        if not all(self.published(f) for f in needs):
            return None
        return await self.poller.wait_for(predicate, timeout_s)

    def service_s(self) -> float | None:
        """The shortest warm request this start has served so far (None before any)."""
        return min(self.latencies) if self.latencies else None

    def admit_timeout_s(self, ceiling_s: float) -> float:
        """How long to wait for one admission to show in the counters: a few service
        times measured in this start (plus a few polls), never more than `ceiling_s`."""
        service = self.service_s()
        if service is None:
            return ceiling_s
        return min(ceiling_s, max(ADMIT_FLOOR_S, ADMIT_SERVICE_TIMES * service
                                  + ADMIT_POLLS * self.settings.poll_interval_s))

    # -- references -------------------------------------------------------------------
    def ref_key(self, req: str, history: list[str] | None) -> str | None:
        """Which reference an output must equal: cold/warm for stateless models, the exact
        ordered session history for cache-sensitive ones (never the closest reference)."""
        if history is None:
            return None
        if self.cache_sensitive:
            return "hist:" + ">".join([*history, req])
        return f"{req}|{'cold' if not history else 'warm'}"

    def reset_histories(self) -> None:
        self.histories = [[] for _ in range(self.count or 1)]

    # -- recording --------------------------------------------------------------------
    def rel(self, t: float) -> float:
        return round(t - self.t0, 6)

    def record(self, phase: str, wave: int, req: str, reply: Reply, *, history: list[str] | None,
               slot: int | None = None, expect_error: bool = False, **extra: Any) -> dict[str, Any]:
        output = None
        artifact = None
        if reply.body:
            artifact = self.store.put(reply.body, "json")
        if reply.outcome == OK and not expect_error:
            output = _canonical(reply.body, self.settings.volatile).to_json()
            if history:  # warm: no load inside
                self.latencies.append(max(0.0, reply.t_done - reply.t_send))
        self.unchecked.append(reply.outcome)
        return self.log.append(
            "request", run=self.name, attempt=self.attempt, phase=phase, wave=wave, req=req,
            ref=self.ref_key(req, history), slot=slot, history=history, reply=reply.summary(),
            t_send=self.rel(reply.t_send), t_done=self.rel(reply.t_done), output=output,
            artifact=artifact, expect_error=expect_error, **extra,
        )

    async def check_alive(self, where: str) -> None:
        """After each step: a server that exited is a crash; a server for which every
        request since the last check ended without an answer has stopped answering.
        Either way the start ends here (StartAborted) with the log tail recorded."""
        outcomes, self.unchecked = self.unchecked, []
        rc = self.server.returncode()
        if rc is not None:
            self.record_crash(where, rc)
            raise StartAborted(f"{self.name}: server exited with status {rc} during {where}",
                               log_tail=self.server.log_tail())
        if outcomes and all(o in _NO_ANSWER for o in outcomes):
            tail = self.server.log_tail()
            self.log.append("server_unresponsive", run=self.name, attempt=self.attempt,
                            where=where, requests=len(outcomes), outcomes=sorted(set(outcomes)),
                            request_timeout_s=self.settings.request_timeout_s, log_tail=tail)
            raise StartAborted(
                f"{self.name}: server stopped answering during {where}: none of "
                f"{len(outcomes)} request(s) got a reply (timeouts.request_s="
                f"{self.settings.request_timeout_s:g})", log_tail=tail)

    def record_crash(self, where: str, rc: int) -> None:
        if self.crash_recorded:
            return
        self.crash_recorded = True
        self.log.append("server_crash", run=self.name, attempt=self.attempt, where=where,
                        exit_code=rc, signal=_signal_name(rc), log_tail=self.server.log_tail())

    async def settle(self, phase: str) -> None:
        """Stay in `phase` for two host-memory intervals so the sampler sees it (unloads are fast)."""
        interval = self.settings.memory.host_interval_s if self.settings.memory else 0.0
        self.phases.set(phase)
        await anyio.sleep(max(0.05, 2 * interval))

    async def drained(self, timeout_s: float = 1.5) -> dict[str, Any]:
        """active_slots == 0 and queued_requests == 0, allowing the status a short lag.
        A process that has published no counters is not waited for: they would not come."""
        if not self.counters_published:
            last = self.poller.latest
            return {"ok": False, "active": None, "queued": None, "fields_present": False,
                    "waited": False,
                    "polls_ok": bool(last and last.ok and last.present)}
        seen = await self.poller.wait_for(
            lambda s: s.present and s.active == 0 and s.queued == 0, timeout_s)
        last = self.poller.latest
        return {
            "ok": seen is not None,
            "active": last.active if last else None,
            "queued": last.queued if last else None,
            "fields_present": bool(last and last.active is not None),
        }

    def wave_event(self, phase: str, wave: int, n: int, mode: str, t_start: float, t_end: float,
                   replies: list[Reply], drained: dict[str, Any], **extra: Any) -> dict[str, Any]:
        status = summarise_window(self.poller.window(t_start, t_end), n)
        sends = [r.t_send for r in replies]
        return self.log.append(
            "wave", run=self.name, attempt=self.attempt, count=self.count, phase=phase, wave=wave,
            n=n, mode=mode, t_start=self.rel(t_start), t_end=self.rel(t_end),
            batch_s=round(max((r.t_done for r in replies), default=t_end) - t_start, 6),
            send_spread_ms=round((max(sends) - min(sends)) * 1000, 3) if sends else None,
            status=status, drained=drained, all_in_flight=self.all_in_flight(replies), **extra,
        )

    def all_in_flight(self, replies: list[Reply]) -> dict[str, Any] | None:
        """The window in which the client had every request of a wave in flight at once
        (last send to first reply) and what the status polls wholly inside it showed."""
        if len(replies) < 2:
            return None
        a = max(r.t_send for r in replies)
        b = min(r.t_done for r in replies)
        inside = [s for s in self.poller.window(a, b)
                  if s.ok and s.present and s.active is not None and taken_at(s) >= a]
        return {"ms": round(max(0.0, b - a) * 1000, 3), "polls": len(inside),
                "max_active": max((s.active for s in inside if s.active is not None), default=None)}

    def trace_lines(self, offset: int) -> tuple[list[dict[str, Any]], int]:
        """Observer-trace lines written to stderr since byte `offset`."""
        return read_trace(self.server.stderr_path, offset)


@asynccontextmanager
async def fresh_start(
    *, name: str, role: str, attempt: int, spec: LaunchSpec, directory: Path, log: EventLog,
    store: ArtifactStore, settings: StartSettings, count: int | None, cache_sensitive: bool,
    meta: dict[str, Any],
) -> AsyncIterator[Start]:
    """Launch, wait for /health, start poller and sampler; always stop the server.

    How a start ends, as recorded:
    * its body finished or raised (StartAborted, a crash): the server is stopped
      (SIGTERM → grace → SIGKILL, shielded), a crash not seen yet is recorded, and `run_end`
      closes the attempt. A server that needed SIGKILL after its body finished aborts the
      start (StartAborted) after `run_end`.
    * it was cancelled (Ctrl-C, the per-start or campaign deadline): the server is stopped
      the same way and `run_abandoned` is recorded instead of `run_end`, so the attempt
      counts as incomplete (a resume redoes it from a fresh process).
    """
    log.append("run_start", run=name, attempt=attempt, role=role, count=count,
               flagged=spec.flagged, config=spec.config, **meta)
    server = spawn(spec, directory, name)
    phases = PhaseTracker("startup")
    samples: list[dict[str, Any]] = []
    sampler = MemorySampler(server.pid, settings.memory, phases, samples.append) \
        if settings.memory is not None else None
    ended = False
    forced: dict[str, Any] | None = None
    failure: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            if sampler is not None:
                tg.start_soon(sampler.run)
            ready_s = await wait_ready(server, settings.ready_timeout_s)
            stderr = server.stderr_text()
            log.append("server_ready", run=name, attempt=attempt, ready_s=round(ready_s, 4),
                       pid=server.pid, warning_marker=WARNING_MARKER in stderr, argv=server.argv)
            phases.set("idle")
            poller = StatusPoller(server.base_url, settings.model_id, settings.poll_interval_s)
            tg.start_soon(poller.run)
            first = await poller.wait_for(lambda s: True, 5.0)
            # Observed once here and acted on for the whole start: a process whose status
            # lacks the slot counters is not waited for (drain, ordered admission, repeats).
            log.append("slot_counters", run=name, attempt=attempt,
                       published=bool(first and first.present and first.active is not None),
                       model_listed=bool(first and first.present), observed="first status sample",
                       fields=[k for k in ("active_slots", "queued_requests", "slots",
                                           "max_parallel_slots", "loaded")
                               if first is not None and getattr(first, _FIELD[k]) is not None])
            client = Client(server.base_url, max_connections=settings.max_wave + 4,
                            request_timeout_s=settings.request_timeout_s,
                            max_body_bytes=settings.max_body_bytes)
            start = Start(name, role, attempt, server, client, poller, phases, log, store,
                          settings, count, cache_sensitive, memory_samples=samples, sampler=sampler)
            start.reset_histories()
            try:
                yield start
            except BaseException as exc:
                if _cancelled(exc):
                    raise  # the outer handler stops the server and records run_abandoned
                await _end(start, directory, samples, phases, sampler, settings)
                ended = True
                tg.cancel_scope.cancel()
                raise
            stop = await _end(start, directory, samples, phases, sampler, settings)
            ended = True
            tg.cancel_scope.cancel()
            if stop.get("killed") and not start.crash_recorded:
                forced = stop
    except BaseException as exc:
        failure = exc
        raise
    finally:
        if not ended:
            with anyio.CancelScope(shield=True):
                stop = await server.stop(settings.grace_s)
                if not _contains(failure, ServerStartError):  # run_unit records start_failed
                    reason = ("the start was cancelled (interrupted, or a per-start or campaign "
                              "deadline) before it finished"
                              if failure is None or _cancelled(failure)
                              else f"{type(failure).__name__}: {failure}")
                    log.append("run_abandoned", run=name, attempt=attempt, stop=stop,
                               reason=reason, log_tail=server.log_tail(2000))
    if forced is not None:
        raise StartAborted(f"{name}: server did not exit within timeouts.shutdown_grace_s="
                           f"{settings.grace_s:g} s after SIGTERM; killed with SIGKILL",
                           log_tail=server.log_tail())


async def _end(st: Start, directory: Path, samples: list[dict[str, Any]], phases: PhaseTracker,
               sampler: MemorySampler | None, settings: StartSettings) -> dict[str, Any]:
    """Close the client, stop the server, write samples, record run_end (all shielded:
    the server is always stopped and the attempt always closed, even if a Ctrl-C or a
    deadline lands meanwhile; the whole is bounded by the grace period)."""
    with anyio.CancelScope(shield=True):
        with anyio.move_on_after(2.0):
            await st.client.aclose()
        phases.set("shutdown")
        rc_before = st.server.returncode()
        stop = await st.server.stop(settings.grace_s)
        if rc_before is not None:
            st.record_crash("before shutdown", rc_before)
        _write_samples(directory, st.poller, samples, phases)
        st.log.append("run_end", run=st.name, attempt=st.attempt, stop=stop,
                      status_fields=_status_fields(st.poller),
                      poll_errors=st.poller.errors, polls=len(st.poller.samples),
                      memory=sampler.info() if sampler else None,
                      log_tail=st.server.log_tail(2000))
    return stop


def _cancelled(exc: BaseException) -> bool:
    """True for a cancellation (or a group made only of cancellations)."""
    cancelled = anyio.get_cancelled_exc_class()
    if isinstance(exc, BaseExceptionGroup):
        return all(_cancelled(e) for e in exc.exceptions)
    return isinstance(exc, cancelled)


def _contains(exc: BaseException | None, cls: type[BaseException]) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return any(_contains(e, cls) for e in exc.exceptions)
    return isinstance(exc, cls)


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


def _write_samples(directory: Path, poller: StatusPoller, samples: list[dict[str, Any]],
                   phases: PhaseTracker) -> None:
    atomic_write(directory / "status.jsonl",
                 "".join(json.dumps(s.to_json()) + "\n" for s in poller.samples))
    atomic_write(directory / "memory.jsonl", "".join(json.dumps(s) + "\n" for s in samples))
    atomic_write(directory / "phases.json", json.dumps(phases.transitions()))


def _status_fields(poller: StatusPoller) -> dict[str, Any]:
    """Which /v1/models slot fields this process showed (legacy shows none)."""
    present = [s for s in poller.samples if s.ok and s.present]
    max_parallel: list[int | None] = []
    for s in present:
        if not max_parallel or max_parallel[-1] != s.max_parallel:
            if s.max_parallel not in max_parallel:
                max_parallel.append(s.max_parallel)
    return {
        "slot_fields": any(s.active is not None for s in present),
        "first_slots": next((s.slots for s in present if s.slots is not None), None),
        "slots_seen": sorted({s.slots for s in present if s.slots is not None}),
        "max_parallel_seen": max_parallel,
    }
