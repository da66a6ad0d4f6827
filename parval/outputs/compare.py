"""Exact comparison of server outputs.

A reply is reduced to a canonical form: the JSON with only the plan's named volatile
fields removed (never a whole metadata object), keys sorted; audio fields are decoded and
hashed separately so a report can name which stem differs. Two outputs are equal when the
canonical hashes are equal: byte-identical audio and exact text and metadata (Q2, Q3).
A declared tolerance (`within_tolerance`) covers PCM sample values only, compared at each
file's own sample format (a PCM_32 or float difference below 16 bits is a difference);
whether an excluded field is really volatile is measured (outputs/volatility.py), not assumed.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt
import soundfile as sf

from parval.outputs.canonical_hash import canonical_sha256
from parval.outputs.volatility import content_path, excludable
from parval.outputs.wav import read_plain_pcm

T = TypeVar("T")


@dataclass(frozen=True)
class Output:
    valid: bool
    canon: str = ""
    problem: str = ""
    audio: dict[str, dict[str, object]] = field(default_factory=dict)
    text: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"valid": self.valid, "canon": self.canon}
        if self.problem:
            out["problem"] = self.problem
        if self.audio:
            out["audio"] = self.audio
        if self.text is not None:
            out["text"] = self.text[:200]
        return out


def remove_volatile(data: T, paths: list[str]) -> T:
    """`data` without the named volatile fields, as far as they are volatile scalars
    (outputs/volatility.py `excludable`): a declared path that names output content (outside
    the timing report, through an array, a string, an array...) is left in and compared."""
    out = copy.deepcopy(data)
    for path in paths:
        if not content_path(path):
            _remove(out, path, path.split("."))
    return out


def _remove(node: object, path: str, parts: list[str]) -> None:
    # objects only: a field reached through an array is that item's output, never excluded
    if not isinstance(node, dict) or parts[0] not in node:
        return
    if len(parts) == 1:
        if excludable(path, node[parts[0]]):
            del node[parts[0]]
    else:
        _remove(node[parts[0]], path, parts[1:])


# How a sample format is read without losing precision, and how many 16-bit LSB one unit
# of it is (a tolerance is declared in 16-bit LSB, whatever the file's format).
_NATIVE: dict[str, tuple[str, float]] = {
    "PCM_S8": ("int16", 1.0),
    "PCM_U8": ("int16", 1.0),
    "PCM_16": ("int16", 1.0),
    "PCM_24": ("int32", 2.0**-16),
    "PCM_32": ("int32", 2.0**-16),
    "FLOAT": ("float32", 32768.0),
    "DOUBLE": ("float64", 32768.0),
}


@dataclass(frozen=True)
class Pcm:
    """Decoded audio at its own precision: `samples` (frames x channels), `subtype` (the
    file's sample format), `lsb16`: the size of one unit of `samples` in 16-bit LSB."""

    samples: npt.NDArray[np.generic]
    rate: int
    subtype: str
    lsb16: float


def _b64_bytes(value: object) -> tuple[bytes | None, str]:
    if not isinstance(value, str) or not value:
        return None, "not a non-empty base64 string"
    raw_text = value.split(",", 1)[1] if value.startswith("data:") else value
    try:
        return base64.b64decode(raw_text, validate=True), ""
    except (binascii.Error, ValueError):
        return None, "invalid base64"


def decode_pcm(value: object) -> tuple[Pcm | None, str]:
    """(audio at the file's own sample format, problem). Accepts a data: URI prefix."""
    raw, problem = _b64_bytes(value)
    if raw is None:
        return None, problem
    plain = read_plain_pcm(raw)  # the common case without libsndfile: the same samples
    if plain is not None:
        return Pcm(plain.samples, plain.rate, plain.subtype, _NATIVE[plain.subtype][1]), ""
    try:
        with sf.SoundFile(io.BytesIO(raw)) as wav:  # one open for the format and the samples
            dtype, lsb16 = _NATIVE.get(wav.subtype, ("float64", 32768.0))
            data = wav.read(dtype=dtype, always_2d=True)
            subtype, rate = wav.subtype, wav.samplerate
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        return None, f"not a decodable WAV ({str(exc)[:80]})"
    return Pcm(data, int(rate), str(subtype), lsb16), ""


def decode_wav_b64(value: object) -> tuple[npt.NDArray[np.generic] | None, int, str]:
    """(samples at the file's own sample format, sample rate, problem): int16 for 8/16-bit
    PCM, int32 for 24/32-bit PCM, float for float files (never rounded to 16 bits)."""
    pcm, problem = decode_pcm(value)
    if pcm is None:
        return None, 0, problem
    return pcm.samples, pcm.rate, ""


def _audio_fields(data: Mapping[str, object]) -> list[tuple[str, object]]:
    fields: list[tuple[str, object]] = []
    if "audio" in data:
        fields.append(("audio", data["audio"]))
    named = data.get("named_audio_outputs")
    if isinstance(named, list):
        for i, item in enumerate(named):
            if isinstance(item, dict) and "audio" in item:
                fields.append((f"named_audio_outputs[{item.get('id', i)}]", item["audio"]))
    return fields


# The replies of a wave carry the same audio: its summary is kept for a few recent audio
# strings (a pure function of the string; strings above the size cap are not kept).
_SUMMARIES_KEPT = 8
_SUMMARY_MAX_CHARS = 2 << 20


class _Undecodable(Exception):
    """Not cached: a failure is decoded again (and described) each time, as before."""


def _audio_summary(value: object) -> tuple[dict[str, object] | None, str]:
    """(what the canonical form records of one audio field, problem)."""
    try:
        if isinstance(value, str) and len(value) <= _SUMMARY_MAX_CHARS:
            return dict(_summary_of_string(value)), ""
        return dict(_summary(value)), ""
    except _Undecodable as exc:
        return None, str(exc)


@functools.lru_cache(maxsize=_SUMMARIES_KEPT)
def _summary_of_string(value: str) -> tuple[tuple[str, object], ...]:
    return _summary(value)


def _summary(value: object) -> tuple[tuple[str, object], ...]:
    pcm, problem = decode_pcm(value)
    if pcm is None:
        raise _Undecodable(problem)
    return (
        ("sha256", hashlib.sha256(pcm.samples.tobytes()).hexdigest()),
        ("frames", int(pcm.samples.shape[0])),
        ("channels", int(pcm.samples.shape[1])),
        ("sample_rate", pcm.rate),
        ("subtype", pcm.subtype),
    )


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
    audio: dict[str, dict[str, object]] = {}
    for name, value in _audio_fields(data):
        summary, problem = _audio_summary(value)
        if summary is None:
            return Output(False, problem=f"{name}: {problem}")
        audio[name] = summary
    try:
        meaningful = remove_volatile(data, volatile)
        if not meaningful:
            return Output(False, problem="reply has no output fields")
        canon = canonical_sha256(meaningful)  # sha256 of its sort_keys, compact json.dumps
    except RecursionError:
        return Output(False, problem="reply JSON is nested too deeply")
    text = data.get("text") if isinstance(data.get("text"), str) else None
    return Output(True, canon=canon, audio=audio, text=text)


def same(a: str, b: str) -> bool:
    return bool(a) and a == b


def _paired_audio(data: Mapping[str, object]) -> tuple[dict[str, object], str]:
    """Audio fields keyed for pairing: `audio`, and each named output by its `id` (never by
    position). A named output without a unique string id cannot be paired: (.., problem)."""
    fields: dict[str, object] = {}
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


def _without_audio(data: Mapping[str, object]) -> str:
    """Everything but the PCM payloads, as canonical JSON; named outputs keyed by id so
    their order does not matter (they are paired by id)."""
    rest = {k: v for k, v in data.items() if k != "audio"}
    named = rest.get("named_audio_outputs")
    if isinstance(named, list) and all(isinstance(i, dict) and isinstance(i.get("id"), str) for i in named):
        rest["named_audio_outputs"] = {i["id"]: {k: v for k, v in i.items() if k != "audio"} for i in named}
    return json.dumps(rest, sort_keys=True, separators=(",", ":"))


def _load_pair(a_body: bytes, b_body: bytes, volatile: list[str]) -> tuple[dict[str, object], dict[str, object]] | None:
    try:
        a = remove_volatile(json.loads(a_body), volatile)
        b = remove_volatile(json.loads(b_body), volatile)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return (a, b) if isinstance(a, dict) and isinstance(b, dict) else None


def _pcm_pairs(
    a: Mapping[str, object], b: Mapping[str, object]
) -> tuple[list[tuple[str, Pcm, Pcm]], dict[str, object]]:
    """Decoded audio paired by field/id, or the first structural difference (frames,
    channels, sample rate or sample format)."""
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
        pa_, _ = decode_pcm(fa[name])
        pb_, _ = decode_pcm(fb[name])
        if pa_ is None or pb_ is None:
            return [], {"where": name, "problem": "audio not decodable"}
        if pa_.samples.shape != pb_.samples.shape or pa_.rate != pb_.rate or pa_.subtype != pb_.subtype:
            return [], {
                "where": name,
                "frames": [int(pa_.samples.shape[0]), int(pb_.samples.shape[0])],
                "channels": [int(pa_.samples.shape[1]), int(pb_.samples.shape[1])],
                "sample_rate": [pa_.rate, pb_.rate],
                "subtype": [pa_.subtype, pb_.subtype],
            }
        pairs.append((name, pa_, pb_))
    return pairs, {}


def lsb16_diff(a: Pcm, b: Pcm) -> float:
    """Largest sample difference between two paired outputs, in 16-bit LSB, measured at
    their own precision (so 0 only when the samples are identical)."""
    if a.samples.dtype.kind == "f":
        delta = np.abs(a.samples.astype(np.float64) - b.samples.astype(np.float64))
    else:
        delta = np.abs(a.samples.astype(np.int64) - b.samples.astype(np.int64)).astype(np.float64)
    worst = float(delta.max(initial=0.0)) * a.lsb16
    return int(worst) if worst.is_integer() else worst


def first_difference(a_body: bytes, b_body: bytes, volatile: list[str]) -> dict[str, object]:
    """Where two outputs differ: audio field (paired by id), first differing frame, max abs
    sample diff; else which non-audio fields differ."""
    loaded = _load_pair(a_body, b_body, volatile)
    if loaded is None:
        return {"where": "unparsable"}
    a, b = loaded
    pairs, structural = _pcm_pairs(a, b)
    if structural:
        return structural
    for name, pa_, pb_ in pairs:
        diff = np.nonzero((pa_.samples != pb_.samples).any(axis=1))[0]
        if diff.size:
            return {
                "where": name,
                "first_frame": int(diff[0]),
                "frames_differing": int(diff.size),
                "max_abs_diff": lsb16_diff(pa_, pb_),
            }
    return {"where": "fields", "fields": _changed_fields(a, b)}


def _changed_fields(a: Mapping[str, object], b: Mapping[str, object]) -> list[str]:
    keys = sorted(set(a) | set(b))
    changed = [k for k in keys if k not in ("audio", "named_audio_outputs") and a.get(k) != b.get(k)]
    if _without_audio(a) != _without_audio(b) and not changed:
        changed = ["named_audio_outputs"]
    return changed


def within_tolerance(
    a_body: bytes, b_body: bytes, volatile: list[str], tolerance: int
) -> tuple[bool, dict[str, object]]:
    """Does a declared PCM tolerance cover the difference between two replies?

    A tolerance covers PCM sample values and nothing else: every non-audio field (after the
    named volatile fields are removed), the set of audio outputs (named ones paired by `id`)
    and each output's frames, channels, sample rate and sample format must be exactly equal;
    only then may samples differ by at most `tolerance` 16-bit LSB, measured at the files'
    own precision. Returns (covered, what was found)."""
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
    worst = max(lsb16_diff(pa_, pb_) for _, pa_, pb_ in pairs)
    if worst > tolerance:
        return False, {
            "why": f"max abs sample difference {worst} exceeds the declared {tolerance}",
            "max_abs_sample_diff": worst,
        }
    return True, {"max_abs_sample_diff": worst}


def max_abs_sample_diff(a_body: bytes, b_body: bytes) -> float | None:
    """Largest PCM difference (16-bit LSB) across audio fields paired by id; None if the
    audio fields, their ids, shapes or formats differ."""
    loaded = _load_pair(a_body, b_body, [])
    if loaded is None:
        return None
    pairs, structural = _pcm_pairs(*loaded)
    if structural or not pairs:
        return None
    return max(lsb16_diff(pa_, pb_) for _, pa_, pb_ in pairs)


# Batch results carry `timing: null` by contract (aggregate timing is in the done event),
# so a batch result is compared with its reference without `timing`.
BATCH_EXCLUDED = ("timing",)


def batch_result_canon(result: object, volatile: list[str]) -> str | None:
    """How the campaign canonicalises (and M6 reads) one batch result (None when it is not a valid one)."""
    out = canonicalize(json.dumps(result).encode(), [*volatile, *BATCH_EXCLUDED])
    return out.canon if out.valid else None
