"""The comparator: exact canonical hashes, named volatile fields only, and a negative
control that proves it can fail."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import soundfile as sf

from parval.outputs.compare import canonicalize, first_difference, remove_volatile
from parval.outputs.planted import plant_mismatch


def wav_b64(samples: np.ndarray) -> str:
    buf = io.BytesIO()
    sf.write(buf, samples.astype(np.int16), 16000, format="WAV", subtype="PCM_16")
    return base64.b64encode(buf.getvalue()).decode()


def reply(samples: np.ndarray, wall_ms: float = 1.0, **extra: object) -> bytes:
    return json.dumps(
        {"audio": wav_b64(samples), "sample_rate": 16000, "channels": 1, **extra, "timing": {"wall_ms": wall_ms}}
    ).encode()


SAMPLES = (np.sin(np.arange(1600) / 7) * 3000).astype(np.int16)


def test_timing_is_the_only_default_volatile_field() -> None:
    a = canonicalize(reply(SAMPLES, 1.0), ["timing"])
    b = canonicalize(reply(SAMPLES, 99.0), ["timing"])
    assert a.valid and a.canon == b.canon
    c = canonicalize(reply(SAMPLES, 1.0, meta={"k": "v"}), ["timing"])
    assert c.canon != a.canon  # metadata is meaningful


def test_one_sample_off_by_one_is_a_mismatch() -> None:
    other = SAMPLES.copy()
    other[800] += 1
    a, b = reply(SAMPLES), reply(other)
    assert canonicalize(a, ["timing"]).canon != canonicalize(b, ["timing"]).canon
    diff = first_difference(a, b, ["timing"])
    assert diff["first_frame"] == 800 and diff["max_abs_diff"] == 1


def test_negative_control_is_caught() -> None:
    body = reply(SAMPLES)
    assert canonicalize(plant_mismatch(body), ["timing"]).canon != canonicalize(body, ["timing"]).canon
    text = json.dumps({"text": "hello", "timing": {}}).encode()
    assert canonicalize(plant_mismatch(text), ["timing"]).canon != canonicalize(text, ["timing"]).canon


def test_malformed_replies_are_never_valid() -> None:
    assert not canonicalize(b"not json", ["timing"]).valid
    assert not canonicalize(b"[1,2]", ["timing"]).valid
    assert not canonicalize(json.dumps({"audio": "!!!notbase64"}).encode(), ["timing"]).valid
    assert not canonicalize(json.dumps({"audio": base64.b64encode(b"RIFFjunk").decode()}).encode(), ["timing"]).valid
    assert not canonicalize(json.dumps({"timing": {"wall_ms": 1}}).encode(), ["timing"]).valid
    assert not canonicalize(json.dumps({"error": {"message": "x"}}).encode(), ["timing"]).valid


def test_remove_volatile_nested_lists() -> None:
    # only the top-level timing report's scalars are excluded: a field inside an array is
    # that item's output, compared whatever the plan names
    data = {"named_audio_outputs": [{"id": "a", "timing": 1}, {"id": "b", "timing": 2}], "timing": 3}
    assert remove_volatile(data, ["timing", "named_audio_outputs.timing"]) == {
        "named_audio_outputs": [{"id": "a", "timing": 1}, {"id": "b", "timing": 2}]
    }
