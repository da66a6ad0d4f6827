"""Exact comparison of server outputs.

A reply is reduced to a canonical form: the JSON with only the plan's named volatile
fields removed (never a whole metadata object), keys sorted; audio fields are decoded and
hashed separately so a report can name which stem differs. Two outputs are equal when the
canonical hashes are equal: byte-identical audio and exact text and metadata (Q2, Q3).
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import io
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import soundfile as sf


@dataclass(frozen=True)
class Output:
    valid: bool
    canon: str = ""
    problem: str = ""
    audio: dict[str, dict[str, Any]] = field(default_factory=dict)
    text: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"valid": self.valid, "canon": self.canon}
        if self.problem:
            out["problem"] = self.problem
        if self.audio:
            out["audio"] = self.audio
        if self.text is not None:
            out["text"] = self.text[:200]
        return out


def remove_volatile(data: Any, paths: list[str]) -> Any:
    out = copy.deepcopy(data)
    for path in paths:
        _remove(out, path.split("."))
    return out


def _remove(node: Any, parts: list[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _remove(item, parts)
        return
    if not isinstance(node, dict) or parts[0] not in node:
        return
    if len(parts) == 1:
        del node[parts[0]]
    else:
        _remove(node[parts[0]], parts[1:])


def decode_wav_b64(value: Any) -> tuple[np.ndarray[Any, Any] | None, int, str]:
    """(samples as int16, sample rate, problem). Accepts a data: URI prefix."""
    if not isinstance(value, str) or not value:
        return None, 0, "not a non-empty base64 string"
    raw_text = value.split(",", 1)[1] if value.startswith("data:") else value
    try:
        raw = base64.b64decode(raw_text, validate=True)
    except (binascii.Error, ValueError):
        return None, 0, "invalid base64"
    try:
        data, rate = sf.read(io.BytesIO(raw), dtype="int16", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        return None, 0, f"not a decodable WAV ({str(exc)[:80]})"
    return data, int(rate), ""


def _audio_fields(data: dict[str, Any]) -> list[tuple[str, Any]]:
    fields: list[tuple[str, Any]] = []
    if "audio" in data:
        fields.append(("audio", data["audio"]))
    named = data.get("named_audio_outputs")
    if isinstance(named, list):
        for i, item in enumerate(named):
            if isinstance(item, dict) and "audio" in item:
                fields.append((f"named_audio_outputs[{item.get('id', i)}]", item["audio"]))
    return fields


def canonicalize(body: bytes, volatile: list[str]) -> Output:
    """Reduce a /v1/tasks/run reply body; malformed replies are `valid=False` with the reason."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return Output(False, problem="reply is not JSON")
    except RecursionError:
        return Output(False, problem="reply JSON is nested too deeply")
    if not isinstance(data, dict):
        return Output(False, problem=f"reply is a JSON {type(data).__name__}, not an object")
    if "error" in data:
        return Output(False, problem="reply carries an error object")
    audio: dict[str, dict[str, Any]] = {}
    for name, value in _audio_fields(data):
        samples, rate, problem = decode_wav_b64(value)
        if samples is None:
            return Output(False, problem=f"{name}: {problem}")
        audio[name] = {
            "sha256": hashlib.sha256(samples.tobytes()).hexdigest(),
            "frames": int(samples.shape[0]),
            "channels": int(samples.shape[1]),
            "sample_rate": rate,
        }
    try:
        meaningful = remove_volatile(data, volatile)
        if not meaningful:
            return Output(False, problem="reply has no output fields")
        canon = hashlib.sha256(
            json.dumps(meaningful, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
    except RecursionError:
        return Output(False, problem="reply JSON is nested too deeply")
    text = data.get("text") if isinstance(data.get("text"), str) else None
    return Output(True, canon=canon, audio=audio, text=text)


def same(a: str, b: str) -> bool:
    return bool(a) and a == b


def first_difference(a_body: bytes, b_body: bytes, volatile: list[str]) -> dict[str, Any]:
    """Where two outputs differ: audio field, first differing frame, max abs sample diff."""
    try:
        a = remove_volatile(json.loads(a_body), volatile)
        b = remove_volatile(json.loads(b_body), volatile)
    except (ValueError, UnicodeDecodeError):
        return {"where": "unparsable"}
    for (name, av), (_, bv) in zip(_audio_fields(a), _audio_fields(b), strict=False):
        sa, _, _ = decode_wav_b64(av)
        sb, _, _ = decode_wav_b64(bv)
        if sa is None or sb is None:
            continue
        if sa.shape != sb.shape:
            return {"where": name, "frames": [int(sa.shape[0]), int(sb.shape[0])]}
        diff = np.nonzero((sa != sb).any(axis=1))[0]
        if diff.size:
            delta = np.abs(sa.astype(np.int32) - sb.astype(np.int32))
            return {"where": name, "first_frame": int(diff[0]), "frames_differing": int(diff.size),
                    "max_abs_diff": int(delta.max())}
    keys = sorted(set(a) | set(b))
    changed = [k for k in keys if k not in ("audio", "named_audio_outputs") and a.get(k) != b.get(k)]
    return {"where": "fields", "fields": changed}


def max_abs_sample_diff(a_body: bytes, b_body: bytes) -> int | None:
    """Largest PCM difference across audio fields; None if shapes or fields differ."""
    try:
        a, b = json.loads(a_body), json.loads(b_body)
    except (ValueError, UnicodeDecodeError):
        return None
    fa, fb = _audio_fields(a), _audio_fields(b)
    if len(fa) != len(fb) or not fa:
        return None
    worst = 0
    for (_, av), (_, bv) in zip(fa, fb, strict=True):
        sa, _, _ = decode_wav_b64(av)
        sb, _, _ = decode_wav_b64(bv)
        if sa is None or sb is None or sa.shape != sb.shape:
            return None
        worst = max(worst, int(np.abs(sa.astype(np.int32) - sb.astype(np.int32)).max(initial=0)))
    return worst


def plant_mismatch(body: bytes) -> bytes:
    """The negative control: the same reply with one audio byte (or one text char) changed."""
    data = json.loads(body)
    fields = _audio_fields(data)
    if fields and isinstance(data.get("audio"), str):
        raw = bytearray(base64.b64decode(data["audio"]))
        idx = min(len(raw) - 1, 44 + (len(raw) - 44) // 2)
        raw[idx] ^= 0x01
        data["audio"] = base64.b64encode(bytes(raw)).decode()
    elif isinstance(data.get("text"), str) and data["text"]:
        t = data["text"]
        data["text"] = t[:-1] + ("x" if t[-1] != "x" else "y")
    else:
        data["__planted__"] = True
    return json.dumps(data).encode()
