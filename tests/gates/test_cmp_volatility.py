"""Q2: an excluded path must be measured to vary across identical serial baseline requests
(every leaf of an excluded object); a stable leaf fails Q2 by name, missing evidence keeps
it PENDING."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parval.gates.quality import q2_volatile_fields
from parval.gates.volatility import leaves_at, volatility
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
    ctx = ev.context()
    ctx.plan["compare"].update(vol(*paths))
    return q2_volatile_fields(ctx, [])


def test_leaves_walk_objects_and_lists() -> None:
    data = {"timing": {"wall_ms": 1, "rtf": 0.1}, "words": [{"w": "a", "t": [0, 1]}], "e": {}}
    assert leaves_at(data, "timing") == {"timing.wall_ms": "1", "timing.rtf": "0.1"}
    assert leaves_at(data, "words") == {"words[0].w": '"a"', "words[0].t[0]": "0", "words[0].t[1]": "1"}
    assert leaves_at(data, "e") == {"e": "{}"}
    assert leaves_at(data, "nope") is None
    assert leaves_at({"n": [{"timing": 1}, {"timing": 2}]}, "n.timing") == {"n[0].timing": "1", "n[1].timing": "2"}


def test_volatility_statuses() -> None:
    varies = {"g": [{"t": {"a": 1}}, {"t": {"a": 2}}]}
    assert volatility(varies, "t")["status"] == "varies"
    part = {"g": [{"t": {"a": 1, "b": 5}}, {"t": {"a": 2, "b": 5}}]}
    got = volatility(part, "t")
    assert got["status"] == "stable" and got["stable"] == ["t.b"] and got["varying"] == ["t.a"]
    assert volatility({"g": [{"t": 1}]}, "t")["status"] == "unmeasured"
    assert volatility({"g": [{"x": 1}, {"x": 1}]}, "t")["status"] == "absent"
    # Present in one repeat, missing in the other: that is variation.
    assert volatility({"g": [{"t": 1}, {"x": 1}]}, "t")["status"] == "varies"


def test_excluding_a_stable_field_fails_q2_naming_it(tmp_path: Path) -> None:
    # `words` is identical on every repeat: excluding it hides meaningful output.
    ev = repeats(tmp_path, WALLS, words=[{"word": "hello", "start": 0.0, "end": 0.4}])
    r = q2(ev, "timing.wall_ms", "words")
    assert r.status is Status.FAIL
    assert "words" in r.reason and "words[0].word" in r.reason and "timing.wall_ms" not in r.reason.split("(")[0]


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
