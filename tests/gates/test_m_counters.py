"""M2 on a server without slot counters (the legacy runtime): the verdict is FAIL, and the
reason says what was observed (no counters), never that counters were non-zero."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parval.gates.m2_concurrency import judge_m2
from parval.status import Status
from tests.gates.m_events import (
    COUNTERLESS_DRAIN,
    UNLOADED,
    Events,
    baseline_refs,
    counterless_status,
    counters_status,
    full_start,
    in_flight,
    plan,
)

RUNS = ("count2-s1", "count2-s2", "count2-s3")


def count_starts(
    tmp_path: Path,
    *,
    status: dict[str, Any],
    drained: dict[str, Any] | None = None,
    unload: dict[str, Any] | None = None,
    overlap: bool = True,
    later_unload: dict[str, Any] | None = None,
    flight: dict[str, Any] | None = None,
) -> dict[str, Any]:
    ev = Events(tmp_path)
    baseline_refs(ev)
    p = plan()
    for run in RUNS:
        full_start(
            ev, run, 2, p, status=status, drained=drained, overlap=overlap, unload=unload, flight=flight, end=False
        )
        if later_unload is not None:
            ev.append("probe", run=run, attempt=0, name="unload", cycle=9, **later_unload)
        ev.end(run)
    ctx = ev.context(p)
    return {r.id: r for r in judge_m2(ctx, 2)}


def test_counterless_server_reasons_say_no_counters(tmp_path: Path) -> None:
    res = count_starts(
        tmp_path,
        status=counterless_status(2),
        drained=COUNTERLESS_DRAIN,
        unload={
            "reply": {"status": 404, "outcome": "http_error", "error": "not found"},
            "listed": False,
            "loaded_false": False,
        },
    )
    active, drained, unload = res["M2.observed_active"], res["M2.drained"], res["M2.unload_reload"]
    # Missing counters and a missing route are missing preconditions: UNSUPPORTED, never FAIL.
    assert active.status is Status.UNSUPPORTED and "publishes no slot counters" in active.reason
    assert drained.status is Status.UNSUPPORTED and "publishes no slot counters" in drained.reason
    assert "non-zero" not in drained.reason and "non-zero" not in active.reason
    assert unload.status is Status.UNSUPPORTED
    assert "has no /v1/tasks/unload_models route (answered 404" in unload.reason and "3 start(s)" in unload.reason
    assert "cleanly" not in unload.reason


def test_counterless_server_that_does_not_overlap_is_unsupported_on_counters(tmp_path: Path) -> None:
    res = count_starts(tmp_path, status=counterless_status(2), drained=COUNTERLESS_DRAIN, overlap=False)
    assert res["M2.observed_active"].status is Status.UNSUPPORTED
    assert "publishes no slot counters" in res["M2.observed_active"].reason


def test_unload_without_loaded_false_says_so(tmp_path: Path) -> None:
    res = count_starts(
        tmp_path,
        status=counterless_status(2),
        drained=COUNTERLESS_DRAIN,
        unload={**UNLOADED, "loaded_false": False, "loaded_field": False},
    )
    reason = res["M2.unload_reload"].reason
    # An unpublished `loaded` shows nothing either way: the unload is not shown, not failed.
    assert res["M2.unload_reload"].status is Status.PENDING
    assert "never showed the model loaded:false" in reason and "may publish no `loaded`" in reason


def test_counters_left_non_zero_are_reported_with_their_values(tmp_path: Path) -> None:
    res = count_starts(
        tmp_path, status=counters_status(2), drained={"ok": False, "active": 1, "queued": 0, "fields_present": True}
    )
    d = res["M2.drained"]
    assert d.status is Status.FAIL and "left counters non-zero" in d.reason and "active_slots 1" in d.reason
    assert "publishes no slot counters" not in d.reason


def test_clean_server_with_counters_passes(tmp_path: Path) -> None:
    res = count_starts(tmp_path, status=counters_status(2))
    for aid in ("M2.observed_active", "M2.drained", "M2.unload_reload", "M2.exact"):
        assert res[aid].status is Status.PASS, (aid, res[aid].reason)


def test_counters_present_but_never_n_while_client_overlapped_fails(tmp_path: Path) -> None:
    status = {**counters_status(2), "max_active": 1, "max_active_loaded": 1}
    res = count_starts(tmp_path, status=status, flight=in_flight(2, max_active=1))
    a = res["M2.observed_active"]
    assert a.status is Status.FAIL and "never showed active_slots == 2" in a.reason
    assert "publishes no slot counters" not in a.reason
    res = count_starts(tmp_path, status=status, overlap=False, flight=in_flight(2, max_active=1))
    assert res["M2.observed_active"].status is Status.PENDING


def test_a_later_unload_cycle_that_did_not_unload_fails(tmp_path: Path) -> None:
    """Each start runs several unload/reload cycles; the second one failing is not hidden
    by the first one succeeding."""
    res = count_starts(
        tmp_path,
        status=counters_status(2),
        later_unload={**UNLOADED, "loaded_false": False, "still_loaded": True, "polls_after": 9},
    )
    r = res["M2.unload_reload"]
    assert r.status is Status.FAIL and "loaded in all 9 status samples" in r.reason
    assert all(s["cycle"] == 9 for s in r.evidence["violation"])


def test_an_unload_without_enough_samples_after_it_is_pending_not_fail(tmp_path: Path) -> None:
    res = count_starts(
        tmp_path,
        status=counters_status(2),
        later_unload={**UNLOADED, "loaded_false": False, "still_loaded": True, "polls_after": 2},
    )
    r = res["M2.unload_reload"]
    assert r.status is Status.PENDING and "too few to tell" in r.reason


def test_n_leases_seen_only_while_loading_is_not_a_violation(tmp_path: Path) -> None:
    # Both requests held slots at once, but every sample with two leases came before the
    # model reported loaded (a cold or reload wave): nothing contradicts concurrency.
    status = {**counters_status(2), "max_active": 2, "max_active_loaded": None}
    a = count_starts(tmp_path, status=status)["M2.observed_active"]
    assert a.status is Status.PENDING, a.reason
    assert "only while the model was still loading" in a.reason


def test_a_starved_poller_cannot_show_that_leases_were_never_held_together(tmp_path: Path) -> None:
    status = {**counters_status(2, polls=40), "max_active": 1, "max_active_loaded": 1}
    a = count_starts(tmp_path, status=status, flight=in_flight(2, polls=4, max_active=1))["M2.observed_active"]
    assert a.status is Status.PENDING and "only 4 successful sample(s)" in a.reason
    # With enough samples inside the in-flight window the same picture is a violation.
    dense = count_starts(tmp_path / "dense", status=status, flight=in_flight(2, polls=10, max_active=1))
    assert dense["M2.observed_active"].status is Status.FAIL
