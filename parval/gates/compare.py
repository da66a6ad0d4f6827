"""Exact comparison of server outputs.

A reply is reduced to a canonical form: the JSON with only the plan's named volatile
fields removed (never a whole metadata object), keys sorted; audio fields are decoded and
hashed separately so a report can name which stem differs. Two outputs are equal when the
canonical hashes are equal: byte-identical audio and exact text and metadata (Q2, Q3).
A declared tolerance (`within_tolerance`) covers PCM sample values only; whether an
excluded field is really volatile is measured (gates/volatility.py), not assumed.
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
        canon = hashlib.sha256(json.dumps(meaningful, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    except RecursionError:
        return Output(False, problem="reply JSON is nested too deeply")
    text = data.get("text") if isinstance(data.get("text"), str) else None
    return Output(True, canon=canon, audio=audio, text=text)


def same(a: str, b: str) -> bool:
    return bool(a) and a == b


def _paired_audio(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Audio fields keyed for pairing: `audio`, and each named output by its `id` (never by
    position). A named output without a unique string id cannot be paired: (.., problem)."""
    fields: dict[str, Any] = {}
    if "audio" in data:
        fields["audio"] = data["audio"]
    named = data.get("named_audio_outputs")
    if isinstance(named, list):
        for item in named:
            if not isinstance(item, dict) or "audio" not in item:
                continue
            ident = item.get("id")
            if not isinstance(ident, str):
                return fields, "a named audio output has no string id"
            key = f"named_audio_outputs[{ident}]"
            if key in fields:
                return fields, f"named audio output id {ident!r} appears twice"
            fields[key] = item["audio"]
    return fields, ""


def _without_audio(data: dict[str, Any]) -> str:
    """Everything but the PCM payloads, as canonical JSON; named outputs keyed by id so
    their order does not matter (they are paired by id)."""
    rest = {k: v for k, v in data.items() if k != "audio"}
    named = rest.get("named_audio_outputs")
    if isinstance(named, list) and all(isinstance(i, dict) and isinstance(i.get("id"), str) for i in named):
        rest["named_audio_outputs"] = {i["id"]: {k: v for k, v in i.items() if k != "audio"} for i in named}
    return json.dumps(rest, sort_keys=True, separators=(",", ":"))


def _load_pair(a_body: bytes, b_body: bytes, volatile: list[str]) -> tuple[Any, Any] | None:
    try:
        a = remove_volatile(json.loads(a_body), volatile)
        b = remove_volatile(json.loads(b_body), volatile)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return (a, b) if isinstance(a, dict) and isinstance(b, dict) else None


def _pcm_pairs(a: dict[str, Any], b: dict[str, Any]) -> tuple[list[tuple[str, Any, Any]], dict[str, Any]]:
    """Decoded sample arrays paired by field/id, or the first structural difference."""
    fa, pa = _paired_audio(a)
    fb, pb = _paired_audio(b)
    if pa or pb:
        return [], {"where": "named_audio_outputs", "problem": pa or pb}
    if set(fa) != set(fb):
        return [], {
            "where": "audio fields",
            "only_in_a": sorted(set(fa) - set(fb)),
            "only_in_b": sorted(set(fb) - set(fa)),
        }
    pairs = []
    for name in sorted(fa):
        sa, ra, _ = decode_wav_b64(fa[name])
        sb, rb, _ = decode_wav_b64(fb[name])
        if sa is None or sb is None:
            return [], {"where": name, "problem": "audio not decodable"}
        if sa.shape != sb.shape or ra != rb:
            return [], {
                "where": name,
                "frames": [int(sa.shape[0]), int(sb.shape[0])],
                "channels": [int(sa.shape[1]), int(sb.shape[1])],
                "sample_rate": [ra, rb],
            }
        pairs.append((name, sa, sb))
    return pairs, {}


def first_difference(a_body: bytes, b_body: bytes, volatile: list[str]) -> dict[str, Any]:
    """Where two outputs differ: audio field (paired by id), first differing frame, max abs
    sample diff; else which non-audio fields differ."""
    loaded = _load_pair(a_body, b_body, volatile)
    if loaded is None:
        return {"where": "unparsable"}
    a, b = loaded
    pairs, structural = _pcm_pairs(a, b)
    if structural:
        return structural
    for name, sa, sb in pairs:
        diff = np.nonzero((sa != sb).any(axis=1))[0]
        if diff.size:
            delta = np.abs(sa.astype(np.int32) - sb.astype(np.int32))
            return {
                "where": name,
                "first_frame": int(diff[0]),
                "frames_differing": int(diff.size),
                "max_abs_diff": int(delta.max()),
            }
    return {"where": "fields", "fields": _changed_fields(a, b)}


def _changed_fields(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    keys = sorted(set(a) | set(b))
    changed = [k for k in keys if k not in ("audio", "named_audio_outputs") and a.get(k) != b.get(k)]
    if _without_audio(a) != _without_audio(b) and not changed:
        changed = ["named_audio_outputs"]
    return changed


def within_tolerance(a_body: bytes, b_body: bytes, volatile: list[str], tolerance: int) -> tuple[bool, dict[str, Any]]:
    """Does a declared PCM tolerance cover the difference between two replies?

    A tolerance covers PCM sample values and nothing else: every non-audio field (after the
    named volatile fields are removed), the set of audio outputs (named ones paired by `id`)
    and each output's frames, channels and sample rate must be exactly equal; only then may
    samples differ by at most `tolerance`. Returns (covered, what was found)."""
    loaded = _load_pair(a_body, b_body, volatile)
    if loaded is None:
        return False, {"why": "a reply is not a JSON object"}
    a, b = loaded
    pairs, structural = _pcm_pairs(a, b)
    if structural:
        return False, {"why": "audio outputs differ in shape or identity", **structural}
    if _without_audio(a) != _without_audio(b):
        return False, {
            "why": "non-audio fields differ (a tolerance covers PCM samples only)",
            "where": "fields",
            "fields": _changed_fields(a, b),
        }
    if not pairs:
        return False, {"why": "no audio to apply a sample tolerance to"}
    worst = max(int(np.abs(sa.astype(np.int32) - sb.astype(np.int32)).max(initial=0)) for _, sa, sb in pairs)
    if worst > tolerance:
        return False, {
            "why": f"max abs sample difference {worst} exceeds the declared {tolerance}",
            "max_abs_sample_diff": worst,
        }
    return True, {"max_abs_sample_diff": worst}


def max_abs_sample_diff(a_body: bytes, b_body: bytes) -> int | None:
    """Largest PCM difference across audio fields paired by id; None if the audio fields,
    their ids or shapes differ."""
    loaded = _load_pair(a_body, b_body, [])
    if loaded is None:
        return None
    pairs, structural = _pcm_pairs(*loaded)
    if structural or not pairs:
        return None
    return max(int(np.abs(sa.astype(np.int32) - sb.astype(np.int32)).max(initial=0)) for _, sa, sb in pairs)


def _flip_wav_b64(value: str) -> str:
    raw = bytearray(base64.b64decode(value))
    idx = min(len(raw) - 1, 44 + (len(raw) - 44) // 2)  # one PCM byte mid-signal
    raw[idx] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


# Row fields that carry content, most telling first (one boundary moved by one sample).
_ROW_BOUNDARIES = ("end_sample", "start_sample", "end", "start")


def _move_one_boundary(rows: Any) -> bool:
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
