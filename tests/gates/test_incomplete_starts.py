"""Starts that did not run to their end: a reference start whose server crashed fails what
it was collecting (never "3/3 exact" on the requests before the crash); a start parval
stopped is BLOCKED, and never counts as complete (so it cannot turn BLOCKED into FAIL)."""

from __future__ import annotations

from pathlib import Path

from parval.gates.m1_baseline import judge_m1
from parval.gates.m2_concurrency import judge_m2
from parval.gates.m3_mixed_waves import judge_m3, variation_effects
from parval.status import Status
from tests.gates.m_events import Events, baseline_refs, full_start, plan, tts_body


def test_a_reference_start_that_crashed_mid_collection_fails_its_parity(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    baseline_refs(ev)
    ev.start("ref-candidate-cap1", role="reference", count=1)
    ev.request("ref-candidate-cap1", "ref_cold", 0, "base", tts_body(1), ref="base|cold")
    ev.request("ref-candidate-cap1", "ref_warm", 0, "base", tts_body(1), ref="base|warm")
    ev.append(
        "server_crash",
        run="ref-candidate-cap1",
        attempt=0,
        where="ref_warm2",
        exit_code=-6,
        signal="SIGABRT",
        log_tail="fatal",
    )
    ev.end("ref-candidate-cap1")
    ctx = ev.context(plan())
    r = {x.id: x for x in judge_m1(ctx, ctx.serial)}["M1.cap1_parity"]
    assert r.status is Status.FAIL and "crashed during ref_warm2" in r.reason, r.reason
    assert "exact" not in r.reason


def test_a_reference_start_missing_an_output_is_not_a_pass(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    baseline_refs(ev)
    ev.start("ref-candidate-legacy", role="reference", count=1)
    ev.request("ref-candidate-legacy", "ref_cold", 0, "base", tts_body(1), ref="base|cold")
    ev.end("ref-candidate-legacy")
    ctx = ev.context(plan())
    r = {x.id: x for x in judge_m1(ctx, ctx.serial)}["M1.legacy_parity"]
    assert r.status is Status.PENDING and "base/ref_warm" in r.reason, r.reason


def test_an_aborted_start_is_blocked_never_a_failed_schedule(tmp_path: Path) -> None:
    """A start parval stopped (it stopped answering) records its end too; it used to count
    as complete, so its missing waves FAILed M3.ten_waves, M2.warm_waves, M2.unload_reload."""
    ev = Events(tmp_path)
    baseline_refs(ev)
    p = {**plan(), "waves": {"warm": 1, "mixed": 10, "mixed_at_largest": 10, "serial_reuse": 1}}
    full_start(ev, "count2-s1", 2, p)
    full_start(ev, "count2-s2", 2, p)
    ev.start("count2-s3", count=2)
    ev.request("count2-s3", "cold_wave", 0, "base", tts_body(1), ref="base|cold")
    ev.request("count2-s3", "cold_wave", 0, "base", tts_body(1), ref="base|cold")
    ev.wave("count2-s3", "cold_wave", 0, 2, mode="together")
    ev.end("count2-s3")
    ev.append("start_aborted", unit="count2-s3", reason="count2-s3: server stopped answering during warm_wave wave 1")
    ctx = ev.context(p)
    res = {r.id: r for r in [*judge_m2(ctx, 2), *judge_m3(ctx, 2, variation_effects(ctx))]}
    assert res["M2.starts"].status is Status.BLOCKED
    for aid in ("M3.ten_waves", "M2.warm_waves", "M2.unload_reload", "M2.cold_wave"):
        assert res[aid].status is Status.BLOCKED, (aid, res[aid].status, res[aid].reason)
        assert "count2-s3 stopped" in res[aid].reason
