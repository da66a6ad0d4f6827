"""Synthetic event lists for the comparison-gate tests: replies written as artifacts under
`run_dir/artifacts`, request events canonicalised the way the campaign records them."""

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
from parval.rundir.event_index import Records, build_records

VOLATILE = ["timing.wall_ms"]
SAMPLES = (np.sin(np.arange(1600) / 7) * 3000).astype(np.int16)


def wav_b64(samples: np.ndarray[Any, Any], rate: int = 16000) -> str:
    buf = io.BytesIO()
    sf.write(buf, samples.astype(np.int16), rate, format="WAV", subtype="PCM_16")
    return base64.b64encode(buf.getvalue()).decode()


def tts_reply(
    samples: np.ndarray[Any, Any] = SAMPLES, *, rate: int = 16000, wall_ms: float = 1.0, **extra: Any
) -> dict[str, Any]:
    return {
        "audio": wav_b64(samples, rate),
        "sample_rate": rate,
        "channels": 1,
        **extra,
        "timing": {"wall_ms": wall_ms, "audio_duration_ms": 100.0},
    }


def plan(**compare: Any) -> dict[str, Any]:
    return {
        "model": {"id": "m", "cache_sensitive": False},
        "counts": [1, 2],
        "requests": {"base": {"text": "x"}},
        "compare": {"volatile_fields": [{"path": p, "justification": "varies"} for p in VOLATILE], **compare},
    }


class Events:
    """Builds an event list; attempts are numbered like the campaign (unique per start)."""

    def __init__(self, run_dir: Path, volatile: list[str] | None = None) -> None:
        self.run_dir = run_dir
        self.volatile = VOLATILE if volatile is None else volatile
        self.events: list[dict[str, Any]] = []
        self.seq = 0
        (run_dir / "artifacts").mkdir(parents=True, exist_ok=True)

    def start(self, run: str, role: str = "count", count: int | None = 2, **meta: Any) -> int:
        self.seq += 1
        self.events.append({"kind": "run_start", "run": run, "attempt": self.seq, "role": role, "count": count, **meta})
        return self.seq

    def end(self, run: str, attempt: int) -> None:
        self.events.append({"kind": "run_end", "run": run, "attempt": attempt})

    def abandon(self, run: str, attempt: int) -> None:
        self.events.append({"kind": "run_abandoned", "run": run, "attempt": attempt, "reason": "interrupted"})

    def crash(self, run: str, attempt: int) -> None:
        self.events.append(
            {
                "kind": "server_crash",
                "run": run,
                "attempt": attempt,
                "where": "warm_wave",
                "exit_code": -11,
                "signal": "SIGSEGV",
                "log_tail": "",
            }
        )

    def request(
        self,
        run: str,
        attempt: int,
        phase: str,
        body: dict[str, Any] | None,
        *,
        req: str = "base",
        ref: str | None = "base|cold",
        wave: int = 0,
        status: int = 200,
        **extra: Any,
    ) -> dict[str, Any]:
        raw = json.dumps(body).encode() if body is not None else b'{"error": {"message": "boom"}}'
        digest = hashlib.sha256(raw).hexdigest()
        (self.run_dir / "artifacts" / f"{digest}.json").write_bytes(raw)
        ok = body is not None and status == 200
        e = {
            "kind": "request",
            "run": run,
            "attempt": attempt,
            "phase": phase,
            "wave": wave,
            "req": req,
            "ref": ref,
            "slot": 0,
            "history": [],
            "artifact": digest,
            "expect_error": False,
            "reply": {"outcome": "ok" if ok else "http_error", "status": status},
            "output": canonicalize(raw, self.volatile).to_json() if ok else None,
            "t_send": 0.0,
            "t_done": 0.1,
            **extra,
        }
        self.events.append(e)
        return e

    def baseline(self, replies: dict[str, list[dict[str, Any]]]) -> None:
        """ref-baseline-a/-b: `replies[phase]` holds [start a, start b] bodies of `base` (a
        phase left out repeats the cold bodies: every reference start is recorded whole)."""
        for i, run in enumerate(("ref-baseline-a", "ref-baseline-b")):
            a = self.start(
                run,
                role="reference",
                count=1,
                exe_role="baseline",
                config={"models": [{"id": "m", "path": "model.bin"}]},
            )
            full = {"ref_warm": replies["ref_cold"], "ref_warm2": replies["ref_cold"], **replies}
            for phase, bodies in full.items():
                ref = "base|cold" if phase == "ref_cold" else "base|warm"
                self.request(run, a, phase, bodies[i], ref=ref)
            self.end(run, a)

    def records(self) -> Records:
        return build_records(self.events)

    def context(self, **compare: Any) -> JudgeContext:
        return JudgeContext(self.records(), plan(**compare), {"plan": {"sha256": "0" * 64}}, self.run_dir, "plan.yaml")
