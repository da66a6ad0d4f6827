"""The negative control's planted mismatches: one change inside a reply's real content, so
a caught control shows the comparator (and, with a tolerance in force, the tolerance path)
sees content."""

from __future__ import annotations

import base64
import io
import json

import soundfile as sf

from parval.outputs.compare import decode_pcm


def _flip_wav_b64(value: str) -> str:
    raw = bytearray(base64.b64decode(value))
    idx = min(len(raw) - 1, 44 + (len(raw) - 44) // 2)  # one PCM byte mid-signal
    raw[idx] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


# Row fields that carry content, most telling first (one boundary moved by one sample).
_ROW_BOUNDARIES = ("end_sample", "start_sample", "end", "start")


def _move_one_boundary(rows: object) -> bool:
    if not isinstance(rows, list):
        return False
    for row in rows:
        if not isinstance(row, dict):
            continue
        for key in _ROW_BOUNDARIES:
            value = row.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                row[key] = value + 1
                return True
            if isinstance(value, float):
                row[key] = value + 0.001
                return True
    return False


def plant_mismatch(body: bytes) -> bytes:
    """The negative control: the same reply with one change inside its real content (one
    audio byte, one text character, one segment/turn/word boundary by one sample, one
    artifact payload byte), so a caught control shows the comparator sees content."""
    data = json.loads(body)
    if isinstance(data.get("audio"), str) and data["audio"]:
        data["audio"] = _flip_wav_b64(data["audio"])
        return json.dumps(data).encode()
    named = data.get("named_audio_outputs")
    if isinstance(named, list):
        for item in named:
            if isinstance(item, dict) and isinstance(item.get("audio"), str) and item["audio"]:
                item["audio"] = _flip_wav_b64(item["audio"])
                return json.dumps(data).encode()
    for key in ("segments", "speaker_turns", "words"):
        if _move_one_boundary(data.get(key)):
            return json.dumps(data).encode()
    if isinstance(data.get("text"), str) and data["text"]:
        t = data["text"]
        data["text"] = t[:-1] + ("x" if t[-1] != "x" else "y")
        return json.dumps(data).encode()
    artifacts = data.get("artifacts")
    if isinstance(artifacts, list):
        for item in artifacts:
            if isinstance(item, dict) and isinstance(item.get("payload"), str) and item["payload"]:
                raw = bytearray(base64.b64decode(item["payload"]))
                raw[len(raw) // 2] ^= 0x01
                item["payload"] = base64.b64encode(bytes(raw)).decode()
                return json.dumps(data).encode()
    if isinstance(data.get("segments"), list):  # nothing detected: report a spurious segment
        data["segments"].append({"start_sample": 0, "end_sample": 1, "confidence": 0.5})
        return json.dumps(data).encode()
    # No content field this control knows how to change: mark the reply instead.
    data["__planted__"] = True
    return json.dumps(data).encode()


def _move_one_sample(value: str, lsb16: int) -> str | None:
    """The same WAV (same sample format) with one mid-signal sample moved by `lsb16` 16-bit
    LSB, away from full scale; None when it cannot be decoded."""
    pcm, _ = decode_pcm(value)
    if pcm is None or pcm.samples.size == 0:
        return None
    samples = pcm.samples.copy()
    frame = samples.shape[0] // 2
    step = lsb16 / pcm.lsb16
    if samples.dtype.kind != "f":
        step = round(step)
    old = samples[frame, 0]
    samples[frame, 0] = old - step if old > 0 else old + step
    buf = io.BytesIO()
    sf.write(buf, samples, pcm.rate, format="WAV", subtype=pcm.subtype)
    return base64.b64encode(buf.getvalue()).decode()


def plant_beyond(body: bytes, tolerance: int) -> bytes | None:
    """The negative control for the tolerance path: the same reply with one sample of its
    first audio output moved by one LSB more than `tolerance` (at the file's own format), so
    a caught control shows the tolerance cannot hide a difference beyond it. A reply without
    audio gets the ordinary planted change (a tolerance never covers non-audio fields)."""
    data = json.loads(body)
    if isinstance(data.get("audio"), str) and data["audio"]:
        moved = _move_one_sample(data["audio"], tolerance + 1)
        if moved is None:
            return None
        data["audio"] = moved
        return json.dumps(data).encode()
    named = data.get("named_audio_outputs")
    if isinstance(named, list):
        for item in named:
            if isinstance(item, dict) and isinstance(item.get("audio"), str) and item["audio"]:
                moved = _move_one_sample(item["audio"], tolerance + 1)
                if moved is None:
                    return None
                item["audio"] = moved
                return json.dumps(data).encode()
    return plant_mismatch(body)
