"""A declared tolerance covers PCM sample values only: every other field, the set of audio
outputs (named ones paired by id) and each output's frames, channels and rate stay exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from parval.gates.compare import first_difference, max_abs_sample_diff, within_tolerance
from parval.gates.context import exact_result
from parval.status import Status
from tests.gates.cmp_events import SAMPLES, VOLATILE, Events, tts_reply, wav_b64

TOL = {"max_abs_sample_diff": 2, "justification": "fp16 kernels differ by one LSB"}


def nudged(by: int = 1) -> np.ndarray[Any, Any]:
    other = SAMPLES.copy()
    other[800] += by
    return other


def named(*items: tuple[str, np.ndarray[Any, Any]]) -> dict[str, Any]:
    return {
        "named_audio_outputs": [{"id": i, "audio": wav_b64(s), "sample_rate": 16000} for i, s in items],
        "timing": {"wall_ms": 1.0},
    }


def b(data: dict[str, Any]) -> bytes:
    return json.dumps(data).encode()


def test_pcm_within_the_tolerance_is_covered_and_beyond_it_is_not() -> None:
    ok, found = within_tolerance(b(tts_reply()), b(tts_reply(nudged(2))), VOLATILE, 2)
    assert ok and found["max_abs_sample_diff"] == 2
    ok, found = within_tolerance(b(tts_reply()), b(tts_reply(nudged(3))), VOLATILE, 2)
    assert not ok and found["max_abs_sample_diff"] == 3


def test_a_different_transcript_is_not_covered() -> None:
    ok, found = within_tolerance(b(tts_reply(text="hello")), b(tts_reply(nudged(), text="hullo")), VOLATILE, 2)
    assert not ok and "non-audio" in found["why"] and found["fields"] == ["text"]


def test_a_different_artifact_payload_is_not_covered() -> None:
    a = tts_reply(artifacts=[{"name": "tokens", "payload": "AAAA"}])
    c = tts_reply(artifacts=[{"name": "tokens", "payload": "AAAB"}])
    assert not within_tolerance(b(a), b(c), VOLATILE, 2)[0]


def test_a_different_sample_rate_is_not_covered() -> None:
    # Same samples, WAV header at another rate (the JSON field kept equal): still not covered.
    a = tts_reply()
    c = {**tts_reply(), "audio": wav_b64(SAMPLES, 22050)}
    ok, found = within_tolerance(b(a), b(c), VOLATILE, 2)
    assert not ok and found["sample_rate"] == [16000, 22050]
    # And a different frame count.
    assert not within_tolerance(b(a), b(tts_reply(SAMPLES[:-1])), VOLATILE, 2)[0]


def test_named_outputs_are_paired_by_id_not_position() -> None:
    voc, acc = SAMPLES, (SAMPLES // 2).astype(np.int16)
    # Reordered named outputs, one nudged within tolerance: paired by id, covered.
    assert within_tolerance(
        b(named(("vocals", voc), ("accomp", acc))), b(named(("accomp", acc), ("vocals", nudged()))), VOLATILE, 2
    )[0]
    # Different ids with the same audio: a mismatch (position pairing called this tolerated).
    ok, found = within_tolerance(
        b(named(("vocals", voc), ("accomp", acc))), b(named(("vocals", voc), ("drums", acc))), VOLATILE, 2
    )
    assert not ok and found["only_in_a"] == ["named_audio_outputs[accomp]"]
    assert (
        max_abs_sample_diff(b(named(("vocals", voc), ("accomp", acc))), b(named(("vocals", voc), ("drums", acc))))
        is None
    )
    diff = first_difference(b(named(("a", voc), ("b", acc))), b(named(("b", acc), ("a", nudged()))), VOLATILE)
    assert diff["where"] == "named_audio_outputs[a]" and diff["first_frame"] == 800


def test_tolerance_through_the_gate(tmp_path: Path) -> None:
    """Judged from recorded events: a reply whose transcript differs is a mismatch even with
    a tolerance; a reply whose only difference is PCM within it is tolerated."""
    ev = Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(text="hello"), tts_reply(text="hello")]})
    a = ev.start("count2-s1")
    bad = ev.request("count2-s1", a, "cold_wave", tts_reply(nudged(), text="HELLO"))
    fine = ev.request("count2-s1", a, "cold_wave", tts_reply(nudged(2), text="hello"), wave=1)
    ev.end("count2-s1", a)
    ctx = ev.context(tolerance=TOL)
    r = exact_result("M2.exact", ctx.judge([bad, fine]), "count 2", ctx)
    assert r.status is Status.FAIL, r.reason
    assert r.evidence["mismatch_count"] == 1 and r.evidence["within_declared_tolerance"] == 1
    assert "non-audio" in r.evidence["mismatches"][0]["tolerance_check"]
    assert r.evidence["failure_kind"] == "output"
    ok = exact_result("M2.exact", ctx.judge([fine]), "count 2", ctx)
    assert ok.status is Status.PASS and "1 within the declared tolerance" in ok.reason
    # Without a declared tolerance the PCM difference is a mismatch.
    assert exact_result("M2.exact", ev.context().judge([fine]), "count 2", ctx).status is Status.FAIL
