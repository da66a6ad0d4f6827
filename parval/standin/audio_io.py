"""PCM16 WAV encoding and the input-audio decoding rules of the real server."""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import soundfile as sf

from .errors import InvalidRequestError, ServerError

Pcm16 = npt.NDArray[np.int16]


@dataclass(frozen=True)
class DecodedAudio:
    samples: Pcm16  # shape (frames, channels)
    sample_rate: int

    @property
    def channels(self) -> int:
        return int(self.samples.shape[1])

    @property
    def total_samples(self) -> int:
        """Interleaved sample count, as the observer trace reports it."""
        return int(self.samples.size)

    @property
    def duration_ms(self) -> float:
        return 1000.0 * int(self.samples.shape[0]) / self.sample_rate

    def digest(self) -> str:
        head = f"{self.sample_rate}:{self.channels}:".encode()
        return hashlib.sha256(head + self.samples.tobytes()).hexdigest()

    def mono(self) -> npt.NDArray[np.float64]:
        mono: npt.NDArray[np.float64] = self.samples.astype(np.float64).mean(axis=1) / 32768.0
        return mono


def encode_wav(samples: Pcm16, sample_rate: int) -> bytes:
    """A complete mono PCM16 WAV (44-byte RIFF header)."""
    buffer = io.BytesIO()
    sf.write(buffer, samples, sample_rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def decode_wav(data: bytes) -> DecodedAudio:
    """Decode WAV bytes; raises ValueError when they are not a readable WAV."""
    try:
        with sf.SoundFile(io.BytesIO(data)) as handle:
            if handle.format != "WAV":
                raise ValueError("not a WAV file")
            samples = handle.read(dtype="int16", always_2d=True)
            return DecodedAudio(samples, int(handle.samplerate))
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        raise ValueError(str(exc)) from exc


def read_wav_file(path_text: str) -> DecodedAudio:
    """A server-local WAV path, resolved against the process working directory."""
    path = Path(path_text)
    try:
        return decode_wav(path.read_bytes())
    except (OSError, ValueError):
        raise ServerError(f"could not open WAV input: {path_text}") from None


def decode_audio_base64(value: object, field: str = "audio_base64") -> DecodedAudio:
    if not isinstance(value, str) or not value:
        raise InvalidRequestError(f"{field} must be a non-empty string")
    text = value
    if text.startswith("data:"):
        _, sep, text = text.partition(",")
        if not sep:
            raise InvalidRequestError(f"{field} must contain a valid Base64-encoded WAV")
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequestError(f"{field} must contain a valid Base64-encoded WAV") from None
    if not data:
        raise InvalidRequestError(f"{field} contains no audio")
    try:
        audio = decode_wav(data)
    except ValueError:
        raise InvalidRequestError(f"{field} must contain a valid Base64-encoded WAV") from None
    if audio.samples.shape[0] == 0:
        raise InvalidRequestError(f"{field} contains no audio")
    return audio
