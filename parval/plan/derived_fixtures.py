"""The input recordings `parval init --speech WAV` derives from one speech recording.

An audio-input model's plan needs three inputs (M3.variation): the base, one of another
length and one of about the same length with other content. From one PCM WAV, init writes
the base (a copy), its first half (another length) and the base played backwards (the same
length, other content: the same voice and loudness, so it exercises the same paths), and a
manifest saying how each was made with its sha256, so that anyone can make them again and
check them.
"""

from __future__ import annotations

import hashlib
import json
import wave
from dataclasses import dataclass
from pathlib import Path

from parval.errors import InputFileError, UsageError
from parval.jsontypes import JsonObject

MANIFEST = "fixtures.json"
MIN_SECONDS = 1.0  # half of it must still be a recording a model can answer


@dataclass(frozen=True)
class Fixture:
    role: str  # "base", "other_length", "other_content"
    path: Path
    made: str  # how it was made, in words
    sha256: str
    seconds: float


@dataclass(frozen=True)
class _Pcm:
    channels: int
    sample_bytes: int
    rate: int
    frames: bytes

    @property
    def frame_size(self) -> int:
        return self.channels * self.sample_bytes

    @property
    def nframes(self) -> int:
        return len(self.frames) // self.frame_size


def _read(path: Path) -> _Pcm:
    try:
        with wave.open(str(path), "rb") as w:
            pcm = _Pcm(w.getnchannels(), w.getsampwidth(), w.getframerate(), w.readframes(w.getnframes()))
    except FileNotFoundError:
        raise InputFileError(f"{path}: speech recording not found") from None
    except (OSError, EOFError, wave.Error) as exc:
        raise InputFileError(
            f"{path}: not a PCM WAV file parval can read: {exc}",
            hint="convert it first, e.g. ffmpeg -i IN -ar 16000 -ac 1 -c:a pcm_s16le OUT.wav",
        ) from None
    if pcm.nframes < MIN_SECONDS * pcm.rate:
        raise UsageError(
            f"{path}: {pcm.nframes / pcm.rate:.2f} s of audio; "
            f"--speech needs at least {MIN_SECONDS:g} s of speech (with pauses)"
        )
    return pcm


def _write(path: Path, pcm: _Pcm, frames: bytes) -> str:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(pcm.channels)
        w.setsampwidth(pcm.sample_bytes)
        w.setframerate(pcm.rate)
        w.writeframes(frames)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _reversed_frames(pcm: _Pcm) -> bytes:
    size = pcm.frame_size
    view = memoryview(pcm.frames)
    return b"".join(view[i : i + size] for i in range(len(pcm.frames) - size, -1, -size))


def derive_fixtures(speech: Path, folder: Path) -> list[Fixture]:
    """Write the three inputs and their manifest into `folder` (made if missing); return them
    base first. Nothing of `speech` is changed."""
    pcm = _read(speech)
    source_sha = hashlib.sha256(speech.read_bytes()).hexdigest()
    rate, n = pcm.rate, pcm.nframes
    half = n // 2
    folder.mkdir(parents=True, exist_ok=True)
    plans = (
        ("base", "input.wav", pcm.frames, f"a copy of {speech.name}'s samples"),
        (
            "other_length",
            "input-first-half.wav",
            pcm.frames[: half * pcm.frame_size],
            f"the first {half} of the {n} sample frames of input.wav (another length)",
        ),
        (
            "other_content",
            "input-reversed.wav",
            _reversed_frames(pcm),
            "input.wav's sample frames in reverse order (the same length, other content)",
        ),
    )
    out: list[Fixture] = []
    for role, name, frames, made in plans:
        path = folder / name
        sha = _write(path, pcm, frames)
        out.append(Fixture(role, path, made, sha, len(frames) / pcm.frame_size / rate))
    manifest: JsonObject = {
        "written_by": "parval init --speech",
        "source": {"path": str(speech.resolve()), "sha256": source_sha},
        "format": {"rate_hz": rate, "channels": pcm.channels, "sample_bytes": pcm.sample_bytes},
        "fixtures": [
            {"role": f.role, "file": f.path.name, "made": f.made, "sha256": f.sha256, "seconds": round(f.seconds, 3)}
            for f in out
        ],
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    return out
