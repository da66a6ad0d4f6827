"""Synthetic event lists for unit tests of the model gate (the parval/gates/ judges): starts,
requests with raw reply bodies stored as artifacts, waves with status-poller summaries."""

from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from parval.gates.judge_context import JudgeContext
from parval.outputs.compare import canonicalize
from parval.rundir.event_index import build_records

VOLATILE = ["timing"]


def wav_b64(seed: int, frames: int = 160) -> str:
    """A short deterministic PCM16 WAV: different `seed` or `frames`, different samples."""
    samples = (np.random.default_rng(seed).integers(-3000, 3000, frames)).astype(np.int16)
    buf = io.BytesIO()
    sf.write(buf, samples, 16000, format="WAV", subtype="PCM_16")
    return base64.b64encode(buf.getvalue()).decode()


def tts_body(audio_seed: int, frames: int = 160, **extra: Any) -> dict[str, Any]:
    return {
        "audio": wav_b64(audio_seed, frames),
        "sample_rate": 16000,
        "channels": 1,
        **extra,
        "timing": {"wall_ms": 12.5},
    }


class Events:
    """Builds an event list; raw bodies go to `run_dir/artifacts` as the campaign stores them."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        (run_dir / "artifacts").mkdir(parents=True, exist_ok=True)
        self.events: list[dict[str, Any]] = []

    def start(self, run: str, role: str = "count", count: int | None = None, **extra: Any) -> None:
        self.events.append({"kind": "run_start", "run": run, "attempt": 0, "role": role, "count": count, **extra})

    def end(self, run: str) -> None:
        self.events.append({"kind": "run_end", "run": run, "attempt": 0})

    def request(
        self,
        run: str,
        phase: str,
        wave: int,
        req: str,
        body: dict[str, Any] | None,
        *,
        ref: str | None = None,
        t_send: float = 0.0,
        t_done: float = 1.0,
        retry: int = 0,
        status: int = 200,
        **extra: Any,
    ) -> dict[str, Any]:
        raw = json.dumps(body).encode() if body is not None else b""
        artifact = None
        output = None
        if body is not None:
            artifact = hashlib.sha256(raw).hexdigest()
            (self.run_dir / "artifacts" / f"{artifact}.json").write_bytes(raw)
            output = canonicalize(raw, VOLATILE).to_json()
        label = ref if ref is not None else f"{req}|{'cold' if phase == 'ref_cold' else 'warm'}"
        e = {
            "kind": "request",
            "run": run,
            "attempt": 0,
            "phase": phase,
            "wave": wave,
            "req": req,
            "ref": label,
            "slot": None,
            # the slot history the runner records beside the label (a warm one served before)
            "history": [] if label.endswith("|cold") else [req],
            "reply": {"status": status, "outcome": "ok" if status == 200 else "http_error", "ms": 1.0, "error": ""},
            "t_send": t_send,
            "t_done": t_done,
            "output": output,
            "artifact": artifact,
            "expect_error": False,
            "retry": retry,
            **extra,
        }
        self.events.append(e)
        return e

    def wave(
        self,
        run: str,
        phase: str,
        wave: int,
        n: int,
        *,
        order: list[str] | None = None,
        status: dict[str, Any] | None = None,
        drained: dict[str, Any] | None = None,
        admission: dict[str, Any] | None = None,
        trace_confirmed: bool | None = None,
        retry: int = 0,
        mode: str = "ordered",
    ) -> dict[str, Any]:
        e: dict[str, Any] = {
            "kind": "wave",
            "run": run,
            "attempt": 0,
            "count": n,
            "phase": phase,
            "wave": wave,
            "n": n,
            "mode": mode,
            "batch_s": 0.1,
            "retry": retry,
            "status": status if status is not None else counters_status(n),
            "drained": drained
            if drained is not None
            else {"ok": True, "active": 0, "queued": 0, "fields_present": True},
        }
        if order is not None:
            e.update(
                order=order,
                admission=admission
                if admission is not None
                else {"ordered_ok": True, "finished_early": False, "admit_waits_ms": []},
                trace_confirmed=trace_confirmed,
            )
        self.events.append(e)
        return e

    def append(self, kind: str, **fields: Any) -> None:
        self.events.append({"kind": kind, **fields})

    def context(self, plan: dict[str, Any], manifest: dict[str, Any] | None = None) -> JudgeContext:
        return JudgeContext(build_records(self.events), plan, manifest or {}, self.run_dir, "plan.yaml")


def counters_status(n: int, polls: int = 40) -> dict[str, Any]:
    """A wave during which /v1/models showed N loaded active slots."""
    return {
        "polls": polls,
        "poll_errors": 0,
        "poll_hz": 200.0,
        "max_active": n,
        "max_active_loaded": n,
        "max_queued": 0,
        "fields_present": True,
        "expected": n,
    }


def counterless_status(n: int, polls: int = 40) -> dict[str, Any]:
    """What the poller records on a server whose /v1/models lists the model without
    active_slots/queued_requests (the legacy runtime)."""
    return {
        "polls": polls,
        "poll_errors": 0,
        "poll_hz": 200.0,
        "max_active": None,
        "max_active_loaded": None,
        "max_queued": None,
        "fields_present": False,
        "expected": n,
    }


COUNTERLESS_DRAIN = {"ok": False, "active": None, "queued": None, "fields_present": False}


def plan(
    *,
    counts: list[int] | None = None,
    variations: list[dict[str, Any]] | None = None,
    variation_kinds: list[str] | None = None,
    admit_modes: list[str] | None = None,
    auxiliary_files: list[str] | None = None,
    justify: bool = True,
) -> dict[str, Any]:
    model: dict[str, Any] = {
        "id": "m",
        "family": "standin_tts",
        "task": "tts",
        "mode": "offline",
        "cache_sensitive": False,
        "admit_modes": admit_modes or ["offline"],
        "auxiliary_files": auxiliary_files or [],
    }
    if variation_kinds is not None:
        model["variation_kinds"] = variation_kinds
        if justify:
            from parval.plan.variations import TASK_KINDS

            model["variation_kinds_justification"] = {
                k: "not varied by this synthetic plan" for k in TASK_KINDS["tts"] if k not in variation_kinds
            }
    return {
        "counts": counts or [1, 2],
        "model": model,
        "requests": {"base": {"text": "hello", "seed": 1}, "variations": variations if variations is not None else []},
        "compare": {"volatile_fields": [{"path": "timing", "justification": "wall time"}]},
        "waves": {"warm": 1, "mixed": 2, "mixed_at_largest": 2, "serial_reuse": 1},
    }


UNLOADED = {
    "reply": {"status": 200, "outcome": "ok", "error": ""},
    "listed": True,
    "loaded_false": True,
    "polls_after": 8,
    "still_loaded": False,
    "loaded_field": True,
}


def in_flight(n: int, polls: int = 12, max_active: int | None = None) -> dict[str, Any]:
    """The runner's `all_in_flight` window: `polls` successful samples while every request
    of the wave was in flight, the most active of them `max_active` (default n)."""
    top = n if max_active is None else max_active
    return {"ms": 50.0, "polls": polls, "max_active": top, "max_active_loaded": top}


def full_start(
    ev: Events,
    run: str,
    n: int,
    plan_: dict[str, Any],
    *,
    body: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    drained: dict[str, Any] | None = None,
    overlap: bool = True,
    flight: dict[str, Any] | None = None,
    unload: dict[str, Any] | None = None,
    end: bool = True,
) -> None:
    """One whole count-n start as the campaign records it for `plan_`: the cold wave, the
    planned warm, mixed and reload waves (one reply per request each), the unload probe of
    every cycle and the serial reuse, every reply `body` (default tts_body(1))."""
    from parval.plan.waves import start_schedule

    schedule = start_schedule(plan_, n)
    reply = body if body is not None else tts_body(1)
    ev.start(run, count=n)
    for phase in ("cold_wave", "warm_wave", "mixed_wave", "reload_wave"):
        ref = "base|cold" if phase in ("cold_wave", "reload_wave") else "base|warm"
        mode = "ordered" if phase == "mixed_wave" else "together"
        for wave in schedule.waves[phase]:
            for i in range(n):
                # overlapping from the client: every send before the first reply
                t_send, t_done = (0.01 * i, 1.0) if overlap else (1.0 * i, 1.0 * i + 0.5)
                ev.request(run, phase, wave, "base", reply, ref=ref, t_send=t_send, t_done=t_done)
            w = ev.wave(
                run,
                phase,
                wave,
                n,
                status=status,
                drained=drained,
                mode=mode,
                order=["base"] * n if phase == "mixed_wave" else None,
            )
            if n > 1:
                w["all_in_flight"] = flight if flight is not None else in_flight(n)
        if phase == "reload_wave":
            for cycle in schedule.waves["reload_wave"]:
                ev.append("probe", run=run, attempt=0, name="unload", cycle=cycle, **(unload or UNLOADED))
    for i in range(schedule.serial_requests):
        ev.request(run, "serial_reuse", i, "base", reply, ref="base|warm")
    ev.wave(run, "serial_reuse", 0, 1, status=status, drained=drained, mode="serial")
    if end:
        ev.end(run)


def baseline_refs(ev: Events, body: dict[str, Any] | None = None, names: tuple[str, ...] = ("base",)) -> None:
    """ref-baseline-a and -b: every request cold, warm and repeated warm, identical."""
    for run in ("ref-baseline-a", "ref-baseline-b"):
        ev.start(run, role="reference", count=1, exe_role="baseline")
        for name in names:
            for phase in ("ref_cold", "ref_warm", "ref_warm2"):
                ev.request(run, phase, 0, name, body if body is not None else tts_body(1))
        ev.end(run)


DRAINED = {"ok": True, "active": 0, "queued": 0, "fields_present": True}


def unload_event(which: str, n: int = 2, **over: Any) -> dict[str, Any]:
    """A clean m4_<which>_unload probe: the unload waited for the work in flight, a later
    request queued behind it with a slot free, and /v1/models showed the model unloaded."""
    busy = max(1, n - 1)
    e: dict[str, Any] = {
        "issued_while_active": True,
        "unload": {"status": 200, "outcome": "ok", "ms": 5.0, "error": ""},
        "unload_done": 1.20,
        "requests_done": [1.18] * busy,
        "requests_latency": [0.10] * busy,
        "later_done": 1.40,
        "busy": busy,
        "gap_s": 0.025,
        "unload_pending_at_later_send": True,
        "later_order": "queued_behind",
        "later_samples": {"polls": 9, "max_active": busy, "max_queued": 1},
        "active_while_unload_waits": busy,
        "unloaded_seen": True,
        "unload_check": dict(UNLOADED),
        "ended_unloaded": True,
    }
    e.update(over)
    return e


def recovery_start(ev: Events, n: int = 2, *, body: dict[str, Any] | None = None, **events: Any) -> None:
    """A whole recovery start at count n: every M4 probe clean, unless `events` replaces a
    probe event (by kind, a dict; a list of dicts for a probe tried several times) or leaves it
    out (None); `crash` = {"where": ...} ends the
    start with a server crash after the probes it names were recorded."""
    reply = body if body is not None else tts_body(1)
    crash = events.pop("crash", None)
    ev.start("recovery", role="recovery", count=n)
    probes: list[tuple[str, str, list[tuple[str, str]], dict[str, Any]]] = [
        (
            "m4_unload_during_first_load",
            "unload during first load",
            [("unload_during_load_first", "base|cold"), ("unload_during_load_reload", "base|cold")],
            {
                "issued_during_load": True,
                "unload": {"status": 200, "outcome": "ok", "ms": 5.0, "error": ""},
                "listed": True,
                "unload_done": 1.2,
                "requests_done": [1.18],
                "requests_latency": [0.3],
                "ended_unloaded": True,
                "unload_check": dict(UNLOADED),
            },
        ),
        (
            "m4_invalid_alongside",
            "invalid alongside",
            [("invalid_alongside", "base|cold")] * max(1, n - 1),
            {"invalid": {"status": 400, "outcome": "http_error"}, "rejected": True, "drained": dict(DRAINED)},
        ),
        (
            "m4_targeted_unload",
            "targeted unload",
            [("unload_targeted_inflight", "base|warm")] * max(1, n - 1) + [("unload_targeted_later", "base|cold")],
            unload_event("targeted", n),
        ),
        (
            "m4_all_unload",
            "all unload",
            [("unload_all_inflight", "base|warm")] * max(1, n - 1) + [("unload_all_later", "base|cold")],
            unload_event("all", n),
        ),
        (
            "m4_load_failure",
            "failed load",
            [("load_failure_alongside", "base|cold")] * n + [("load_retry", "base|cold")],
            {
                "failure": {"status": 500, "outcome": "http_error"},
                "failed": True,
                "retry": {"status": 200, "outcome": "ok"},
                "retried": True,
                "healthy_in_flight": True,
                "healthy": n,
                "drained": dict(DRAINED),
            },
        ),
    ]
    for kind, where, reqs, clean in probes:
        if crash is not None and crash["where"] == where:
            ev.append(
                "server_crash", run="recovery", attempt=0, where=where, exit_code=-11, signal="SIGSEGV", log_tail=""
            )
            ev.end("recovery")
            return
        fields = events.get(kind, clean)
        # a list: one probe event per try, each try with its own requests
        for one in fields if isinstance(fields, list) else [fields]:
            for phase, ref in reqs:
                ev.request("recovery", phase, 0, "base", reply, ref=ref)
            if one is not None:
                ev.append(kind, run="recovery", attempt=0, **one)
    ev.end("recovery")


def set_aside_attempt(ev: Events, run: str, n: int, plan_: dict[str, Any], attempt: int = -1, **kw: Any) -> None:
    """An attempt of `run` recorded and then abandoned (interrupted, redone on resume):
    full_start's waves under `attempt`, without its end (`kw`: full_start's arguments)."""
    first = len(ev.events)
    full_start(ev, run, n, plan_, end=False, **kw)
    for e in ev.events[first:]:
        e["attempt"] = attempt
    ev.append("run_abandoned", run=run, attempt=attempt)
