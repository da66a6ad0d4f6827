"""The F1.timeouts judges over synthetic observations: each passes what a correct server
shows and fails exactly the misbehaviour it exists to catch."""

from __future__ import annotations

from typing import Any

from parval.framework.judges import run_judge
from parval.framework.probes_f1 import FLAGGED_TIMEOUT
from parval.status import Status

from .factkit import facts, fl, manager

# factkit.TIMING: a 150 ms service, so the ceiling is 75 ms and the tolerance 75 ms.
CEILING = 75


def case(
    *,
    expect: str | None = FLAGGED_TIMEOUT,
    probe_done: float = 0.11,
    status: int = 503,
    message: str = FLAGGED_TIMEOUT,
    occupant_done: float = 0.15,
    **extra: Any,
) -> dict[str, Any]:
    """One occupant holding the slot, then a probe with a 75 ms bound (or none)."""
    return facts(
        [fl("occupant0", 0.0, occupant_done), fl("probe-x", 0.03, probe_done, status=status, message=message)],
        case="x",
        expect=expect,
        bound_ms=CEILING if expect else 0,
        probe="probe-x",
        occupants=["occupant0"],
        waits=[{"what": "1 active slot(s)", "seen": True}],
        **extra,
    )


def test_bounded_probe_passes_when_it_gives_up_after_its_bound() -> None:
    v = run_judge("timeouts.case", case())
    assert v.status is Status.PASS, v.detail()


def test_bounded_probe_fails_a_timed_out_waiter_still_counted_as_queued() -> None:
    v = run_judge("timeouts.case", case(drained=False))
    assert v.status is Status.FAIL
    assert "no timed-out request stays counted as queued" in v.detail()


def test_bounded_probe_fails_a_rejection_before_the_bound_or_with_another_text() -> None:
    v = run_judge("timeouts.case", case(probe_done=0.032))
    assert v.status is Status.FAIL and "gave up after 2 ms, not before its 75 ms bound" in v.detail()
    v = run_judge("timeouts.case", case(message="internal error"))
    assert v.status is Status.FAIL and f"503 '{FLAGGED_TIMEOUT}'" in v.detail()


def test_a_late_rejection_on_a_busy_machine_is_no_fail() -> None:
    """The old bound was the ceiling + half a calibrated service + 50 ms: a rejection read
    late on a busy machine failed it. A waiter may give up late; it may not give up early."""
    assert run_judge("timeouts.case", case(probe_done=0.40)).status is Status.PASS


def test_bounded_probe_fails_a_bound_that_was_ignored_or_a_slot_left_unused() -> None:
    # Served 520 ms after sending while the slot stayed busy for 370 ms after it: no bound.
    v = run_judge("timeouts.case", case(status=200, message="", probe_done=0.55, occupant_done=0.40))
    assert v.status is Status.FAIL and "waited past its 75 ms bound while the slot stayed busy" in v.detail()
    # Timed out although the slot was already free when it was sent.
    v = run_judge("timeouts.case", case(occupant_done=0.02))
    assert v.status is Status.FAIL and "a slot freed" in v.detail()


def test_a_probe_that_could_not_meet_a_busy_young_occupant_is_not_forced() -> None:
    # The occupant freed before the bound ran out: serving the probe was right.
    v = run_judge("timeouts.case", case(status=200, message="", probe_done=0.20))
    assert v.status is Status.BLOCKED and v.retry
    # The occupant was already older than the bound on arrival: the fail-fast path.
    v = run_judge("timeouts.case", case(message="all active slots exceeded busy_timeout_ms"))
    assert v.status is Status.BLOCKED and v.retry and "fail-fast path" in v.detail()


def test_legacy_runtime_needs_no_counters_but_its_own_text() -> None:
    text = "timed out after 75 ms waiting for the inference lock"
    f = case(expect=text, message=text, flagged=False)
    del f["drained"]
    assert run_judge("timeouts.case", f).status is Status.PASS
    f = case(expect=text, message=FLAGGED_TIMEOUT, flagged=False)
    assert run_judge("timeouts.case", f).status is Status.FAIL


def test_legacy_request_ceiling_is_sent_only_while_the_holder_is_young() -> None:
    """The legacy ceiling case once sent its bounded request whenever it could, so a holder
    already older than the ceiling gave the wedged text and the case FAILed."""
    text = "timed out after 75 ms waiting for the inference lock"
    wedged = "model 'm' is busy: current inference has run 90 ms (busy_timeout_ms=75); likely wedged"
    f = case(expect=text, message=wedged, flagged=False)
    assert run_judge("timeouts.case", f).status is Status.BLOCKED
    f = case(expect=text, message=text, flagged=False)
    f["waits"] = [{"what": "the holder younger than the 75 ms ceiling", "seen": False, "unseen": "holder 90 ms old"}]
    v = run_judge("timeouts.case", f)
    assert v.status is Status.BLOCKED and v.retry and "holder 90 ms old" in v.detail()


