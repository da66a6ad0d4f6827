"""/v1/audio/transcriptions and /details: JSON or multipart bodies, optional SSE stream."""

from __future__ import annotations

import base64
import time
from email.message import Message
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import PurePath
from typing import Any

from .errors import InvalidRequestError, ServerError
from .http_transport import HttpRequest, Responder
from .inference_routes import STREAM_STEPS, InferenceRoutes, Outcome, model_and_timeout
from .result_payload import fmt6, offline_timing
from .synthesis import Rendered


def _multipart_body(http: HttpRequest) -> dict[str, Any]:
    """Form fields as strings, the `file` part as base64 audio; validated like the server."""
    head = f"Content-Type: {http.headers.get('Content-Type', '')}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + http.body)
    body: dict[str, Any] = {}
    for part in message.iter_parts():
        assert isinstance(part, Message)
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if not isinstance(name, str) or not isinstance(payload, bytes):
            continue
        if name == "file":
            suffix = PurePath(part.get_filename() or "").suffix.lower()
            if suffix not in ("", ".wav"):
                raise InvalidRequestError(
                    "only WAV audio uploads are currently supported for transcription; MP3 support is planned"
                )
            body["audio_base64"] = base64.b64encode(payload).decode()
        else:
            body[name] = payload.decode("utf-8", errors="replace")
    if "busy_timeout_ms" in body:
        try:
            body["busy_timeout_ms"] = int(body["busy_timeout_ms"])
        except ValueError:
            raise InvalidRequestError("busy_timeout_ms must be an integer") from None
    return body


def _stream_flag(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if value in ("true", "True", "1"):
        return True
    if value in ("false", "False", "0"):
        return False
    raise InvalidRequestError("stream must be a boolean")


def _raw_request(body: dict[str, Any]) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    if "audio_base64" in body:
        raw["audio_base64"] = body["audio_base64"]
    else:
        path = next((body[k] for k in ("audio", "audio_path", "file") if body.get(k)), None)
        if path is None:
            raise ServerError("transcription request requires audio, audio_path, or file path")
        raw["audio"] = path
    for key in ("language", "options"):
        if body.get(key) is not None:
            raw[key] = body[key]
    context = body.get("text", body.get("prompt"))
    if context is not None:
        raw["text"] = context
    return raw


class TranscriptionRoutes:
    def __init__(self, inference: InferenceRoutes) -> None:
        self.inference = inference

    def transcriptions(self, http: HttpRequest, out: Responder) -> None:
        self._handle(http, out, details=False)

    def details(self, http: HttpRequest, out: Responder) -> None:
        self._handle(http, out, details=True)

    def _handle(self, http: HttpRequest, out: Responder, *, details: bool) -> None:
        ctype = http.headers.get("Content-Type", "")
        body = _multipart_body(http) if ctype.startswith("multipart/form-data") else http.json_object()
        model_id, requested = model_and_timeout(body)
        stream = _stream_flag(body.get("stream"))
        if stream and details:
            raise InvalidRequestError("stream=true is not supported on /v1/audio/transcriptions/details")
        entry = self.inference.rt.lookup(model_id)
        if stream:
            if entry.spec.mode != "streaming":
                raise ServerError("transcription streaming requires a model configured with mode=streaming")
            self._stream(http, out, body, model_id, requested)
            return
        outcome = self.inference.run_leased(http, entry, requested, lambda: _raw_request(body))
        rendered = outcome.rendered
        if rendered.text is None:
            raise ServerError("model result did not contain a transcript")
        result: dict[str, Any] = {"text": rendered.text}
        if details:
            if rendered.language:
                result["language"] = rendered.language
            for key in ("segments", "speaker_turns", "words"):
                if getattr(rendered, key) is not None:
                    result[key] = getattr(rendered, key)
            result["sample_rate"] = rendered.sample_rate
        audio = outcome.request.audio
        result["timing"] = offline_timing(outcome.wall_ms, audio.duration_ms if audio else 0.0)
        out.json(200, result)

    def _stream(
        self, http: HttpRequest, out: Responder, body: dict[str, Any], model_id: str, requested: int | None
    ) -> None:
        entry = self.inference.rt.lookup(model_id)
        clock: dict[str, float] = {}

        def before_load() -> None:
            out.start_stream("text/event-stream")
            clock["start"] = time.perf_counter()

        def on_step(rendered: Rendered, index: int) -> None:
            words = (rendered.text or "").split()
            lo = len(words) * index // STREAM_STEPS
            hi = len(words) * (index + 1) // STREAM_STEPS
            clock.setdefault("ttft", (time.perf_counter() - clock["start"]) * 1000.0)
            if hi > lo:
                delta = (" " if lo else "") + " ".join(words[lo:hi])
                out.sse({"type": "transcript.text.delta", "delta": delta})

        def finish(outcome: Outcome) -> None:
            out.sse(
                {
                    "type": "transcript.text.done",
                    "text": outcome.rendered.text or "",
                    "timing": {"ttft_ms": fmt6(clock["ttft"])},
                }
            )
            out.sse_done()
            out.end_stream()

        self.inference.run_leased(
            http, entry, requested, lambda: _raw_request(body), on_step=on_step, before_load=before_load, finish=finish
        )
