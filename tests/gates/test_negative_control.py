"""The negative control changes real content, so a caught control proves the comparator
sees content changes (not an added key)."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import numpy as np
import soundfile as sf

from parval.outputs.compare import canonicalize
from parval.outputs.planted import plant_mismatch

VOL = ["timing"]


def _canon(body: bytes) -> str | None:
    return canonicalize(body, VOL).canon


def _planted(reply: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
    body = json.dumps(reply).encode()
    planted = plant_mismatch(body)
    return body, json.loads(planted)


VAD = {
    "segments": [
        {"start_sample": 3200, "end_sample": 9600, "confidence": 0.91},
        {"start_sample": 12800, "end_sample": 16000, "confidence": 0.88},
    ],
    "timing": {"wall_ms": 12.5},
}


def test_vad_control_moves_one_segment_boundary() -> None:
    body, got = _planted(VAD)
    assert "__planted__" not in got
    assert set(got) == set(VAD)  # no key added anywhere
    moved = [(a, b) for a, b in zip(VAD["segments"], got["segments"], strict=True) if a != b]
    assert len(moved) == 1
    a, b = moved[0]
    assert set(a) == set(b) and sum(a[k] != b[k] for k in a) == 1
    assert b["end_sample"] == a["end_sample"] + 1
    assert _canon(json.dumps(got).encode()) != _canon(body)


def test_control_is_not_caught_when_the_content_is_excluded() -> None:
    # The comparator must see the planted change through the content itself: without the
    # segments, nothing else differs (an added marker key would still differ).
    body = json.dumps(VAD).encode()
    planted = json.loads(plant_mismatch(body))
    assert {k: v for k, v in planted.items() if k != "segments"} == {k: v for k, v in VAD.items() if k != "segments"}
    # ...and content is never excluded, whatever a plan names: the control is caught
    named = ["timing", "segments"]
    assert canonicalize(json.dumps(planted).encode(), named).canon != canonicalize(body, named).canon


def test_asr_words_control_moves_one_word_time() -> None:
    reply = {
        "text": "hello world",
        "language": "en",
        "words": [
            {"word": "hello", "start_sample": 0, "end_sample": 4000, "confidence": 0.9},
            {"word": "world", "start_sample": 4000, "end_sample": 8000, "confidence": 0.9},
        ],
        "timing": {"wall_ms": 3.0},
    }
    body, got = _planted(reply)
    assert got["text"] == reply["text"] and "__planted__" not in got
    assert got["words"][0]["end_sample"] == 4001 and got["words"][1] == reply["words"][1]
    assert _canon(json.dumps(got).encode()) != _canon(body)


def test_empty_vad_reply_gets_a_spurious_segment() -> None:
    reply = {"segments": [], "timing": {"wall_ms": 1.0}}
    body, got = _planted(reply)
    assert got["segments"] and "__planted__" not in got
    assert _canon(json.dumps(got).encode()) != _canon(body)


def _wav_b64(samples: np.ndarray) -> str:
    buf = io.BytesIO()
    sf.write(buf, samples, 16000, format="WAV", subtype="PCM_16")
    return base64.b64encode(buf.getvalue()).decode()


def test_named_audio_control_changes_samples() -> None:
    samples = (np.arange(800, dtype=np.int16) % 200 - 100).astype(np.int16)
    reply = {
        "named_audio_outputs": [{"id": "vocals", "audio": _wav_b64(samples), "sample_rate": 16000, "channels": 1}],
        "timing": {"wall_ms": 1.0},
    }
    body, got = _planted(reply)
    assert "__planted__" not in got
    assert _canon(json.dumps(got).encode()) != _canon(body)


def test_artifact_payload_control_changes_one_byte() -> None:
    payload = base64.b64encode(bytes(range(32))).decode()
    reply = {
        "artifacts": [{"id": "e", "kind": "speaker_embedding", "payload": payload, "meta": {}}],
        "timing": {"wall_ms": 1.0},
    }
    body, got = _planted(reply)
    raw_a, raw_b = base64.b64decode(payload), base64.b64decode(got["artifacts"][0]["payload"])
    assert sum(x != y for x, y in zip(raw_a, raw_b, strict=True)) == 1
    assert _canon(json.dumps(got).encode()) != _canon(body)