def test_unbounded_probe_must_wait_and_be_served() -> None:
    ok = case(expect=None, probe_done=0.30, status=200)
    assert run_judge("timeouts.case", ok).status is Status.PASS
    v = run_judge("timeouts.case", case(expect=None, probe_done=0.06, status=503))
    assert v.status is Status.FAIL and "unbounded probe completed 200 (got 503" in v.detail()
    v = run_judge("timeouts.case", case(expect=None, probe_done=0.04, status=200, occupant_done=0.40))
    assert v.status is Status.FAIL and "served only once a held slot freed" in v.detail()


def test_unseen_occupancy_blocks_and_drain_is_not_read() -> None:
    f = case()
    f["waits"][0]["seen"] = False
    del f["drained"]
    v = run_judge("timeouts.case", f)
    assert v.status is Status.BLOCKED and "never observed 1 active slot(s)" in v.detail()


def unload(t_done: float, status: int = 503, message: str = FLAGGED_TIMEOUT) -> dict[str, Any]:
    return fl("unload", 0.01, t_done, status=status, model="", path="/v1/models/unload", message=message)


def mgr(
    *,
    behind: dict[str, Any] | None = None,
    after: list[list[Any]] | None = None,
    end_loaded: bool | None = True,
    unload_done: float = 0.09,
) -> dict[str, Any]:
    """Count 2, one occupant, a targeted unload timing out after 80 ms, a request behind it
    that takes the spare slot at once (status samples after the manager gave up)."""
    return facts(
        [fl("occupant0", 0.0, 0.30), unload(unload_done), fl("behind-manager", 0.04, 0.245)],
        expect=FLAGGED_TIMEOUT,
        bound_ms=CEILING,
        model="m",
        count=2,
        spare=True,
        occupants=["occupant0"],
        later="behind-manager",
        behind=behind or {"t": 0.05, "queued": 1, "active": 1, "manager_finished": False},
        after_giveup=[[0.095, 2, 0, True, 4, 2]] if after is None else after,
        end_sampled=True,
        end_loaded=end_loaded,
        waits=[
            {"what": "1 active slot(s)", "seen": True},
            {"what": "the request behind the manager queued", "seen": True},
        ],
    )


def test_manager_timeout_passes_a_manager_that_gives_up_and_wakes_the_waiter() -> None:
    v = run_judge("timeouts.manager_timeout", mgr())
    assert v.status is Status.PASS, v.detail()


def test_manager_timeout_fails_a_waiter_left_asleep_after_the_manager_gave_up() -> None:
    v = run_judge("timeouts.manager_timeout", mgr(after=[[0.095, 1, 1, True, 4, 2], [0.195, 1, 1, True, 4, 2]]))
    assert v.status is Status.FAIL and "still waited with a slot free" in v.detail()
    # No sample at all of the request behind: not seen, so not judged.
    v = run_judge("timeouts.manager_timeout", mgr(after=[]))
    assert v.status is Status.BLOCKED and v.retry


def test_manager_timeout_fails_an_unload_that_acted_or_never_timed_out() -> None:
    v = run_judge("timeouts.manager_timeout", mgr(end_loaded=False))
    assert v.status is Status.FAIL and "the model stayed loaded" in v.detail()
    f = mgr(unload_done=0.60)
    f["flights"][0]["t_done"] = 0.50
    f["flights"][1] = unload(0.60, status=200, message="")
    v = run_judge("timeouts.manager_timeout", f)
    assert v.status is Status.FAIL and "waited past its 75 ms bound" in v.detail()


def test_manager_timeout_is_blocked_by_barging_or_a_late_first_sight() -> None:
    barged = {"t": 0.05, "queued": 0, "active": 2, "manager_finished": False}
    v = run_judge("timeouts.manager_timeout", mgr(behind=barged))
    assert v.status is Status.BLOCKED and "FIFO barging, judged by F1.fifo" in v.detail()
    late = {**barged, "manager_finished": True}
    v = run_judge("timeouts.manager_timeout", mgr(behind=late))
    assert v.status is Status.BLOCKED and v.retry and "first seen only after the manager gave up" in v.detail()


def bulk(done: float, unloaded: list[str] | None = None, occupant_done: float = 0.30) -> dict[str, Any]:
    return facts(
        [fl("occupant0", 0.0, occupant_done), manager("bulk-unload", 0.01, done, unloaded=unloaded)],
        bound_ms=CEILING,
        model="m",
        occupants=["occupant0"],
        waits=[{"what": "1 active slot(s)", "seen": True}],
    )


