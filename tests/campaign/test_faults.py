"""Each stand-in fault makes exactly the assertion that exists to catch it fail (or stay
pending where the procedure says so), while the unrelated ones still pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from parval.gates.unload_evidence import order_shown
from parval.status import Status
from tests.attack.kit import Run, copy_events, verdict
from tests.campaign.helpers import per_count, plan_dict, reason, run, status

pytestmark = pytest.mark.slow


def test_contamination_at_three_plus_fails_count_four_only(tmp_path: Path) -> None:
    ev = run(tmp_path, plan_dict(tmp_path, faults=["contaminate_3plus"]))
    assert per_count(ev, 4)["M2.exact"] == "FAIL"
    assert per_count(ev, 1)["M2.exact"] == "PASS"
    assert per_count(ev, 2)["M2.exact"] == "PASS"
    assert status(ev, "Q5") == "FAIL"
    # M4 ran at the largest count validated so far (2), so it is unaffected.
    assert status(ev, "M4.invalid_alongside") == "PASS"
    assert ev["verdict"]["admitted_counts"] == [1, 2]
    assert ev["verdict"]["exit_code"] == 1
    mism = [a for a in ev["assertions"] if a["id"] == "Q5"][0]["evidence"]["mismatches"]
    assert mism and all(m["got_canon"] != m["ref_canon"] for m in mism)
    assert {"run", "phase", "wave", "req", "history", "artifact", "ref_artifact"} <= set(mism[0])


def test_fake_concurrency_fails_observed_active(tmp_path: Path) -> None:
    # count 1 runs ten mixed waves, so it can be the largest admitted count
    ev = run(tmp_path, plan_dict(tmp_path, faults=["fake_concurrency"], counts=[1, 2], ten=2, mixed=10))
    assert per_count(ev, 2)["M2.observed_active"] == "FAIL"
    assert per_count(ev, 1)["M2.observed_active"] == "PASS"
    assert status(ev, "M2.exact") == "PASS", reason(ev, "M2.exact")
    assert ev["verdict"]["admitted_counts"] == [1]


def test_serial_nondeterminism_is_parity_unverified_never_pass(tmp_path: Path) -> None:
    # The baseline itself varies: serial repeat variation is measured before comparing.
    plan = plan_dict(tmp_path, counts=[1, 2], ten=2, mixed=3)
    plan["servers"]["baseline"]["args"] = ["--fault", "serial_nondeterminism"]
    plan["servers"]["candidate"]["args"] = ["--fault", "serial_nondeterminism"]
    ev = run(tmp_path, plan)
    assert status(ev, "M1.serial_repeat") == "PENDING"
    assert "parity unverified" in reason(ev, "M1.serial_repeat")
    for aid in ("M1.legacy_parity", "M1.cap1_parity", "M2.exact"):
        assert status(ev, aid) == "PENDING", aid
    assert ev["verdict"]["admitted_counts"] == []
    assert ev["admission_ready"] is False


def test_counters_that_do_not_drain_fail_m2_drained(tmp_path: Path) -> None:
    ev = run(tmp_path, plan_dict(tmp_path, faults=["counters_no_drain"], counts=[1, 2], ten=2, mixed=3))
    assert per_count(ev, 2)["M2.drained"] == "FAIL"
    assert per_count(ev, 1)["M2.drained"] == "PASS"
    assert status(ev, "M2.exact") == "PASS"


def test_crash_under_load_fails_the_count_with_log_tail(tmp_path: Path) -> None:
    # counts 1 and 2 run ten mixed waves: either may end up the largest admitted
    ev = run(tmp_path, plan_dict(tmp_path, faults=["crash_at_4"], ten=2, mixed=10))
    starts4 = [a for a in ev["model_checks"]["per_count"]["4"]["assertions"] if a["id"] == "M2.starts"][0]
    assert starts4["status"] == "FAIL"
    assert "crash" in starts4["reason"]
    assert "fatal: crash with 4 active requests" in starts4["evidence"]["log_tail"]
    assert per_count(ev, 2)["M2.starts"] == "PASS"
    assert ev["verdict"]["admitted_counts"][:2] == [1, 2]


def test_intermittent_mismatch_stays_failed(tmp_path: Path) -> None:
    ev = run(tmp_path, plan_dict(tmp_path, faults=["intermittent_mismatch"], counts=[1, 2], ten=3, mixed=3))
    assert status(ev, "Q5") == "FAIL"
    mism = [a for a in ev["assertions"] if a["id"] == "Q5"][0]["evidence"]["mismatches"]
    assert len(mism) >= 1
    # Later repeats passed, but the failure stands.
    assert status(ev, "M2.exact") == "FAIL"
    assert status(ev, "M1.cap1_parity") == "PASS"


def test_unload_skipping_first_load_fails_m4(tmp_path: Path) -> None:
    ev = run(tmp_path, plan_dict(tmp_path, faults=["unload_skips_load"], counts=[1, 2], ten=2, mixed=3))
    assert status(ev, "M4.unload_during_first_load") == "FAIL"
    assert status(ev, "M4.invalid_alongside") == "PASS"


def test_a_first_load_that_fails_fails_the_requests_that_needed_it(tmp_path: Path) -> None:
    """A server whose first load of a model fails answers those requests with an error: the
    parity and exactness checks that read them FAIL, and no count is admitted."""
    ev = run(tmp_path, plan_dict(tmp_path, faults=["first_load_fails"], counts=[1, 2], ten=2, mixed=3))
    for aid in ("M1.cap1_parity", "M2.exact"):
        assert status(ev, aid) == "FAIL", (aid, reason(ev, aid))
        assert "request error" in reason(ev, aid)
    assert ev["verdict"]["admitted_counts"] == []


def test_barging_past_a_waiting_unload_fails_m4(tmp_path: Path) -> None:
    ev = run(tmp_path, plan_dict(tmp_path, faults=["barging"], counts=[1, 2], ten=2, mixed=3))
    assert status(ev, "M4.targeted_unload") == "FAIL"
    assert "barged" in reason(ev, "M4.targeted_unload")
    assert status(ev, "M2.exact") == "PASS"
    # Barging seen once is barging: the recorded run with its last try edited to queue
    # behind still FAILs on an earlier try that showed the unload reached the server first.
    recorded = Run.load(tmp_path / "run")
    events = copy_events(recorded.events)
    tries = [e for e in events if e.get("kind") == "m4_targeted_unload" and e.get("run") == "recovery"]
    assert len(tries) == 3 and all(t["later_order"] == "admitted_past" for t in tries), tries
    if not any(order_shown(t) for t in tries[:-1]):
        # On a loaded machine no earlier try may have read the status often enough to show
        # the order; the edit is then judged on recorded tries in tests/gates/test_m4_unloads.py.
        return
    tries[-1].update(later_order="queued_behind", later_samples={"polls": 9, "max_active": 1, "max_queued": 1})
    edited = verdict(recorded, events, "M4.targeted_unload")
    assert edited.status is Status.FAIL and "barged past the unload waiting at the server" in edited.reason, (
        edited.reason
    )


def test_a_variation_the_model_ignores_is_a_plan_defect(tmp_path: Path) -> None:
    # The model itself ignores the seed (upstream and candidate alike): not a variation.
    plan = plan_dict(tmp_path, faults=["ignore_seed"], counts=[1, 2], ten=2, mixed=3)
    plan["servers"]["baseline"]["args"] = ["--fault", "ignore_seed"]
    ev = run(tmp_path, plan)
    # the upstream reference ignores it too: the plan's defect, named, never a model FAIL
    assert status(ev, "M3.variation") == "PENDING"
    assert "plan defect" in reason(ev, "M3.variation") and "seed (seed)" in reason(ev, "M3.variation")
    assert status(ev, "M2.exact") == "PASS"


def test_variation_ignored_by_the_candidate_only_fails_too(tmp_path: Path) -> None:
    ev = run(tmp_path, plan_dict(tmp_path, faults=["ignore_seed"], counts=[1, 2], ten=2, mixed=3))
    assert status(ev, "M3.variation") == "FAIL"
    assert status(ev, "M2.exact") == "FAIL"  # and its outputs differ from upstream's


def test_memory_that_keeps_growing_under_the_bound_is_never_pass(tmp_path: Path) -> None:
    """A little more memory on every wave, under a 64 MiB bound over the last three waves:
    growth that has not stopped. M5.stable once PASSed it; now it is PENDING, or FAIL where
    the rise fitted over the whole tested range reaches the bound in every start."""
    plan = plan_dict(tmp_path, faults=["memory_growth=4"], counts=[1, 2], ten=4, mixed=4)
    plan["memory"]["stabilisation"] = {"last_k_waves": 3, "max_growth_mib": 64}
    ev = run(tmp_path, plan)
    assert status(ev, "M5.stable") in ("PENDING", "FAIL"), reason(ev, "M5.stable")
    assert "0 of 3 starts end flat (within 1 MiB)" in reason(ev, "M5.stable")
    assert status(ev, "M2.exact") == "PASS"


def test_a_counter_that_lags_the_reply_is_named_and_never_pass_beyond_its_bound(tmp_path: Path) -> None:
    """active_slots keeps counting a finished request for 400 ms after its reply. The lag
    once passed with no word of it (the drain check allowed an undeclared 1.5 s): now every
    wave's lag is recorded and named, and beyond a declared timeouts.drain_lag_ms it is
    PENDING, not PASS."""
    plan = plan_dict(tmp_path, faults=["counter_lag_ms=400"], counts=[1, 2], ten=2, mixed=2)
    plan.setdefault("timeouts", {})["drain_lag_ms"] = 150
    ev = run(tmp_path, plan)
    assert per_count(ev, 1)["M2.drained"] == "PENDING", reason(ev, "M2.drained")
    assert "later than the declared timeouts.drain_lag_ms 150 ms" in reason(ev, "M2.drained")
    assert status(ev, "M2.exact") == "PASS"


# -- faults of the checks that name what was observed --------------------------------------


def test_an_unload_that_keeps_the_model_loaded_fails_the_unload_checks(tmp_path: Path) -> None:
    """The unload answers (and lists the model) but /v1/models keeps showing it loaded."""
    ev = run(tmp_path, plan_dict(tmp_path, faults=["unload_keeps_loaded"], counts=[1, 2], ten=2, mixed=3))
    assert per_count(ev, 2)["M2.unload_reload"] == "FAIL"
    assert "loaded in all" in reason(ev, "M2.unload_reload")
    assert status(ev, "M4.targeted_unload") == "FAIL"
    assert status(ev, "M4.all_unload") == "FAIL"
    for aid in ("M2.exact", "M2.drained", "M2.observed_active", "M4.invalid_alongside", "Q1", "X3"):
        assert status(ev, aid) == "PASS", (aid, reason(ev, aid))


def test_a_bulk_unload_answering_an_error_after_the_work_fails_the_m4_unloads(tmp_path: Path) -> None:
    """The unloads wait for the work and unload, then answer 500: the reply is the violation."""
    ev = run(tmp_path, plan_dict(tmp_path, faults=["busy_unload_errors"], counts=[1, 2], ten=2, mixed=3))
    for aid, which in (
        ("M4.targeted_unload", "targeted"),
        ("M4.all_unload", "all"),
        ("M4.unload_during_first_load", "first-load"),
    ):
        assert status(ev, aid) == "FAIL", (aid, reason(ev, aid))
        assert f"the {which} unload answered 500" in reason(ev, aid), reason(ev, aid)
    for aid in ("M2.exact", "M2.drained", "M4.invalid_alongside", "Q1"):
        assert status(ev, aid) == "PASS", (aid, reason(ev, aid))


def test_a_batch_answering_request_zero_twice_fails_m6_batch(tmp_path: Path) -> None:
    plan = plan_dict(tmp_path, faults=["batch_repeats_first"], counts=[1, 2], ten=2, mixed=3)
    plan["model"]["admit_modes"] = ["offline", "batch"]
    plan["model"]["load_options"]["native_batch"] = True
    ev = run(tmp_path, plan)
    assert status(ev, "M6.batch") == "FAIL"
    assert "answered more than once" in reason(ev, "M6.batch") and "never answered" in reason(ev, "M6.batch")
    for aid in ("M6.offline", "M2.exact", "M4.invalid_alongside"):
        assert status(ev, aid) == "PASS", (aid, reason(ev, aid))


def test_pcm32_outputs_that_differ_below_16_bits_fail_even_with_a_tolerance(tmp_path: Path) -> None:
    """Both builds write 32-bit WAVs; the candidate's samples differ below the 16-bit step.
    Read as int16 they were equal, within a declared tolerance of 0."""
    plan = plan_dict(tmp_path, counts=[1, 2], ten=2, mixed=3)
    plan["servers"]["baseline"]["args"] = ["--fault", "pcm32_output"]
    plan["servers"]["candidate"]["args"] = ["--fault", "pcm32_output", "--fault", "sub16_noise"]
    plan["compare"]["tolerance"] = {"max_abs_sample_diff": 0, "justification": "declared before the run: none"}
    ev = run(tmp_path, plan)
    for aid in ("M1.cap1_parity", "M1.legacy_parity", "M2.exact"):
        assert status(ev, aid) == "FAIL", (aid, reason(ev, aid))
    assert status(ev, "M1.serial_repeat") == "PASS" and status(ev, "M2.drained") == "PASS"


def test_a_reference_start_that_crashes_mid_collection_fails_its_parity(tmp_path: Path) -> None:
    """The unflagged candidate aborts after four requests: M1.legacy_parity FAILs on the
    crash (never "exact" on the outputs before it); the probes it could not run are
    BLOCKED, never PASS."""
    ev = run(tmp_path, plan_dict(tmp_path, faults=["crash_legacy_after"], counts=[1, 2], ten=2, mixed=3))
    assert status(ev, "M1.legacy_parity") == "FAIL" and "crashed" in reason(ev, "M1.legacy_parity")
    assert status(ev, "X1") in ("BLOCKED", "PENDING")
    for aid in ("M1.cap1_parity", "M2.exact", "M2.starts", "M4.all_unload"):
        assert status(ev, aid) == "PASS", (aid, reason(ev, aid))


def test_a_recovery_start_that_crashes_fails_its_probe_and_blocks_the_rest(tmp_path: Path) -> None:
    ev = run(tmp_path, plan_dict(tmp_path, faults=["segv_unload_all_busy"], counts=[1, 2], ten=2, mixed=3))
    assert status(ev, "M4.all_unload") == "FAIL" and "crashed" in reason(ev, "M4.all_unload")
    assert status(ev, "M4.load_failure_retry") == "BLOCKED"
    for aid in ("M4.targeted_unload", "M4.invalid_alongside", "M4.unload_during_first_load", "M2.unload_reload"):
        assert status(ev, aid) == "PASS", (aid, reason(ev, aid))


def test_a_load_the_server_refuses_for_memory_is_blocked_never_failed(tmp_path: Path) -> None:
    """The server's memory guard refuses a three-slot pool (503 insufficient_memory): count 3
    is BLOCKED (never FAIL), counts 1 and 2 are admitted."""
    plan = plan_dict(tmp_path, faults=["memory_refused_at=3"], counts=[1, 2, 3], ten=2, mixed=10)
    # requests long enough that a busy machine still sees each wave's requests together
    plan["model"]["load_options"]["service_ms"] = 300
    ev = run(tmp_path, plan)
    three = per_count(ev, 3)
    assert three["M2.exact"] == "BLOCKED" and "FAIL" not in three.values(), three
    assert not [a["id"] for a in ev["assertions"] if a["status"] == "FAIL"]
    assert ev["verdict"]["admitted_counts"] == [1, 2]


def test_a_hung_server_ends_as_a_blocked_verdict(tmp_path: Path) -> None:
    """Requests never answered within timeouts.wave_s: every start ends with a wave_timeout
    and M2.starts is BLOCKED naming it; judging never raises."""
    plan = plan_dict(tmp_path, faults=["hang_requests"], counts=[1], starts=1, ten=2, mixed=2)
    plan["timeouts"].update(wave_s=1, request_s=3, start_s=60)
    ev = run(tmp_path, plan)
    assert status(ev, "M2.starts") == "BLOCKED" and "timeouts.wave_s" in reason(ev, "M2.starts")
    assert ev["verdict"]["exit_code"] in (1, 3)


def test_a_declared_memory_baseline_is_compared(tmp_path: Path) -> None:
    plan = plan_dict(tmp_path, counts=[1, 2], ten=2, mixed=3)
    plan["memory"]["baseline_comparison"] = {"reason": "checking the candidate's retention after unload"}
    ev = run(tmp_path, plan)
    assert status(ev, "M5.baseline") == "PASS" and "compared with the baseline build" in reason(ev, "M5.baseline")
