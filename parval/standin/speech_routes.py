"""/v1/audio/speech: WAV or JSON offline answers, SSE or raw PCM streams (contract §3.7)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from .audio_io import encode_wav
from .errors import InvalidRequestError, ServerError
from .http_transport import HttpRequest, Responder
from .inference_routes import InferenceRoutes, Outcome, audio_pieces, model_and_timeout
from .result_payload import b64_pcm, b64_wav, fmt6, offline_timing, output_duration_ms
from .runtime import ModelEntry
from .synthesis import Rendered

SPEECH_KEYS = (
    "language",
    "voice_ref",
    "reference_text",
    "seed",
    "temperature",
    "top_k",
    "top_p",
    "max_tokens",
    "max_steps",
    "repetition_penalty",
    "guidance_scale",
    "num_inference_steps",
)


class SpeechRoutes:
    def __init__(self, inference: InferenceRoutes) -> None:
        self.inference = inference

    @staticmethod
    def speech_request(body: Mapping[str, Any]) -> dict[str, Any]:
        if "input" not in body:
            raise ServerError("missing required json key: input")
        if not isinstance(body["input"], str):
            raise InvalidRequestError("input must be a string")
        raw: dict[str, Any] = {"text": body["input"]}
        raw.update({k: body[k] for k in SPEECH_KEYS if body.get(k) is not None})
        if body.get("voice") is not None:
            raw["voice_id"] = body["voice"]
        speed = body.get("speed", body.get("speaking_rate"))
        if speed is not None:
            if isinstance(speed, bool) or not isinstance(speed, int | float) or speed <= 0:
                raise InvalidRequestError("speed must be a positive number")
            raw["speaking_rate"] = speed
        options = dict(body.get("options") or {})
        if body.get("instructions") is not None:
            options["instruction"] = body["instructions"]
        if options:
            raw["options"] = options
        return raw

    def audio_speech(self, http: HttpRequest, out: Responder) -> None:
        body = http.json_object()
        model_id, requested = model_and_timeout(body)
        entry = self.inference.rt.lookup(model_id)
        if body.get("stream") is True or body.get("stream_format") is not None:
            self._speech_stream(http, out, body, entry, requested)
            return
        fmt = body.get("response_format") or "wav"
        if fmt not in ("wav", "json", "b64_json"):
            raise InvalidRequestError(f"unsupported response_format: {fmt}")
        outcome = self.inference.run_leased(http, entry, requested, lambda: self.speech_request(body))
        audio = outcome.rendered.audio
        if audio is None:
            raise ServerError("model result did not contain exactly one audio output")
        duration = output_duration_ms(outcome.rendered) or 0.0
        timing = offline_timing(outcome.wall_ms, duration)
        if fmt != "wav":
            payload = {"audio": b64_wav(audio, outcome.rendered.sample_rate), "format": "wav", "timing": timing}
            out.json(200, payload)
            return
        headers = {
            "X-AudioCPP-Wall-Ms": f"{outcome.wall_ms:.6f}",
            "X-AudioCPP-Audio-Duration-Ms": f"{duration:.6f}",
            "X-AudioCPP-RTF": f"{timing['rtf']:.6f}",
        }
        out.send(200, encode_wav(audio, outcome.rendered.sample_rate), "audio/wav", headers)

    def _speech_stream(
        self, http: HttpRequest, out: Responder, body: Mapping[str, Any], entry: ModelEntry, requested: int | None
    ) -> None:
        if entry.spec.mode != "streaming":
            raise ServerError("speech streaming requires a model configured with mode=streaming")
        stream_format = body.get("stream_format") or "sse"
        if stream_format not in ("sse", "audio"):
            raise InvalidRequestError("stream_format must be sse or audio")
        if (body.get("response_format") or "pcm") != "pcm":
            raise InvalidRequestError("streaming speech requires response_format pcm")
        sse = stream_format == "sse"
        clock: dict[str, float] = {}

        def before_load() -> None:
            out.start_stream("text/event-stream" if sse else "application/octet-stream")
            clock["start"] = time.perf_counter()

        def on_step(rendered: Rendered, index: int) -> None:
            piece = audio_pieces(rendered, index)
            clock.setdefault("ttft", (time.perf_counter() - clock["start"]) * 1000.0)
            if not piece.size:
                return
            if sse:
                out.sse({"type": "speech.audio.delta", "audio": b64_pcm(piece)})
            else:
                out.chunk(piece.astype("<i2").tobytes())

        def finish(outcome: Outcome) -> None:
            if sse:
                out.sse({"type": "speech.audio.done", "timing": {"ttft_ms": fmt6(clock["ttft"])}})
                out.sse_done()
            out.end_stream()

        self.inference.run_leased(
            http,
            entry,
            requested,
            lambda: self.speech_request(body),
            on_step=on_step,
            before_load=before_load,
            finish=finish,
        )
