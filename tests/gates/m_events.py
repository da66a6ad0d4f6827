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

from parval.gates.compare import canonicalize
from parval.gates.context import Context
from parval.gates.records import build_records

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
        e = {
            "kind": "request",
            "run": run,
            "attempt": 0,
            "phase": phase,
            "wave": wave,
            "req": req,
            "ref": ref if ref is not None else f"{req}|{'cold' if phase == 'ref_cold' else 'warm'}",
            "slot": None,
            "history": None,
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

    def context(self, plan: dict[str, Any], manifest: dict[str, Any] | None = None) -> Context:
        return Context(build_records(self.events), plan, manifest or {}, self.run_dir, "plan.yaml")


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
    return {
        "counts": counts or [1, 2],
        "model": model,
        "requests": {"base": {"text": "hello", "seed": 1}, "variations": variations if variations is not None else []},
        "compare": {"volatile_fields": [{"path": "timing", "justification": "wall time"}]},
        "waves": {"warm": 1, "mixed": 2, "mixed_at_largest": 2, "serial_reuse": 1},
    }
