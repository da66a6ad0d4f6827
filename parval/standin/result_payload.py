"""Response bodies: `tasks/run`-style result fields in the real server's order, and timing."""

from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np
import soundfile as sf

from .audio_io import Pcm16, encode_wav
from .synthesis import Rendered


def fmt6(value: float) -> float:
    """Six significant digits, like the default C++ stream formatting of `timing`."""
    return float(f"{value:.6g}")


def b64_wav(samples: Pcm16, sample_rate: int) -> str:
    return base64.b64encode(encode_wav(samples, sample_rate)).decode()


def b64_wav32(samples: Pcm16, sample_rate: int, *, noise: bool = False) -> str:
    """The same audio as a 32-bit PCM WAV; `noise` adds a deterministic pattern below the
    16-bit step (every sample moves by less than one 16-bit LSB)."""
    wide = samples.astype(np.int32) << 16
    if noise:
        wide = wide + (np.arange(wide.size, dtype=np.int32).reshape(wide.shape) % 7 + 1)
    buffer = io.BytesIO()
    sf.write(buffer, wide, sample_rate, format="WAV", subtype="PCM_32")
    return base64.b64encode(buffer.getvalue()).decode()


def b64_pcm(samples: Pcm16) -> str:
    """Raw little-endian s16 PCM without a header (speech stream deltas)."""
    return base64.b64encode(samples.astype("<i2").tobytes()).decode()


def result_fields(rendered: Rendered) -> dict[str, Any]:
    """Fields in emission order; `timing` is appended by the caller so it stays last."""
    out: dict[str, Any] = {}
    if rendered.text is not None:
        out["text"] = rendered.text
        if rendered.language:
            out["language"] = rendered.language
    if rendered.audio is not None:
        out["audio"] = b64_wav(rendered.audio, rendered.sample_rate)
        out["sample_rate"] = rendered.sample_rate
        out["channels"] = 1
    if rendered.segments is not None:
        out["segments"] = rendered.segments
    if rendered.speaker_turns is not None:
        out["speaker_turns"] = rendered.speaker_turns
    if rendered.words is not None:
        out["words"] = rendered.words
    return out


def output_duration_ms(rendered: Rendered) -> float | None:
    if rendered.audio is None:
        return None
    return 1000.0 * rendered.audio.size / rendered.sample_rate


def offline_timing(wall_ms: float, duration_ms: float | None) -> dict[str, float]:
    timing = {"wall_ms": fmt6(wall_ms)}
    if duration_ms is not None:
        timing["audio_duration_ms"] = fmt6(duration_ms)
        timing["rtf"] = fmt6(wall_ms / duration_ms) if duration_ms > 0 else 0
    return timing
