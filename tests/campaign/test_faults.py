"""Each stand-in fault makes exactly the assertion that exists to catch it fail (or stay
pending where the procedure says so), while the unrelated ones still pass."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    ev = run(tmp_path, plan_dict(tmp_path, faults=["fake_concurrency"], counts=[1, 2], ten=2, mixed=3))
    assert per_count(ev, 2)["M2.observed_active"] == "FAIL"
    assert per_count(ev, 1)["M2.observed_active"] == "PASS"
    assert status(ev, "M2.exact") == "PASS"
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
    ev = run(tmp_path, plan_dict(tmp_path, faults=["crash_at_4"], ten=2, mixed=3))
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


def test_barging_past_a_waiting_unload_fails_m4(tmp_path: Path) -> None:
    ev = run(tmp_path, plan_dict(tmp_path, faults=["barging"], counts=[1, 2], ten=2, mixed=3))
    assert status(ev, "M4.targeted_unload") == "FAIL"
    assert "barged" in reason(ev, "M4.targeted_unload")
    assert status(ev, "M2.exact") == "PASS"


def test_ignored_variation_field_fails_m3_variation(tmp_path: Path) -> None:
    # The model itself ignores the seed (upstream and candidate alike): not a variation.
    plan = plan_dict(tmp_path, faults=["ignore_seed"], counts=[1, 2], ten=2, mixed=3)
    plan["servers"]["baseline"]["args"] = ["--fault", "ignore_seed"]
    ev = run(tmp_path, plan)
    assert status(ev, "M3.variation") == "FAIL"
    assert "seed (seed)" in reason(ev, "M3.variation")
    assert status(ev, "M2.exact") == "PASS"


def test_variation_ignored_by_the_candidate_only_fails_too(tmp_path: Path) -> None:
    ev = run(tmp_path, plan_dict(tmp_path, faults=["ignore_seed"], counts=[1, 2], ten=2, mixed=3))
    assert status(ev, "M3.variation") == "FAIL"
    assert status(ev, "M2.exact") == "FAIL"  # and its outputs differ from upstream's


def test_memory_growth_keeps_m5_stable_unresolved(tmp_path: Path) -> None:
    plan = plan_dict(tmp_path, faults=["memory_growth=6"], counts=[1, 2], ten=4, mixed=4)
    ev = run(tmp_path, plan)
    st = status(ev, "M5.stable")
    assert st in ("PENDING", "FAIL")
    assert "MiB" in reason(ev, "M5.stable")
    assert status(ev, "M2.exact") == "PASS"
