"""The negative control's planted change, exactly: one byte, character, boundary or sample
of a reply's real content, nothing else (parval/outputs/planted.py)."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from parval.outputs.compare import decode_pcm
from parval.outputs.planted import plant_beyond, plant_mismatch


def wav(values: list[float], subtype: str = "PCM_16", rate: int = 1000) -> str:
    buf = io.BytesIO()
    dtype = "float32" if subtype == "FLOAT" else "int32" if subtype == "PCM_32" else "int16"
    sf.write(buf, np.array(values, dtype=dtype), rate, format="WAV", subtype=subtype)
    return base64.b64encode(buf.getvalue()).decode()


def planted(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(plant_mismatch(json.dumps(data).encode()))
    return out


def differing_bytes(a: str, b: str) -> list[tuple[int, int, int]]:
    ra, rb = base64.b64decode(a), base64.b64decode(b)
    assert len(ra) == len(rb)
    return [(i, x, y) for i, (x, y) in enumerate(zip(ra, rb, strict=True)) if x != y]


def test_audio_gets_one_pcm_byte_flipped_mid_signal() -> None:
    audio = wav([0] * 20)
    raw = base64.b64decode(audio)
    mid = 44 + (len(raw) - 44) // 2
    got = planted({"audio": audio, "text": "keep"})
    assert differing_bytes(audio, got["audio"]) == [(mid, raw[mid], raw[mid] ^ 0x01)]
    assert got["text"] == "keep"
    named = planted({"named_audio_outputs": [{"id": "a", "audio": ""}, {"id": "b", "audio": audio}, "x"]})
    assert named["named_audio_outputs"][0] == {"id": "a", "audio": ""}
    assert differing_bytes(audio, named["named_audio_outputs"][1]["audio"]) == [(mid, raw[mid], raw[mid] ^ 0x01)]
    # a body shorter than a header: the last byte
    tiny = base64.b64encode(b"\x00" * 10).decode()
    assert differing_bytes(tiny, planted({"audio": tiny})["audio"]) == [(9, 0, 1)]


def test_a_row_boundary_moves_by_one_sample() -> None:
    rows = [
        "not a row",
        {"end_sample": True, "label": "bool is not a boundary"},
        {"start_sample": 3, "end_sample": 9},
        {"end_sample": 20},
    ]
    got = planted({"segments": rows, "text": "keep"})
    assert got["segments"] == [
        "not a row",
        {"end_sample": True, "label": "bool is not a boundary"},
        {"start_sample": 3, "end_sample": 10},
        {"end_sample": 20},
    ]
    assert got["text"] == "keep"
    got = planted({"speaker_turns": [{"start": 0.5, "end": 1.25}]})
    assert got["speaker_turns"] == [{"start": 0.5, "end": pytest.approx(1.251, abs=1e-9)}]
    assert got["speaker_turns"][0]["end"] != 1.25 and got["speaker_turns"][0]["end"] < 1.2511
    got = planted({"words": [{"text": "a", "start": 2}]})
    assert got["words"] == [{"text": "a", "start": 3}]


def test_text_gets_its_last_character_changed() -> None:
    assert planted({"text": "hello"})["text"] == "hellx"
    assert planted({"text": "box"})["text"] == "boy"
    assert planted({"text": "x"})["text"] == "y"
    assert planted({"text": "", "segments": []}) == {
        "text": "",
        "segments": [{"start_sample": 0, "end_sample": 1, "confidence": 0.5}],
    }


def test_an_artifact_payload_gets_one_byte_flipped() -> None:
    payload = base64.b64encode(bytes(range(9))).decode()
    got = planted({"artifacts": [{"payload": ""}, 7, {"payload": payload, "name": "f"}]})
    assert got["artifacts"][0] == {"payload": ""} and got["artifacts"][1] == 7
    assert differing_bytes(payload, got["artifacts"][2]["payload"]) == [(4, 4, 5)]


def test_a_reply_without_known_content_is_marked() -> None:
    assert planted({"other": 1}) == {"other": 1, "__planted__": True}
    assert planted({"audio": "", "named_audio_outputs": "no", "artifacts": "no"})["__planted__"] is True


def samples(value: str) -> tuple[np.ndarray[Any, Any], str]:
    pcm, problem = decode_pcm(value)
    assert pcm is not None, problem
    return pcm.samples[:, 0], pcm.subtype


@pytest.mark.parametrize(
    ("subtype", "values", "lsb"),
    [
        ("PCM_16", [5, 5, 5, 5, 5, 5], 1),
        ("PCM_16", [-5, -5, -5, -5, -5, -5], 1),
        ("PCM_16", [0, 0, 0, 0, 0, 0], 1),
        ("PCM_32", [5 << 16] * 6, 1 << 16),
        ("FLOAT", [0.25] * 6, 1 / 32768),
    ],
)
def test_beyond_the_tolerance_one_sample_moves_by_one_lsb_more_at_the_files_format(
    subtype: str, values: list[float], lsb: float
) -> None:
    audio = wav(values, subtype)
    for tolerance in (0, 3):
        got = json.loads(plant_beyond(json.dumps({"audio": audio}).encode(), tolerance) or b"null")
        before, _ = samples(audio)
        after, kept = samples(got["audio"])
        assert kept == subtype
        moved = np.flatnonzero(after != before)
        assert moved.tolist() == [3]  # the middle frame, nothing else
        delta = float(after[3]) - float(before[3])
        # away from full scale: down from a positive sample, up from zero or a negative one
        expected = -(tolerance + 1) * lsb if before[3] > 0 else (tolerance + 1) * lsb
        assert delta == pytest.approx(expected, rel=1e-6)


def test_beyond_the_tolerance_in_named_outputs_and_without_audio() -> None:
    audio = wav([7, 7, 7, 7])
    body = {"named_audio_outputs": [{"id": "a", "audio": ""}, {"id": "b", "audio": audio}]}
    got = json.loads(plant_beyond(json.dumps(body).encode(), 1) or b"null")
    assert got["named_audio_outputs"][0] == {"id": "a", "audio": ""}
    after, _ = samples(got["named_audio_outputs"][1]["audio"])
    assert after.tolist() == [7, 7, 5, 7]
    bad = base64.b64encode(b"not a wav at all").decode()
    assert plant_beyond(json.dumps({"audio": bad}).encode(), 0) is None
    assert plant_beyond(json.dumps({"named_audio_outputs": [{"audio": bad}]}).encode(), 0) is None
    # no audio: the ordinary planted change
    assert json.loads(plant_beyond(json.dumps({"text": "ab"}).encode(), 5) or b"null") == {"text": "ax"}
    empty = wav([])
    assert plant_beyond(json.dumps({"audio": empty}).encode(), 0) is None
