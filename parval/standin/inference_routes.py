"""Inference routes: /v1/tasks/run, /v1/tasks/stream, /v1/tasks/batch and the shared lease path.

Each handler resolves the model and `busy_timeout_ms`, binds the lease, and only then
builds (validates) the request, loads the model and executes (contract §4.6). Streamed
and batch responses are written while the lease is still held.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InvalidRequestError, ServerError
from .execution import Executor, Job
from .faults import Faults
from .http_transport import HttpRequest, Responder
from .inference_request import InferenceRequest, build_request
from .result_payload import b64_wav, b64_wav32, fmt6, offline_timing, output_duration_ms, result_fields
from .runtime import ModelEntry, Runtime
from .synthesis import Rendered
from .traces import Traces

STREAM_STEPS = 8
StepHook = Callable[[Rendered, int], None]


@dataclass(frozen=True)
class Outcome:
    rendered: Rendered
    wall_ms: float
    request: InferenceRequest


def model_and_timeout(body: Mapping[str, Any]) -> tuple[str, int | None]:
    model = body.get("model")
    if not isinstance(model, str):
        raise ServerError("missing required json key: model")
    if "busy_timeout_ms" not in body or body["busy_timeout_ms"] is None:
        return model, None
    value = body["busy_timeout_ms"]
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ServerError("json number is not an integer")
    if value < 0:
        raise ServerError("busy_timeout_ms must be >= 0 (0 means no client-side bound)")
    return model, int(value)


def request_object(body: Mapping[str, Any], *skip: str) -> dict[str, Any]:
    if "request" in body:
        if not isinstance(body["request"], dict):
            raise ServerError("request must be a JSON object")
        return dict(body["request"])
    return {k: v for k, v in body.items() if k not in ("model", "busy_timeout_ms", *skip)}


def audio_pieces(rendered: Rendered, index: int) -> np.ndarray[Any, np.dtype[np.int16]]:
    if rendered.audio is None:
        raise ServerError("model result did not contain exactly one audio output")
    return np.array_split(rendered.audio, STREAM_STEPS)[index]


class InferenceRoutes:
    def __init__(self, runtime: Runtime, executor: Executor, traces: Traces, faults: Faults) -> None:
        self.rt = runtime
        self.executor = executor
        self.traces = traces
        self.faults = faults

    def run_leased(
        self,
        http: HttpRequest,
        entry: ModelEntry,
        requested: int | None,
        raw: Callable[[], Mapping[str, Any]],
        *,
        on_step: StepHook | None = None,
        before_load: Callable[[], None] | None = None,
        finish: Callable[[Outcome], None] | None = None,
    ) -> Outcome:
        """Lease, validate, (start a stream), load, (trace), execute, (finish the stream).

        Streams start before the load, so a load failure becomes an in-stream error, and
        finish inside the lease, so the lease covers the whole exchange. The lease is
        released on every path.
        """
        with self.rt.request_lease(entry, requested) as slot:
            spec = entry.spec
            request = build_request(raw(), spec)
            if before_load is not None:
                before_load()
            pool = self.rt.ensure_loaded(entry)
            session = pool.sessions[slot]
            if on_step is None and self.rt.parallel and spec.mode == "offline":
                self.traces.observe(
                    model=spec.id,
                    slot=slot,
                    session=session.address,
                    text=request.text,
                    audio_samples=request.audio.total_samples if request.audio else 0,
                    voice_samples=request.voice.total_samples if request.voice else 0,
                    seed=request.seed,
                )
            job = Job(http.path, spec, pool, session, slot, request, http.accept_ns)
            rendered, wall_ms = self.executor.execute(job, steps=STREAM_STEPS if on_step else 1, on_step=on_step)
            outcome = Outcome(rendered, wall_ms, request)
            if finish is not None:
                finish(outcome)
        return outcome

    # -- /v1/tasks/run --------------------------------------------------------------------
    def tasks_run(self, http: HttpRequest, out: Responder) -> None:
        body = http.json_object()
        model_id, requested = model_and_timeout(body)
        entry = self.rt.lookup(model_id)
        outcome = self.run_leased(http, entry, requested, lambda: request_object(body))
        result = self._audio_format(result_fields(outcome.rendered), outcome.rendered)
        if "audio" in result and self.faults.on("bad_base64"):
            result["audio"] = "!!not base64!!" + result["audio"][:16]
        if "audio" in result and self.faults.on("bad_wav"):
            result["audio"] = base64.b64encode(b"this is not a RIFF/WAVE file").decode()
        result["timing"] = offline_timing(outcome.wall_ms, output_duration_ms(outcome.rendered))
        if self.faults.on("garbage_replies"):
            out.send(200, b"<html>internal proxy garbage {not json", "application/json")
            return
        out.json(200, result)

    def _audio_format(self, result: dict[str, Any], rendered: Rendered) -> dict[str, Any]:
        """The `pcm32_output` behaviour (32-bit PCM WAV audio) and the `sub16_noise` fault
        (the same, with sample differences below 16 bits)."""
        noise = self.faults.on("sub16_noise")
        if rendered.audio is not None and "audio" in result and (noise or self.faults.on("pcm32_output")):
            result = {**result, "audio": b64_wav32(rendered.audio, rendered.sample_rate, noise=noise)}
        return result

    # -- /v1/tasks/stream -----------------------------------------------------------------
    @staticmethod
    def _stream_event(rendered: Rendered, index: int) -> dict[str, Any]:
        final = index == STREAM_STEPS - 1
        if rendered.audio is not None:
            piece = audio_pieces(rendered, index)
            return {"audio": b64_wav(piece, rendered.sample_rate), "is_final": final}
        if rendered.text is not None:
            words = rendered.text.split()
            shown = words[: len(words) * (index + 1) // STREAM_STEPS]
            partial = {"text": " ".join(shown), "language": rendered.language or ""}
            return {"partial_text": partial, "is_final": final}
        event: dict[str, Any] = {"is_final": final}
        if final and rendered.speaker_turns is not None:
            event["speaker_turns"] = rendered.speaker_turns
        return event

    def tasks_stream(self, http: HttpRequest, out: Responder) -> None:
        body = http.json_object()
        model_id, requested = model_and_timeout(body)
        stream_format = body.get("stream_format")
        if stream_format is not None and stream_format != "sse":
            raise InvalidRequestError("task stream stream_format must be sse")
        sse = stream_format == "sse"
        entry = self.rt.lookup(model_id)
        events: list[dict[str, Any]] = []
        clock: dict[str, float] = {}

        def before_load() -> None:
            if entry.spec.mode != "streaming":
                raise ServerError(f"configured model does not provide streaming execution: {model_id}")
            if sse:
                out.start_stream("text/event-stream")
            clock["start"] = time.perf_counter()

        def on_step(rendered: Rendered, index: int) -> None:
            event = self._stream_event(rendered, index)
            clock.setdefault("ttft", (time.perf_counter() - clock["start"]) * 1000.0)
            if sse:
                out.sse({"type": "task.stream.event", "event": event})
            else:
                events.append(event)

        def finish(outcome: Outcome) -> None:
            result = result_fields(outcome.rendered)
            result["timing"] = {"ttft_ms": fmt6(clock["ttft"])}
            if sse:
                out.sse({"type": "task.stream.done", "result": result})
                out.sse_done()
                out.end_stream()
            else:
                out.json(200, {"events": events, "result": result})

        self.run_leased(
            http,
            entry,
            requested,
            lambda: request_object(body, "stream_format"),
            on_step=on_step,
            before_load=before_load,
            finish=finish,
        )

    # -- /v1/tasks/batch ------------------------------------------------------------------
    def tasks_batch(self, http: HttpRequest, out: Responder) -> None:
        body = http.json_object()
        model_id, requested = model_and_timeout(body)
        entry = self.rt.lookup(model_id)
        if entry.spec.mode != "offline":
            raise InvalidRequestError("task batching requires a model configured with mode=offline")
        entries = body.get("requests")
        if not isinstance(entries, list) or not entries:
            raise InvalidRequestError("task batch request requires a non-empty 'requests' array")
        if not all(isinstance(e, dict) for e in entries):
            raise InvalidRequestError("task batch entries must be JSON objects")
        with self.rt.request_lease(entry, requested) as slot:
            spec = entry.spec
            pool = self.rt.ensure_loaded(entry)
            if not pool.knobs.native_batch:
                raise InvalidRequestError(f"configured model does not provide native offline batching: {model_id}")
            requests = [build_request(e, spec) for e in entries]
            jobs = [Job(http.path, spec, pool, pool.sessions[slot], slot, r, http.accept_ns) for r in requests]
            outputs, wall_ms = self.executor.execute_batch(jobs)
            out.start_stream("text/event-stream")
            durations: list[float | None] = []
            for index, rendered in enumerate(outputs):
                # batch_repeats_first: request 0's result is sent again in place of request 1's
                shown = 0 if index == 1 and self.faults.on("batch_repeats_first") else index
                result: dict[str, Any] = self._audio_format(result_fields(outputs[shown]), outputs[shown])
                result["timing"] = None
                durations.append(output_duration_ms(rendered))
                out.sse({"type": "task.batch.result", "index": shown, "result": result})
            known = [d for d in durations if d is not None]
            timing = offline_timing(wall_ms, sum(known) if len(known) == len(durations) else None)
            out.sse({"type": "task.batch.done", "result_count": len(outputs), "timing": timing})
            out.sse_done()
            out.end_stream()
