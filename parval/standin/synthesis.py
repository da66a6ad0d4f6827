"""Deterministic model outputs: a pure function of an identity digest and the inputs.

Audio tasks get a voiced-sounding PCM16 signal whose length grows with the text and is
capped by `max_tokens` (20 ms of audio per token); ASR text, VAD segments, speaker turns
and word alignments are derived from the decoded input samples and the digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .audio_io import DecodedAudio, Pcm16
from .inference_request import InferenceRequest

TEXT_TASKS = frozenset({"asr", "vad", "diar", "align"})
_VOCAB = (
    "the",
    "a",
    "model",
    "slot",
    "voice",
    "signal",
    "audio",
    "quiet",
    "river",
    "green",
    "seven",
    "bright",
    "engine",
    "morning",
    "number",
    "listen",
    "window",
    "paper",
)


@dataclass(frozen=True)
class Rendered:
    sample_rate: int
    audio: Pcm16 | None = None
    text: str | None = None
    language: str | None = None
    segments: list[dict[str, Any]] | None = None
    speaker_turns: list[dict[str, Any]] | None = None
    words: list[dict[str, Any]] | None = None


def identity_digest(parts: Mapping[str, Any]) -> bytes:
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).digest()


def _rng(digest: bytes, salt: bytes = b"") -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(digest + salt).digest()[:16], "big"))


def audio_samples_for(text: str, max_tokens: int | None, sample_rate: int) -> int:
    tokens = 10 + 3 * len(text)
    if max_tokens is not None:
        tokens = min(tokens, max_tokens)
    return tokens * sample_rate // 50


def render_audio(digest: bytes, request: InferenceRequest, sample_rate: int) -> Pcm16:
    n = audio_samples_for(request.text, request.max_tokens, sample_rate)
    rng = _rng(digest, b"audio")
    t = np.arange(n, dtype=np.float64) / sample_rate
    f0 = rng.uniform(100.0, 260.0)
    phases = rng.uniform(0.0, 2 * np.pi, size=3)
    envelope = 0.6 + 0.4 * np.sin(2 * np.pi * rng.uniform(3.0, 6.0) * t + phases[2])
    wave = envelope * (
        0.35 * np.sin(2 * np.pi * f0 * t + phases[0]) + 0.12 * np.sin(2 * np.pi * 2.5 * f0 * t + phases[1])
    )
    wave += 0.03 * rng.standard_normal(n)
    pcm: Pcm16 = np.rint(np.clip(wave, -1.0, 1.0) * 32767.0).astype(np.int16)
    return pcm


def _voiced_segments(audio: DecodedAudio, digest: bytes) -> list[dict[str, Any]]:
    mono = audio.mono()
    frame = max(1, audio.sample_rate // 50)
    count = len(mono) // frame
    if count == 0:
        return []
    rms = np.sqrt((mono[: count * frame].reshape(count, frame) ** 2).mean(axis=1))
    peak = float(rms.max())
    voiced = rms > max(0.01, 0.25 * peak)
    jitter = float(_rng(digest, b"vad").uniform(0.0, 0.04))
    segments: list[dict[str, Any]] = []
    start: int | None = None
    for index, flag in enumerate([*voiced.tolist(), False]):
        if flag and start is None:
            start = index
        elif not flag and start is not None:
            strength = float(rms[start:index].mean()) / peak if peak > 0 else 0.0
            confidence = round(min(0.999999, 0.55 + 0.4 * strength + jitter), 6)
            segments.append({"start_sample": start * frame, "end_sample": index * frame, "confidence": confidence})
            start = None
    return segments


def _transcript(digest: bytes, audio: DecodedAudio) -> str:
    rng = _rng(digest, b"asr")
    count = max(1, min(48, int(audio.duration_ms / 400.0) + 1))
    return " ".join(_VOCAB[int(i)] for i in rng.integers(0, len(_VOCAB), size=count))


def render(task: str, digest: bytes, request: InferenceRequest, sample_rate: int) -> Rendered:
    if task not in TEXT_TASKS:
        return Rendered(sample_rate, audio=render_audio(digest, request, sample_rate))
    audio = request.audio
    assert audio is not None  # validated: these tasks require input audio
    language = request.language or "en"
    if task == "asr":
        return Rendered(audio.sample_rate, text=_transcript(digest, audio), language=language)
    segments = _voiced_segments(audio, digest)
    if task == "vad":
        return Rendered(audio.sample_rate, segments=segments)
    if task == "diar":
        speakers = _rng(digest, b"diar").integers(0, 2, size=len(segments))
        turns = [
            {
                "start_sample": s["start_sample"],
                "end_sample": s["end_sample"],
                "speaker_id": f"SPEAKER_{int(k):02d}",
                "confidence": s["confidence"],
            }
            for s, k in zip(segments, speakers, strict=True)
        ]
        return Rendered(audio.sample_rate, speaker_turns=turns)
    words = request.text.split()
    frames = audio.samples.shape[0]
    step = frames // max(1, len(words))
    aligned = [
        {
            "word": w,
            "start": round(i * step / audio.sample_rate, 6),
            "end": round((i + 1) * step / audio.sample_rate, 6),
            "start_sample": i * step,
            "end_sample": (i + 1) * step,
            "confidence": round(0.9 + 0.01 * (i % 9), 6),
        }
        for i, w in enumerate(words)
    ]
    return Rendered(audio.sample_rate, text=request.text, language=language, words=aligned)


def perturb(rendered: Rendered, rng: np.random.Generator, *, text_suffix: bool) -> Rendered:
    """Change one audio sample by one, or one text character (or add a random suffix)."""
    if rendered.audio is not None and rendered.audio.size:
        audio = rendered.audio.copy()
        index = int(rng.integers(0, audio.size))
        audio[index] = audio[index] - 1 if audio[index] > 0 else audio[index] + 1
        return replace(rendered, audio=audio)
    if rendered.text:
        if text_suffix:
            return replace(rendered, text=f"{rendered.text} ~{int(rng.integers(0, 10**6)):06d}")
        index = int(rng.integers(0, len(rendered.text)))
        swapped = "x" if rendered.text[index] != "x" else "y"
        return replace(rendered, text=rendered.text[:index] + swapped + rendered.text[index + 1 :])
    rows = rendered.segments or rendered.speaker_turns
    if rows:
        rows = [dict(r) for r in rows]
        rows[0]["end_sample"] += 1
        if rendered.segments:
            return replace(rendered, segments=rows)
        return replace(rendered, speaker_turns=rows)
    if rendered.segments is not None:  # nothing detected: report a spurious segment
        return replace(rendered, segments=[{"start_sample": 0, "end_sample": 1, "confidence": 0.5}])
    return rendered
