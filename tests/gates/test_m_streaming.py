"""M6.streaming needs concurrent streams (count >= 2, overlap observed by the server), one
stream actually cut by its client, the others exact, the lease released. M6.offline needs
offline comparisons made in this run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parval.gates.m6_modes import judge_m6
from parval.status import Result, Status
from tests.gates.m_events import Events, baseline_refs, full_start, plan, tts_body


def _pcm_sha(body: dict[str, Any]) -> str:
    import json

    from parval.outputs.compare import canonicalize

    return str(canonicalize(json.dumps(body).encode(), ["timing"]).audio["audio"]["sha256"])


# The PCM of the upstream reference the streams are compared with (warm: every slot warmed).
REF = _pcm_sha(tts_body(1))


def stream(
    wave: str,
    i: int,
    *,
    sha: str = REF,
    done: bool = True,
    disconnected: bool = False,
    cut: bool | None = None,
    t_send: float = 0.0,
    t_done: float = 1.0,
) -> dict[str, Any]:
    s: dict[str, Any] = {
        "wave": wave,
        "index": i,
        "ref": "base|warm",
        "status": 200,
        "outcome": "ok",
        "pcm_sha256": sha,
        "bytes": 640,
        "done": done,
        "disconnected": disconnected,
        "t_send": t_send,
        "t_done": t_done,
    }
    if cut is not None:
        s["cut"] = cut
    return s


def streaming_event(
    n: int = 2,
    *,
    streams: list[dict[str, Any]] | None = None,
    max_active: int | None = 2,
    counters: bool = True,
    drained: dict[str, Any] | None = None,
) -> dict[str, Any]:
    if streams is None:
        streams = [stream("concurrent", i, t_send=0.01 * i) for i in range(n)]
        streams += [stream("disconnect", 0, sha="x" * 64, done=False, disconnected=True, cut=True)]
        streams += [stream("disconnect", i) for i in range(1, n)]
    return {
        "run": "modes",
        "attempt": 0,
        "count": n,
        "reference_pcm_sha256": REF,
        "reference_problem": "",
        "streams": streams,
        "max_active": max_active,
        "counters_present": counters,
        "polls": 30,
        "drained": drained or {"ok": True, "active": 0, "queued": 0, "fields_present": True},
    }


def m6(
    tmp_path: Path, event: dict[str, Any] | None, *, offline: bool = True, start_count: bool = True
) -> dict[str, Any]:
    ev = Events(tmp_path)
    ev.start("ref-baseline-a", role="reference")
    ev.request("ref-baseline-a", "ref_cold", 0, "base", tts_body(1))
    ev.request("ref-baseline-a", "ref_warm", 0, "base", tts_body(1))
    ev.end("ref-baseline-a")
    p = plan(counts=[1], admit_modes=["offline", "streaming"])
    if offline:
        ev.events = []
        baseline_refs(ev)
        for run in ("count1-s1", "count1-s2", "count1-s3"):
            full_start(ev, run, 1, p)
    if event is not None:
        ev.start("modes", role="modes", count=event["count"] if start_count else None)
        for _ in range(event["count"]):  # the warm-up wave: every slot serves once
            ev.request("modes", "modes_warmup", 0, "base", tts_body(1), ref="base|cold")
        ev.append("m6_streaming", **event)
        ev.end("modes")
    ctx = ev.context(p)
    return {r.id: r for r in judge_m6(ctx)}


def test_concurrent_streams_with_a_cut_pass(tmp_path: Path) -> None:
    r = m6(tmp_path, streaming_event())["M6.streaming"]
    assert r.status is Status.PASS, r.reason


def test_a_modes_start_without_its_slot_count_is_pending(tmp_path: Path) -> None:
    """The warm-up wave is whole only against the start's slot count: without it, no PASS."""
    r = m6(tmp_path, streaming_event(), start_count=False)["M6.streaming"]
    assert r.status is Status.PENDING and "slot count was not recorded" in r.reason, r.reason


def test_one_stream_without_disconnect_is_pending(tmp_path: Path) -> None:
    # Count one: a single stream, nothing cut (today's probe at n=1).
    e = streaming_event(1, streams=[stream("concurrent", 0), stream("disconnect", 0)], max_active=1)
    r = m6(tmp_path, e)["M6.streaming"]
    assert r.status is Status.PENDING and "count 2 or more" in r.reason


def test_disconnect_not_recorded_as_cut_is_pending(tmp_path: Path) -> None:
    e = streaming_event()
    for s in e["streams"]:
        s.pop("cut", None)  # evidence from a probe that never recorded the cut
    r = m6(tmp_path, e)["M6.streaming"]
    assert r.status is Status.PENDING and "cut" in r.reason
    e = streaming_event()
    e["streams"][2].update(cut=False, done=True, pcm_sha256=REF)
    r = m6(tmp_path, e)["M6.streaming"]
    assert r.status is Status.PENDING and "whole stream" in r.reason


