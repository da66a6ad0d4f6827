"""M2's concurrency, drain and unload evidence: a FAIL needs an observed violation (enough
successful samples inside the window in which all N requests were in flight), and a
violation in an attempt parval set aside fails M2 and Q5 like one in the standing attempt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parval.gates.m2_concurrency import judge_m2
from parval.gates.quality import q5_intermittent
from parval.procedure.assertion_ids import MODEL_GATE, group_of
from parval.status import Result, Status
from tests.gates.m_events import Events, baseline_refs, counters_status, full_start, in_flight, plan, set_aside_attempt

RUNS = ("count2-s1", "count2-s2", "count2-s3")


def starts(tmp_path: Path, *, aside: dict[str, Any] | None = None, **kw: Any) -> tuple[dict[str, Result], Any]:
    ev = Events(tmp_path)
    baseline_refs(ev)
    p = plan()
    if aside is not None:
        set_aside_attempt(ev, "count2-s1", 2, p, **aside)  # interrupted, redone on resume
    for run in RUNS:
        full_start(ev, run, 2, p, **kw)
    ctx = ev.context(p)
    return {r.id: r for r in judge_m2(ctx, 2)}, ctx


def test_a_short_overlap_with_many_polls_in_the_wave_is_not_a_violation(tmp_path: Path) -> None:
    """20 samples in the wave but a 1.5 ms overlap (none inside it): PENDING, never FAIL."""
    status = {**counters_status(2, polls=20), "max_active": 1, "max_active_loaded": 1}
    flight = {"ms": 1.5, "polls": 0, "max_active": None, "max_active_loaded": None}
    res, _ = starts(tmp_path, status=status, flight=flight)
    assert res["M2.observed_active"].status is Status.PENDING, res["M2.observed_active"].reason


def test_failed_polls_never_count_as_samples(tmp_path: Path) -> None:
    """12 polls of which 11 errored: one successful sample inside the window."""
    status = {**counters_status(2, polls=12), "poll_errors": 11, "max_active": 1, "max_active_loaded": 1}
    res, _ = starts(tmp_path, status=status, flight=in_flight(2, polls=1, max_active=1))
    assert res["M2.observed_active"].status is Status.PENDING


def test_enough_samples_inside_the_window_all_below_n_is_a_violation(tmp_path: Path) -> None:
    status = {**counters_status(2), "max_active": 1, "max_active_loaded": 1}
    res, _ = starts(tmp_path, status=status, flight=in_flight(2, polls=8, max_active=1))
    assert res["M2.observed_active"].status is Status.FAIL


def test_lifecycle_violations_in_a_set_aside_attempt_fail_m2_and_q5(tmp_path: Path) -> None:
    held = {"ok": False, "active": 1, "queued": 0, "fields_present": True}
    res, ctx = starts(tmp_path, aside={"drained": held})
    assert res["M2.drained"].status is Status.FAIL and "set aside" in res["M2.drained"].reason
    assert q5_intermittent(ctx, list(res.values()), 2).status is Status.FAIL
    serial = {**counters_status(2), "max_active": 1, "max_active_loaded": 1}
    res, ctx = starts(tmp_path / "a", aside={"status": serial, "flight": in_flight(2, polls=9, max_active=1)})
    assert res["M2.observed_active"].status is Status.FAIL
    stuck = {
        "reply": {"status": 200},
        "loaded_false": False,
        "still_loaded": True,
        "polls_after": 9,
        "loaded_field": True,
    }
    res, ctx = starts(tmp_path / "b", aside={"unload": stuck})
    assert res["M2.unload_reload"].status is Status.FAIL and "set aside" in res["M2.unload_reload"].reason
    assert q5_intermittent(ctx, list(res.values()), 2).status is Status.FAIL


def test_a_clean_count_passes_with_the_evidence_it_rests_on(tmp_path: Path) -> None:
    res, _ = starts(tmp_path)
    assert sorted(res) == sorted(i for i in MODEL_GATE if group_of(i) == "M2")  # every M2 assertion judged
    for r in res.values():
        assert r.status is Status.PASS, (r.id, r.reason)
        assert r.evidence["rests_on"], r.id
