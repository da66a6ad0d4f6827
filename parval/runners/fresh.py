"""The life of one fresh server start: launch, readiness, poller and sampler, and an
always-recorded end (`run_end` or `run_abandoned`) with the server always stopped."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import cast

import anyio

from parval.errors import ServerStartError
from parval.jsontypes import JsonObject, JsonValue
from parval.procedure.server_facts import WARNING_MARKER
from parval.rundir.artifacts import ArtifactStore
from parval.rundir.event_types import (
    MemoryGuardEvent,
    RunAbandonedEvent,
    RunEndEvent,
    RunStartEvent,
    ServerConfigRecord,
    ServerReadyEvent,
    SlotCountersEvent,
    plain,
)
from parval.rundir.events import EventLog
from parval.rundir.files import atomic_write
from parval.runners.start import Start, StartAborted, StartSettings
from parval.server.client import Client
from parval.server.memory import GuardStop, MemorySample, MemorySampler, PhaseTracker
from parval.server.process import LaunchSpec, server_env, spawn, wait_ready
from parval.server.status_poller import StatusPoller

_FIELD = {
    "active_slots": "active",
    "queued_requests": "queued",
    "slots": "slots",
    "max_parallel_slots": "max_parallel",
    "loaded": "loaded",
}


@asynccontextmanager
async def fresh_start(
    *,
    name: str,
    role: str,
    attempt: int,
    spec: LaunchSpec,
    directory: Path,
    log: EventLog,
    store: ArtifactStore,
    settings: StartSettings,
    count: int | None,
    cache_sensitive: bool,
    start_index: int | None = None,
    exe_role: str | None = None,
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
    begin = RunStartEvent(
        kind="run_start",
        run=name,
        attempt=attempt,
        role=role,
        count=count,
        flagged=spec.flagged,
        config=cast(ServerConfigRecord, spec.config),  # server_config's: its models are JSON objects
        env=sorted(server_env(spec.env)),  # the names the server's environment holds (values stay out)
    )
    if start_index is not None:
        begin["start_index"] = start_index
    if exe_role is not None:
        begin["exe_role"] = exe_role
    log.write(begin)
    server = spawn(spec, directory, name)
    phases = PhaseTracker("startup")
    samples: list[MemorySample] = []
    # The memory guard (memory.guard_mib) stops the start's work at once: the start ends as
    # BLOCKED evidence (a VRAM failure is never a reason to lower quality settings).
    guard = anyio.CancelScope()
    tripped: list[GuardStop] = []

    def on_guard(sample: GuardStop) -> None:
        tripped.append(sample)
        guard.cancel()

    sampler = (
        MemorySampler(server.pid, settings.memory, phases, samples.append, on_guard)
        if settings.memory is not None
        else None
    )
    ended = False
    forced: JsonObject | None = None
    failure: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            if sampler is not None:
                tg.start_soon(sampler.run)
            ready_s = await wait_ready(server, settings.ready_timeout_s)
            stderr = server.stderr_text()
            log.write(
                ServerReadyEvent(
                    kind="server_ready",
                    run=name,
                    attempt=attempt,
                    ready_s=round(ready_s, 4),
                    pid=server.pid,
                    warning_marker=WARNING_MARKER in stderr,
                    argv=server.argv,
                )
            )
            phases.set("idle")
            poller = StatusPoller(server.base_url, settings.model_id, settings.poll_interval_s)
            tg.start_soon(poller.run)
            first = await poller.wait_for(lambda s: True, 5.0)
            # Observed once here and acted on for the whole start: a process whose status
            # lacks the slot counters is not waited for (drain, ordered admission, repeats).
            log.write(
                SlotCountersEvent(
                    kind="slot_counters",
                    run=name,
                    attempt=attempt,
                    published=bool(first and first.present and first.active is not None),
                    model_listed=bool(first and first.present),
                    observed="first status sample",
                    fields=[
                        k
                        for k in ("active_slots", "queued_requests", "slots", "max_parallel_slots", "loaded")
                        if first is not None and getattr(first, _FIELD[k]) is not None
                    ],
                )
            )
            client = Client(
                server.base_url,
                max_connections=settings.max_wave + 4,
                request_timeout_s=settings.request_timeout_s,
                max_body_bytes=settings.max_body_bytes,
            )
            start = Start(
                name,
                role,
                attempt,
                server,
                client,
                poller,
                phases,
                log,
                store,
                settings,
                count,
                cache_sensitive,
                memory_samples=samples,
                sampler=sampler,
            )
            start.reset_histories()
            try:
                with guard:
                    yield start
            except BaseException as exc:
                if _cancelled(exc):
                    raise  # the outer handler stops the server and records run_abandoned
                await _end(start, directory, samples, phases, sampler, settings)
                ended = True
                tg.cancel_scope.cancel()
                raise
            if guard.cancelled_caught and tripped:
                sample = tripped[0]
                reason = (
                    f"memory guard: device memory {sample.get('device_used_mib')} MiB >= memory.guard_mib="
                    f"{sample.get('guard_mib')} MiB during {sample.get('phase')}"
                )
                log.write(
                    MemoryGuardEvent(
                        kind="memory_guard", run=name, attempt=attempt, reason=reason, sample=plain(sample)
                    )
                )
                await _end(start, directory, samples, phases, sampler, settings)
                ended = True
                tg.cancel_scope.cancel()
                raise StartAborted(f"{name}: {reason}")
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
                    reason = (
                        "the start was cancelled (interrupted, or a per-start or campaign deadline) before it finished"
                        if failure is None or _cancelled(failure)
                        else f"{type(failure).__name__}: {failure}"
                    )
                    log.write(
                        RunAbandonedEvent(
                            kind="run_abandoned",
                            run=name,
                            attempt=attempt,
                            stop=stop,
                            reason=reason,
                            log_tail=server.log_tail(2000),
                        )
                    )
    if forced is not None:
        raise StartAborted(
            f"{name}: server did not exit within timeouts.shutdown_grace_s="
            f"{settings.grace_s:g} s after SIGTERM; killed with SIGKILL",
            log_tail=server.log_tail(),
        )


async def _end(
    st: Start,
    directory: Path,
    samples: list[MemorySample],
    phases: PhaseTracker,
    sampler: MemorySampler | None,
    settings: StartSettings,
) -> JsonObject:
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
        st.log.write(
            RunEndEvent(
                kind="run_end",
                run=st.name,
                attempt=st.attempt,
                stop=stop,
                status_fields=_status_fields(st.poller),
                poll_errors=st.poller.errors,
                polls=len(st.poller.samples),
                memory=plain(sampler.info()) if sampler else None,
                log_tail=st.server.log_tail(2000),
            )
        )
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


def _write_samples(directory: Path, poller: StatusPoller, samples: list[MemorySample], phases: PhaseTracker) -> None:
    atomic_write(directory / "status.jsonl", "".join(json.dumps(s.to_json()) + "\n" for s in poller.samples))
    atomic_write(directory / "memory.jsonl", "".join(json.dumps(s) + "\n" for s in samples))
    atomic_write(directory / "phases.json", json.dumps(phases.transitions()))


def _status_fields(poller: StatusPoller) -> JsonObject:
    """Which /v1/models slot fields this process showed (legacy shows none): run_end's
    `status_fields`."""
    present = [s for s in poller.samples if s.ok and s.present]
    max_parallel: list[JsonValue] = []
    for s in present:
        if not max_parallel or max_parallel[-1] != s.max_parallel:
            if s.max_parallel not in max_parallel:
                max_parallel.append(s.max_parallel)
    return {
        "slot_fields": any(s.active is not None for s in present),
        "first_slots": next((s.slots for s in present if s.slots is not None), None),
        "slots_seen": [n for n in sorted({s.slots for s in present if s.slots is not None})],
        "max_parallel_seen": max_parallel,
    }