def test_inexact_surviving_stream_fails(tmp_path: Path) -> None:
    e = streaming_event()
    e["streams"][3]["pcm_sha256"] = "y" * 64
    r = m6(tmp_path, e)["M6.streaming"]
    assert r.status is Status.FAIL and "differ from their reference" in r.reason


def test_streams_are_compared_with_the_reference_of_their_own_history(tmp_path: Path) -> None:
    """A model whose warm output differs from its cold one: warm streams equal to the warm
    upstream reference pass (they were compared with a cold candidate output before)."""
    ev = Events(tmp_path)
    ev.start("ref-baseline-a", role="reference")
    ev.request("ref-baseline-a", "ref_cold", 0, "base", tts_body(7))
    ev.request("ref-baseline-a", "ref_warm", 0, "base", tts_body(1))
    ev.end("ref-baseline-a")
    ev.start("modes", role="modes", count=2)
    for _ in range(2):
        ev.request("modes", "modes_warmup", 0, "base", tts_body(7), ref="base|cold")
    ev.append("m6_streaming", **streaming_event())
    ev.end("modes")
    ctx = ev.context(plan(counts=[1], admit_modes=["offline", "streaming"]))
    r = {x.id: x for x in judge_m6(ctx)}["M6.streaming"]
    assert r.status is Status.PASS, r.reason
    e = streaming_event()
    for st in e["streams"]:
        st["ref"] = "base|cold"
    ev.events[-2] = {"kind": "m6_streaming", **e}
    r = {x.id: x for x in judge_m6(ev.context(plan(counts=[1], admit_modes=["offline", "streaming"])))}
    assert r["M6.streaming"].status is Status.FAIL


def test_overlap_must_be_shown_by_the_server(tmp_path: Path) -> None:
    r = m6(tmp_path, streaming_event(max_active=1))["M6.streaming"]
    assert r.status is Status.FAIL and "never showed 2 active slots" in r.reason
    e = streaming_event(
        max_active=None, counters=False, drained={"ok": False, "active": None, "queued": None, "fields_present": False}
    )
    r = m6(tmp_path, e)["M6.streaming"]
    assert r.status is Status.PENDING and "publishes no slot counters" in r.reason
    assert "lease left held" not in r.reason


def test_lease_held_after_streams_fails(tmp_path: Path) -> None:
    e = streaming_event(drained={"ok": False, "active": 1, "queued": 0, "fields_present": True})
    r = m6(tmp_path, e)["M6.streaming"]
    assert r.status is Status.FAIL and "lease left held" in r.reason


def test_offline_needs_offline_comparisons(tmp_path: Path) -> None:
    assert m6(tmp_path / "a", None, offline=False)["M6.offline"].status is Status.PENDING
    r = m6(tmp_path / "b", None)["M6.offline"]
    assert r.status is Status.PASS and r.evidence["compared"] > 1


def test_streams_answered_with_errors_fail_naming_the_status(tmp_path: Path) -> None:
    e = streaming_event()
    for s in e["streams"]:
        s.update(status=500, outcome="http_error", done=False, pcm_sha256="e" * 64, cut=False)
    r = m6(tmp_path, e)["M6.streaming"]
    assert r.status is Status.FAIL and "answered 500" in r.reason


def test_a_mismatch_at_a_higher_count_leaves_offline_mode_shown_at_the_lowest(tmp_path: Path) -> None:
    """Offline mode rests on the lowest count's exact outputs: a count-2 violation fails
    count 2 (its M2.exact), not offline mode at count 1; a count-1 violation leaves M6.offline
    unshown (and nothing is admitted)."""
    from parval.gates.m2_concurrency import m2_exact

    def judged(bad: int, where: Path) -> tuple[Result, dict[int, Status]]:
        ev = Events(where)
        p = plan(counts=[1, 2])
        baseline_refs(ev)
        for n in (1, 2):
            for i in (1, 2, 3):
                full_start(ev, f"count{n}-s{i}", n, p, body=tts_body(2) if n == bad else None)
        ctx = ev.context(p)
        return {r.id: r for r in judge_m6(ctx)}["M6.offline"], {n: m2_exact(ctx, n).status for n in (1, 2)}

    offline, exact = judged(2, tmp_path / "high")
    assert exact == {1: Status.PASS, 2: Status.FAIL}
    assert offline.status is Status.PASS and offline.evidence["shown_at_count"] == 1, offline.reason
    offline, exact = judged(1, tmp_path / "low")
    assert exact[1] is Status.FAIL
    assert offline.status is Status.PENDING and "M2.exact at count 1: FAIL" in offline.reason
