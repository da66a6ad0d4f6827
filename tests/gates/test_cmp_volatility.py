"""Q2: an excluded path must be measured to vary across identical serial baseline requests
(every leaf of an excluded object); a stable leaf fails Q2 by name, missing evidence keeps
it PENDING."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from parval.gates.judge_context import exact_result
from parval.gates.quality import q2_volatile_fields
from parval.outputs.compare import canonicalize, remove_volatile
from parval.outputs.volatility import content_path, leaves_at, volatility
from parval.status import Status
from tests.gates.cmp_events import Events, tts_reply


def vol(*paths: str) -> dict[str, Any]:
    return {"volatile_fields": [{"path": p, "justification": "said to vary"} for p in paths]}


def repeats(tmp_path: Path, walls: list[float], **extra: Any) -> Events:
    """Baseline a/b, cold + warm + warm2 of one request; wall_ms differs per reply as given."""
    ev = Events(tmp_path)
    it = iter(walls)
    ev.baseline(
        {
            phase: [tts_reply(wall_ms=next(it), **extra), tts_reply(wall_ms=next(it), **extra)]
            for phase in ("ref_cold", "ref_warm", "ref_warm2")
        }
    )
    return ev


WALLS = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]


def q2(ev: Events, *paths: str) -> Any:
    return q2_volatile_fields(ev.context(**vol(*paths)), [])


def test_leaves_walk_objects_and_lists() -> None:
    data = {"timing": {"wall_ms": 1, "rtf": 0.1}, "words": [{"w": "a", "t": [0, 1]}], "e": {}}
    assert leaves_at(data, "timing") == {"timing.wall_ms": "1", "timing.rtf": "0.1"}
    assert leaves_at(data, "words") == {"words[0].w": '"a"', "words[0].t[0]": "0", "words[0].t[1]": "1"}
    assert leaves_at(data, "e") == {"e": "{}"}
    assert leaves_at(data, "nope") is None
    assert leaves_at({"n": [{"timing": 1}, {"timing": 2}]}, "n.timing") == {"n[0].timing": "1", "n[1].timing": "2"}


def test_volatility_statuses() -> None:
    varies = {"g": [{"timing": {"a": 1}}, {"timing": {"a": 2}}]}
    assert volatility(varies, "timing")["status"] == "varies"
    part = {"g": [{"timing": {"a": 1, "b": 5}}, {"timing": {"a": 2, "b": 5}}]}
    got = volatility(part, "timing")
    assert got["status"] == "stable" and got["stable"] == ["timing.b"] and got["varying"] == ["timing.a"]
    assert volatility({"g": [{"timing": 1}]}, "timing")["status"] == "unmeasured"
    assert volatility({"g": [{"x": 1}, {"x": 1}]}, "timing")["status"] == "absent"
    # Present in one repeat, missing in the other: that is variation.
    assert volatility({"g": [{"timing": 1}, {"x": 1}]}, "timing")["status"] == "varies"
    # Anything outside the timing report is output content, whatever it does.
    assert volatility({"g": [{"t": 1}, {"t": 2}]}, "t")["status"] == "content"


def test_excluding_a_stable_field_fails_q2_naming_it(tmp_path: Path) -> None:
    # `words` is output content: excluding it hides meaningful output.
    ev = repeats(tmp_path, WALLS, words=[{"word": "hello", "start": 0.0, "end": 0.4}])
    r = q2(ev, "timing.wall_ms", "words")
    assert r.status is Status.FAIL
    assert "['words'] name output content" in r.reason and "timing.wall_ms" not in r.reason
    # a stable timing leaf fails by name
    r = q2(repeats(tmp_path / "t", WALLS), "timing.wall_ms", "timing.audio_duration_ms")
    assert r.status is Status.FAIL and "timing.audio_duration_ms (stable" in r.reason


def test_excluding_an_object_with_one_stable_leaf_fails_q2(tmp_path: Path) -> None:
    # timing.audio_duration_ms is the same on every repeat: excluding all of `timing` fails.
    ev = repeats(tmp_path, WALLS)
    r = q2(ev, "timing")
    assert r.status is Status.FAIL and "timing.audio_duration_ms" in r.reason
    assert "timing.wall_ms" not in r.reason


def test_only_varying_leaves_excluded_passes_q2(tmp_path: Path) -> None:
    r = q2(repeats(tmp_path, WALLS), "timing.wall_ms")
    assert r.status is Status.PASS, r.reason
    assert r.evidence["volatile_fields"][0]["varying"] == ["timing.wall_ms"]


def test_a_field_identical_across_all_repeats_is_stable_even_if_called_wall_time(tmp_path: Path) -> None:
    r = q2(repeats(tmp_path, [5.0] * 6), "timing.wall_ms")
    assert r.status is Status.FAIL and "timing.wall_ms" in r.reason


def test_a_path_no_baseline_reply_carries_is_unmeasured_not_a_pass(tmp_path: Path) -> None:
    # timing.rtf that no baseline reply carries: its volatility is unmeasured, and the
    # exclusion would hide the field were only the candidate to send it.
    r = q2(repeats(tmp_path / "a", WALLS), "timing.wall_ms", "timing.rtf")
    assert r.status is Status.PENDING and "timing.rtf (never present in a baseline reply" in r.reason
    assert "excluding nothing" not in r.reason
    # ...but a stable leaf next to it still fails.
    r = q2(repeats(tmp_path / "s", [5.0] * 6), "timing.wall_ms", "timing.rtf")
    assert r.status is Status.FAIL


def test_missing_evidence_is_pending(tmp_path: Path) -> None:
    # Fewer than two identical requests: one baseline start with cold only.
    ev = Events(tmp_path / "b")
    a = ev.start("ref-baseline-a", role="reference", count=1, exe_role="baseline")
    ev.request("ref-baseline-a", a, "ref_cold", tts_reply(wall_ms=3.0))
    ev.end("ref-baseline-a", a)
    r = q2(ev, "timing.wall_ms")
    assert r.status is Status.PENDING and "fewer than two" in r.reason
    # No run directory: the raw replies cannot be read.
    ctx = repeats(tmp_path / "c", WALLS).context()
    ctx.run_dir = None
    assert q2_volatile_fields(ctx, []).status is Status.PENDING


def test_whole_meaningful_objects_still_fail_q2(tmp_path: Path) -> None:
    r = q2(repeats(tmp_path, WALLS), "text")
    assert r.status is Status.FAIL and "remove meaningful output" in r.reason


# -- only volatile scalars of the timing report may be excluded (issue 33, item 4) ---------


def varying_content(tmp_path: Path, field: str, values: list[Any]) -> Events:
    """Baseline a/b whose `field` differs on every reply (as wall_ms does)."""
    ev = Events(tmp_path)
    it = iter(zip(WALLS, values, strict=True))

    def reply() -> dict[str, Any]:
        wall, value = next(it)
        return tts_reply(wall_ms=wall, **{field: value})

    ev.baseline({phase: [reply(), reply()] for phase in ("ref_cold", "ref_warm", "ref_warm2")})
    return ev


def artifacts(i: int) -> list[dict[str, Any]]:
    return [{"id": "emb", "kind": "speaker_embedding", "payload": f"AAAA{i}", "meta": {"dim": "4"}}]


CONTENT_CASES: list[tuple[str, str, list[Any]]] = [
    ("artifacts.payload", "artifacts", [artifacts(i) for i in range(6)]),
    ("artifacts", "artifacts", [artifacts(i) for i in range(6)]),
    ("words", "words", [[{"word": "hi", "start_sample": i, "end_sample": 9}] for i in range(6)]),
    ("words.start_sample", "words", [[{"word": "hi", "start_sample": i, "end_sample": 9}] for i in range(6)]),
    ("speaker_turns", "speaker_turns", [[{"start_sample": 0, "end_sample": i, "speaker_id": 1}] for i in range(6)]),
    ("language", "language", ["en", "de", "fr", "es", "it", "nl"]),
    ("custom_schema_output.data", "custom_schema_output", [{"schema": "s", "data": {"n": i}} for i in range(6)]),
    ("segments", "segments", [[{"start_sample": i, "end_sample": 9, "confidence": 0.5}] for i in range(6)]),
]


@pytest.mark.parametrize(("path", "field", "values"), CONTENT_CASES, ids=[c[0] for c in CONTENT_CASES])
def test_excluding_varying_content_never_passes_q2(tmp_path: Path, path: str, field: str, values: list[Any]) -> None:
    # The baseline's content varies across identical serial requests: it is parity
    # unverified, never a volatile field Q2 admits as excluded.
    r = q2(varying_content(tmp_path, field, values), "timing.wall_ms", path)
    assert r.status is Status.FAIL, r.reason
    assert path in r.reason and "output content" in r.reason


def test_a_scalar_inside_timing_reached_through_objects_only_is_excludable() -> None:
    assert not content_path("timing.wall_ms") and not content_path("timing")
    for path in ("artifacts.payload", "words", "language", "text", "meta.timing", "named_audio_outputs.timing"):
        assert content_path(path), path
    # a timing field holding a string or an array is content too (measured in the replies)
    assert (
        volatility({"g": [{"timing": {"wall_ms": "a"}}, {"timing": {"wall_ms": "b"}}]}, "timing.wall_ms")["status"]
        == "content"
    )
    assert (
        volatility({"g": [{"timing": {"wall_ms": 1}}, {"timing": {"wall_ms": 2}}]}, "timing.wall_ms")["status"]
        == "varies"
    )


def test_content_named_as_volatile_is_still_compared() -> None:
    a = json.dumps({"text": "a", "artifacts": artifacts(1), "language": "en", "timing": {"wall_ms": 1}}).encode()
    b = json.dumps({"text": "a", "artifacts": artifacts(2), "language": "de", "timing": {"wall_ms": 2}}).encode()
    vol = ["timing.wall_ms", "artifacts.payload", "artifacts", "language"]
    assert canonicalize(a, vol).canon != canonicalize(b, vol).canon
    # only the varying timing scalar differs: equal
    c = json.dumps({"text": "a", "artifacts": artifacts(1), "language": "en", "timing": {"wall_ms": 9}}).encode()
    assert canonicalize(a, vol).canon == canonicalize(c, vol).canon
    assert remove_volatile({"timing": None, "text": "x"}, ["timing"]) == {"text": "x"}
    assert remove_volatile({"timing": {"note": "slow"}}, ["timing"]) == {"timing": {"note": "slow"}}


def test_comparisons_under_a_plan_excluding_content_are_parity_unverified(tmp_path: Path) -> None:
    ev = repeats(tmp_path, WALLS)
    ctx = ev.context(**vol("timing.wall_ms", "artifacts.payload"))
    tally = ctx.judge(ctx.rec.requests("ref-baseline-b", ("ref_cold",)))
    assert tally.exact == 1
    r = exact_result("M2.exact", tally, "outputs", ctx)
    assert r.status is Status.PENDING and "parity unverified" in r.reason and "artifacts.payload" in r.reason
    # the same outputs under a plan excluding only the timing scalar PASS
    ok = exact_result("M2.exact", tally, "outputs", ev.context())
    assert ok.status is Status.PASS, ok.reason