def test_bulk_unload_passes_waiting_beyond_the_ceiling() -> None:
    v = run_judge("timeouts.bulk_unbounded", bulk(0.31))
    assert v.status is Status.PASS, v.detail()


def test_bulk_unload_fails_one_that_did_not_wait_or_did_not_unload() -> None:
    v = run_judge("timeouts.bulk_unbounded", bulk(0.05))
    assert v.status is Status.FAIL and "before the work it had to wait for finished" in v.detail()
    v = run_judge("timeouts.bulk_unbounded", bulk(0.31, unloaded=[]))
    assert v.status is Status.FAIL and "listing the model" in v.detail()


def test_bulk_unload_not_compared_with_its_own_latency_against_the_ceiling() -> None:
    """The old judge compared the bulk's latency with the ceiling: work that finished early
    on the machine made a correct unbounded wait look bounded."""
    v = run_judge("timeouts.bulk_unbounded", bulk(0.16, occupant_done=0.15))
    assert v.status is Status.BLOCKED and v.retry and "within the ceiling" in v.detail()


def test_a_rejection_without_its_recorded_latency_is_judged_from_its_times() -> None:
    """A flight recorded without `ms` is read from its send and reply times, never as an
    instant rejection (which would FAIL on missing data)."""
    f = case()
    del f["flights"][1]["ms"]
    assert run_judge("timeouts.case", f).status is Status.PASS
    f = case(probe_done=0.032)
    del f["flights"][1]["ms"]
    v = run_judge("timeouts.case", f)
    assert v.status is Status.FAIL and "gave up after 2 ms, not before its 75 ms bound" in v.detail()


def test_a_bounded_probe_at_the_margins() -> None:
    """The rejection may come 10 % before its bound (the client's clock, not the server's),
    no earlier; a probe served while the slot was busy fails only past its bound plus the
    margin; the reasons name the measured times."""
    ok = case(probe_done=0.03 + 0.9 * CEILING / 1000 + 0.0005)
    assert run_judge("timeouts.case", ok).status is Status.PASS
    early = run_judge("timeouts.case", case(probe_done=0.03 + 0.85 * CEILING / 1000))
    assert early.status is Status.FAIL and "gave up after 64 ms" in early.detail()
    # The occupant freed at 0.02 s, the probe was sent at 0.03 s with a 75 ms bound.
    v = run_judge("timeouts.case", case(occupant_done=0.02))
    assert "a slot freed 84 ms before its bound ran out" in v.detail(), v.detail()
    served = run_judge("timeouts.case", case(status=200, message="", probe_done=0.55, occupant_done=0.40))
    assert "served 520 ms after it was sent" in served.detail(), served.detail()
    other = run_judge("timeouts.case", case(status=500, message="x" * 200))
    assert other.status is Status.FAIL and "(got 500: " + "x" * 120 + ")" in other.detail()


def test_a_timed_out_manager_or_bulk_unload_needs_its_waits_seen() -> None:
    for key, f in (("timeouts.manager_timeout", mgr()), ("timeouts.bulk_unbounded", bulk(0.31))):
        f["waits"][0]["seen"] = False
        v = run_judge(key, f)
        assert v.status is Status.BLOCKED and v.retry and "never observed 1 active slot(s)" in v.detail(), key


def test_manager_timeout_without_a_request_behind_it_judges_the_unload_alone() -> None:
    f = mgr()
    f["later"] = None
    f["flights"] = f["flights"][:2]
    v = run_judge("timeouts.manager_timeout", f)
    assert v.status is Status.PASS, v.detail()
    # The request behind it answered with an error: that is a failed request.
    f = mgr()
    f["flights"][2]["status"] = 500
    v = run_judge("timeouts.manager_timeout", f)
    assert v.status is Status.FAIL, v.detail()


def test_the_woken_request_is_read_only_between_the_give_up_and_the_occupants_end() -> None:
    """Samples outside (give up + margin, first occupant done - margin) neither show it stuck
    nor woken; a sample with no free slot is not "stuck"."""
    stuck_late = mgr(after=[[0.295, 1, 1, True, 4, 2]])  # after the occupant was done (0.30 - margin)
    assert run_judge("timeouts.manager_timeout", stuck_late).status is Status.BLOCKED
    full = mgr(after=[[0.195, 2, 1, True, 4, 2]])  # both slots active: the waiter has no free slot
    assert run_judge("timeouts.manager_timeout", full).status is Status.PASS
    early = mgr(after=[[0.092, 1, 1, True, 4, 2]])  # within the margin after the give-up
    assert run_judge("timeouts.manager_timeout", early).status is Status.BLOCKED
    v = run_judge("timeouts.manager_timeout", mgr(after=[[0.195, 1, 1, True, 4, 2]]))
    assert v.status is Status.FAIL and "105 ms after the unload gave up" in v.detail(), v.detail()


