"""Optional traces: the slot-validation observer (stderr) and the benchmark trace file.

`AUDIOCPP_SLOT_VALIDATION_OBSERVER=1` prints one `[SLOT_VALIDATION] {json}` line per offline
request after the lease and load, before execution, like the slot-validation build.
`PARVAL_STANDIN_TRACE=<file>` appends one JSON line per executed request with
CLOCK_MONOTONIC nanosecond stamps (comparable with the client's `time.monotonic_ns()`).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

OBSERVER_ENV = "AUDIOCPP_SLOT_VALIDATION_OBSERVER"
TRACE_ENV = "PARVAL_STANDIN_TRACE"

_stderr_lock = threading.Lock()


def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def stderr_line(text: str) -> None:
    with _stderr_lock:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


class Traces:
    def __init__(self, observer: bool, trace_path: str | None) -> None:
        self.observer = observer
        self._trace_path = trace_path
        self._trace_lock = threading.Lock()

    @classmethod
    def from_environment(cls) -> Traces:
        return cls(os.environ.get(OBSERVER_ENV) == "1", os.environ.get(TRACE_ENV) or None)

    def observe(
        self, *, model: str, slot: int, session: str, text: str, audio_samples: int, voice_samples: int, seed: str
    ) -> None:
        if not self.observer:
            return
        record = {
            "model": model,
            "slot": slot,
            "session": session,
            "text": text,
            "audio_samples": audio_samples,
            "voice_samples": voice_samples,
            "seed": seed,
        }
        stderr_line("[SLOT_VALIDATION] " + _compact(record))

    def request(
        self, *, route: str, model: str, accept_ns: int, start_ns: int, end_ns: int, slot: int, text: str
    ) -> None:
        if self._trace_path is None:
            return
        record = {
            "route": route,
            "model": model,
            "accept_ns": accept_ns,
            "start_ns": start_ns,
            "end_ns": end_ns,
            "slot": slot,
            "text": text,
        }
        with self._trace_lock, open(self._trace_path, "a", encoding="utf-8") as handle:
            handle.write(_compact(record) + "\n")
