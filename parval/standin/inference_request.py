"""Turn a request object into a validated, canonical inference request.

Validation runs after the lease is bound (contract §4.6), so every error raised here must
leave through a path that releases the lease. The canonical form stringifies scalar values
like the real server's option maps and replaces audio inputs by the digest of their decoded
samples, so a path and base64 of the same WAV give the same output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .audio_io import DecodedAudio, decode_audio_base64, read_wav_file
from .config import ModelSpec, option_string
from .errors import InvalidRequestError

AUDIO_INPUT_TASKS = frozenset({"asr", "vad", "diar", "align"})
TEXT_REQUIRED_TASKS = frozenset({"tts", "clon"})
NOT_PART_OF_REQUEST = frozenset({"model", "busy_timeout_ms"})
_INTEGER = re.compile(r"^-?\d+$")


@dataclass(frozen=True)
class InferenceRequest:
    fields: Mapping[str, Any]
    text: str
    seed: str
    max_tokens: int | None
    language: str
    audio: DecodedAudio | None
    voice: DecodedAudio | None

    def identity(self, *, ignore_seed: bool) -> dict[str, Any]:
        if not ignore_seed:
            return dict(self.fields)
        return {k: v for k, v in self.fields.items() if k != "seed"}


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INTEGER.match(value.strip()):
        return int(value.strip())
    return None


def _voice(value: Any) -> DecodedAudio:
    if isinstance(value, str):
        return read_wav_file(value)
    if isinstance(value, dict):
        kind = value.get("type")
        if kind == "path" and isinstance(value.get("path"), str):
            return read_wav_file(value["path"])
        if kind == "base64":
            return decode_audio_base64(value.get("data"), "voice_ref")
    raise InvalidRequestError("voice_ref must be a path string or a {type, path|data} object")


def _canonical_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _canonical_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical_value(v) for v in value]
    return option_string(value)


def build_request(raw: Mapping[str, Any], spec: ModelSpec) -> InferenceRequest:
    merged: dict[str, Any] = dict(spec.default_request_options)
    merged.update({k: v for k, v in raw.items() if v is not None})
    fields: dict[str, Any] = {}
    audio: DecodedAudio | None = None
    voice: DecodedAudio | None = None
    if "audio" in merged and "audio_base64" in merged:
        raise InvalidRequestError("provide only one of audio or audio_base64")
    text = merged.get("text", "")
    if not isinstance(text, str):
        raise InvalidRequestError("text must be a string")
    language = merged.get("language", "")
    if not isinstance(language, str):
        raise InvalidRequestError("language must be a string")
    max_tokens: int | None = None
    if "max_tokens" in merged:
        max_tokens = _integer(merged["max_tokens"])
        if max_tokens is None or max_tokens < 0:
            raise InvalidRequestError("max_tokens must be a non-negative integer")
    seed = ""
    if "seed" in merged:
        if _integer(merged["seed"]) is None:
            raise InvalidRequestError("seed must be an integer")
        seed = option_string(merged["seed"])
    for key, value in merged.items():
        if key in NOT_PART_OF_REQUEST:
            continue
        if key == "audio":
            if not isinstance(value, str) or not value:
                raise InvalidRequestError("audio must be a non-empty server path string")
            audio = read_wav_file(value)
            fields["audio_sha256"] = audio.digest()
        elif key == "audio_base64":
            audio = decode_audio_base64(value)
            fields["audio_sha256"] = audio.digest()
        elif key == "voice_ref":
            voice = _voice(value)
            fields["voice_ref_sha256"] = voice.digest()
        else:
            fields[key] = _canonical_value(value)
    if spec.task in TEXT_REQUIRED_TASKS and not text.strip():
        raise InvalidRequestError(f"{spec.task} request requires non-empty text")
    if spec.task in AUDIO_INPUT_TASKS and audio is None:
        raise InvalidRequestError(f"{spec.task} request requires input audio (audio or audio_base64)")
    if spec.task == "align" and not text.strip():
        raise InvalidRequestError("align request requires the transcript text")
    return InferenceRequest(fields, text, seed, max_tokens, language, audio, voice)
