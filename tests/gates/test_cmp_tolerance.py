"""A declared tolerance covers PCM sample values only: every other field, the set of audio
outputs (named ones paired by id) and each output's frames, channels and rate stay exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from parval.gates.judge_context import exact_result
from parval.outputs.compare import first_difference, max_abs_sample_diff, within_tolerance
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


def varying_baseline(ev: Events, text: str = "hello") -> None:
    """Serial repeats that differ by one LSB (within TOL): the tolerance applies."""
    ev.baseline(
        {
            "ref_cold": [tts_reply(text=text), tts_reply(nudged(1), text=text)],
            "ref_warm": [tts_reply(text=text), tts_reply(text=text)],
            "ref_warm2": [tts_reply(text=text), tts_reply(text=text)],
        }
    )


def steady_baseline(ev: Events, text: str = "hello") -> None:
    """Byte-identical serial repeats: deterministic output."""
    ev.baseline({p: [tts_reply(text=text), tts_reply(text=text)] for p in ("ref_cold", "ref_warm", "ref_warm2")})


def test_tolerance_through_the_gate(tmp_path: Path) -> None:
    """Judged from recorded events: a reply whose transcript differs is a mismatch even with
    a tolerance; a reply whose only difference is PCM within it is tolerated, and said to
    be (never "exact")."""
    ev = Events(tmp_path)
    varying_baseline(ev)
    a = ev.start("count2-s1")
    bad = ev.request("count2-s1", a, "cold_wave", tts_reply(nudged(), text="HELLO"))
    fine = ev.request("count2-s1", a, "cold_wave", tts_reply(nudged(2), text="hello"), wave=1)
    ev.end("count2-s1", a)
    ctx = ev.context(tolerance=TOL)
    assert ctx.tolerance == 2
    r = exact_result("M2.exact", ctx.judge([bad, fine]), "count 2", ctx)
    assert r.status is Status.FAIL, r.reason
    assert r.evidence["mismatch_count"] == 1 and r.evidence["within_declared_tolerance"] == 1
    assert "non-audio" in r.evidence["mismatches"][0]["tolerance_check"]
    assert r.evidence["failure_kind"] == "output"
    ok = exact_result("M2.exact", ctx.judge([fine]), "count 2", ctx)
    assert ok.status is Status.PASS and "1 within the declared tolerance" in ok.reason
    assert "0 of 1 exact" in ok.reason and "1/1 exact" not in ok.reason
    # Without a declared tolerance the PCM difference is a mismatch.
    assert exact_result("M2.exact", ev.context().judge([fine]), "count 2", ctx).status is Status.FAIL


def test_a_tolerance_never_applies_where_serial_repeats_were_byte_identical(tmp_path: Path) -> None:
    """Deterministic output must be byte-identical: with identical serial repeats, a PCM
    difference inside the declared tolerance is a mismatch, and the reason says why."""
    ev = Events(tmp_path)
    steady_baseline(ev)
    a = ev.start("count2-s1")
    fine = ev.request("count2-s1", a, "cold_wave", tts_reply(nudged(2), text="hello"))
    ev.end("count2-s1", a)
    ctx = ev.context(tolerance=TOL)
    assert ctx.serial.status is Status.PASS and ctx.tolerance is None
    assert "not applied" in ctx.serial.reason
    r = exact_result("M2.exact", ctx.judge([fine]), "count 2", ctx)
    assert r.status is Status.FAIL and "byte-identical" in r.reason, r.reason
    assert r.evidence["within_declared_tolerance"] == 0


def test_within_declared_tolerance_against_an_unmeasured_baseline_is_pending(tmp_path: Path) -> None:
    """Serial variation not measured (one baseline start): whether the tolerance is needed is
    unknown, so a difference within it is neither tolerated nor a FAIL."""
    ev = Events(tmp_path)
    a0 = ev.start("ref-baseline-a", role="reference", count=1, exe_role="baseline")
    for phase in ("ref_cold", "ref_warm", "ref_warm2"):
        ev.request(
            "ref-baseline-a",
            a0,
            phase,
            tts_reply(text="hello"),
            ref="base|cold" if phase == "ref_cold" else "base|warm",
        )
    ev.end("ref-baseline-a", a0)
    a = ev.start("count2-s1")
    fine = ev.request("count2-s1", a, "cold_wave", tts_reply(nudged(2), text="hello"))
    beyond = ev.request("count2-s1", a, "cold_wave", tts_reply(nudged(9), text="hello"), wave=1)
    ev.end("count2-s1", a)
    ctx = ev.context(tolerance=TOL)
    assert ctx.serial.measured is False and ctx.tolerance is None
    r = exact_result("M2.exact", ctx.judge([fine]), "count 2", ctx)
    assert r.status is Status.PENDING and "serial variation was not measured" in r.reason
    assert exact_result("M2.exact", ctx.judge([fine, beyond]), "count 2", ctx).status is Status.FAIL


def pcm32(samples: np.ndarray[Any, Any], subtype: str = "PCM_32") -> str:
    import base64
    import io

    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, samples, 16000, format="WAV", subtype=subtype)
    return base64.b64encode(buf.getvalue()).decode()


def test_outputs_are_compared_at_their_own_sample_format() -> None:
    """A PCM_32 or float difference below 16 bits is a difference: at tolerance 0 it is not
    covered, and its size is stated in 16-bit LSB."""
    base = (SAMPLES.astype(np.int32) << 16).reshape(-1, 1)
    low = base.copy()
    low[800] += 3  # 3 / 65536 of one 16-bit LSB
    a = {"audio": pcm32(base), "timing": {"wall_ms": 1.0}}
    c = {"audio": pcm32(low), "timing": {"wall_ms": 2.0}}
    ok, found = within_tolerance(b(a), b(c), VOLATILE, 0)
    assert not ok and 0 < found["max_abs_sample_diff"] < 1
    assert within_tolerance(b(a), b(c), VOLATILE, 1)[0]
    fa = (SAMPLES / 32768.0).astype(np.float32).reshape(-1, 1)
    fb = fa.copy()
    fb[800] += np.float32(1e-7)
    ok, _ = within_tolerance(b({"audio": pcm32(fa, "FLOAT")}), b({"audio": pcm32(fb, "FLOAT")}), [], 0)
    assert not ok
    # A different sample format is a structural difference, never covered.
    ok, found = within_tolerance(b({"audio": pcm32(base)}), b({"audio": wav_b64(SAMPLES)}), [], 100)
    assert not ok and found["subtype"] == ["PCM_32", "PCM_16"]