def test_bulk_unload_reasons_name_the_measured_wait() -> None:
    v = run_judge("timeouts.bulk_unbounded", bulk(0.31))
    assert "it waited 300 ms for the work ahead of it, beyond the 75 ms ceiling" in v.detail(), v.detail()
    v = run_judge("timeouts.bulk_unbounded", bulk(0.05))
    assert "it answered 250 ms before the work" in v.detail(), v.detail()


def test_a_manager_not_forced_to_time_out_is_never_judged_on_what_follows_a_give_up() -> None:
    """A manager served once the slot freed, or sent down the fail-fast path, did not give
    up: samples that would show a waiter stuck after a give-up are not read."""
    stuck = [[0.195, 1, 1, True, 4, 2]]
    # The occupant finished at 80 ms, inside the bound: the unload was served and unloaded.
    f = mgr(end_loaded=False)
    f["flights"][0]["t_done"] = 0.08
    f["flights"][1] = unload(0.085, status=200, message="")
    v = run_judge("timeouts.manager_timeout", f)
    assert v.status is Status.BLOCKED and "the held slot freed before the waiter's bound ran out" in v.detail()
    f = mgr(after=stuck)
    f["flights"][1] = unload(0.09, message="all active slots exceeded busy_timeout_ms")
    v = run_judge("timeouts.manager_timeout", f)
    assert v.status is Status.BLOCKED and "fail-fast path" in v.detail(), v.detail()


def test_a_give_up_close_to_the_occupants_end_cannot_show_the_waiter_woken() -> None:
    """The manager gave up within a margin of the occupants finishing: a sample of both
    slots busy then is the occupant's end, not the waiter woken by the give-up."""
    v = run_judge("timeouts.manager_timeout", mgr(unload_done=0.25, after=[[0.26, 2, 0, True, 4, 2]]))
    assert v.status is Status.BLOCKED and "the occupants finished about when the unload gave up" in v.detail()


def test_a_sample_without_the_queued_counter_does_not_show_a_waiter_stuck() -> None:
    v = run_judge("timeouts.manager_timeout", mgr(after=[[0.195, 1, None, True, 4, 2]]))
    assert v.status is Status.BLOCKED, v.detail()


def test_a_sample_without_the_active_counter_does_not_show_a_free_slot() -> None:
    # One waiter queued but `active` unpublished: whether a slot was free is not observed.
    v = run_judge("timeouts.manager_timeout", mgr(after=[[0.195, None, 1, True, 4, 2]]))
    assert v.status is Status.BLOCKED, v.detail()


def test_an_unbounded_probe_served_early_names_how_early() -> None:
    v = run_judge("timeouts.case", case(expect=None, probe_done=0.04, status=200, occupant_done=0.40))
    assert "(served 360 ms before)" in v.detail(), v.detail()


def test_a_rejection_is_timed_by_the_clients_own_latency_not_by_when_its_reply_was_read() -> None:
    """The client measured 20 ms: it gave up before its 75 ms bound, even though a busy
    rig recorded its reply 80 ms after the send."""
    f = case(probe_done=0.11)
    f["flights"][1]["ms"] = 20.0
    v = run_judge("timeouts.case", f)
    assert v.status is Status.FAIL and "gave up after 20 ms, not before its 75 ms bound" in v.detail(), v.detail()


def test_an_unbounded_probe_served_after_the_slot_freed_claims_no_early_service() -> None:
    # Served 10 ms after the occupant freed (inside the margin): the pass reason says no "before".
    v = run_judge("timeouts.case", case(expect=None, probe_done=0.16, status=200))
    assert v.status is Status.PASS and "(served" not in v.detail(), v.detail()


def test_a_legacy_probe_served_before_an_occupant_shown_running_fails_and_otherwise_is_not_forced() -> None:
    """The legacy path has no counters: the occupant may reach the lock after the probe (a
    starved client). Only the occupant's own run, begun before the probe was served, shows
    it held the slot; then an early service is the violation."""
    early = case(expect=None, probe_done=0.20, status=200, occupant_done=0.40, flagged=False)
    v = run_judge("timeouts.case", early)
    assert v.status is Status.BLOCKED and "may not yet have held the slot" in v.detail(), v.detail()
    early["flights"][0]["wall_ms"] = 400.0  # it ran from 0.00
    v = run_judge("timeouts.case", early)
    assert v.status is Status.FAIL and "(served 200 ms before)" in v.detail(), v.detail()
    early["flights"][0]["wall_ms"] = 250.0  # it ran from 0.15 at the latest: not before the margin
    assert run_judge("timeouts.case", early).status is Status.BLOCKED
