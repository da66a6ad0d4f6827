"""Serial variation masks output-comparison verdicts only, an uncaught negative control
output-comparison PASSes only; a FAIL on lifecycle evidence stands. A tolerance declared
in the plan is honoured by M1.serial_repeat as by the comparisons."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np

from parval.gates.exactness import Tally
from parval.gates.judge_context import exact_result
from parval.gates.m1_baseline import serial_variation
from parval.gates.masking import mask_comparisons
from parval.gates.serial import SerialVerdict
from parval.procedure.judge_shape import failed, passed
from parval.status import Result, Status
from tests.gates.cmp_events import SAMPLES, Events, tts_reply

VARIES = SerialVerdict(
    Status.PENDING, "parity unverified: serial output varies", measured=True, varies=True, tolerance_applies=False
)
UNMEASURED = SerialVerdict(
    Status.PENDING,
    "two fresh baseline starts are needed to measure serial repeat variation",
    measured=False,
    varies=False,
    tolerance_applies=False,
)
STEADY = SerialVerdict(Status.PASS, "identical", measured=True, varies=False, tolerance_applies=False)


def verdicts(tmp_path: Path) -> dict[str, Result]:
    ev = Events(tmp_path)
    ctx = ev.context()
    mismatch = Tally(compared=1, mismatches=[{"run": "count2-s1", "req": "base"}])
    errors = Tally(compared=0, errors=[{"run": "count2-s1", "status": 500}])
    return {
        "output": exact_result("M2.exact", mismatch, "count 2", ctx),
        "request": exact_result("M2.serial_reuse", errors, "serial", ctx),
        "lease": failed("M4.invalid_alongside", "lease left held: active 1", violation={"active": 1}),
        "barging": failed("M4.targeted_unload", "a request sent after the unload was admitted", violation=[1]),
        "pass": passed("M2.unload_reload", "3/3 exact", {"compared outputs": 3}),
        "other": failed("M2.drained", "not a comparison id", violation=[1]),
    }


def masked(rs: dict[str, Result], caught: bool, serial: SerialVerdict) -> dict[str, Result]:
    """The verdicts as masking returns them, by the same keys."""
    return dict(zip(rs, mask_comparisons(list(rs.values()), caught, serial), strict=True))


def test_serial_variation_masks_output_fails_only(tmp_path: Path) -> None:
    rs = masked(verdicts(tmp_path), True, VARIES)
    assert rs["output"].status is Status.PENDING and rs["output"].evidence["status_before_serial_check"] == "FAIL"
    assert rs["pass"].status is Status.PENDING
    for k in ("lease", "barging", "request", "other"):
        assert rs[k].status is Status.FAIL, k


def test_an_observed_mismatch_stands_when_serial_variation_was_not_measured(tmp_path: Path) -> None:
    """Only measured, seen variation can explain a mismatch away: with ref-baseline-b
    missing, the FAIL stands, and a PASS waits (variation not shown absent)."""
    rs = masked(verdicts(tmp_path), True, UNMEASURED)
    assert rs["output"].status is Status.FAIL
    assert rs["pass"].status is Status.PENDING and "parity unverified" in rs["pass"].reason


def test_uncaught_negative_control_blocks_output_passes_only(tmp_path: Path) -> None:
    """Only a PASS needs the control: a comparator that reported a difference has shown it
    can fail, so an output FAIL stands with its own reason (the control lost to an
    interrupted campaign, or run and missed, alike)."""
    judged = verdicts(tmp_path)
    rs = masked(judged, False, STEADY)
    assert rs["pass"].status is Status.BLOCKED
    assert rs["output"].status is Status.FAIL and rs["output"].reason == judged["output"].reason
    assert "status_before_negative_control" not in rs["output"].evidence
    assert any("negative control" in line for line in rs["output"].limitations)
    for k in ("lease", "barging", "request", "other"):
        assert rs[k].status is Status.FAIL, k
    # Measured serial variation still explains an output FAIL away, control or not.
    rs = masked(judged, False, VARIES)
    assert rs["output"].status is Status.PENDING and rs["pass"].status is Status.BLOCKED


def test_nothing_masked_when_serial_output_is_steady(tmp_path: Path) -> None:
    judged = verdicts(tmp_path)
    rs = masked(judged, True, STEADY)
    assert rs["output"].status is Status.FAIL and rs["pass"].status is Status.PASS
    assert all(rs[k] is judged[k] for k in judged)  # nothing masked: the judges' own results


def test_masking_returns_new_results_and_leaves_the_judges_own_untouched(tmp_path: Path) -> None:
    judged = verdicts(tmp_path)
    before = {k: copy.deepcopy(r) for k, r in judged.items()}
    for caught, serial in ((False, STEADY), (True, VARIES), (True, UNMEASURED)):
        rs = masked(judged, caught, serial)
        assert judged == before  # status, reason, evidence and all as the judges returned them
        for k in ("output", "pass"):
            if rs[k].status is not judged[k].status:
                assert rs[k] is not judged[k] and rs[k].evidence is not judged[k].evidence
    rs = masked(judged, False, STEADY)
    assert rs["pass"].status is Status.BLOCKED and judged["pass"].status is Status.PASS
    assert rs["pass"].evidence["status_before_negative_control"] == "PASS"
    assert "status_before_negative_control" not in judged["pass"].evidence
    assert rs["pass"].reason.endswith(judged["pass"].reason) and rs["pass"].reason != judged["pass"].reason
    assert rs["lease"] is judged["lease"]  # a lifecycle FAIL is not masked: the same result


def nudged(by: int) -> np.ndarray[Any, Any]:
    other = SAMPLES.copy()
    other[100] += by
    return other


def baseline(tmp_path: Path, second: dict[str, Any]) -> Events:
    ev = Events(tmp_path)
    ev.baseline(
        {
            "ref_cold": [tts_reply(), second],
            "ref_warm": [tts_reply(), tts_reply()],
            "ref_warm2": [tts_reply(), tts_reply()],
        }
    )
    return ev


def test_serial_repeat_honours_the_declared_tolerance(tmp_path: Path) -> None:
    within = baseline(tmp_path / "a", tts_reply(nudged(1)))
    rec = within.records()
    # Without a tolerance a one-LSB repeat difference is serial variation.
    assert serial_variation(rec).status is Status.PENDING
    found = serial_variation(rec, run_dir=within.run_dir, tolerance=1, volatile=within.volatile)
    assert found.status is Status.PASS and "within the declared tolerance" in found.reason
    assert "at most 1 LSB" in found.reason
    assert found.tolerance_applies is True and found.evidence["tolerance_applies"] is True
    assert len(found.facts["within_declared_tolerance"]) == 1
    beyond = baseline(tmp_path / "b", tts_reply(nudged(5)))
    found = serial_variation(beyond.records(), run_dir=beyond.run_dir, tolerance=1, volatile=beyond.volatile)
    assert found.status is Status.PENDING and "beyond the declared tolerance" in found.reason
    assert "exceeds" in found.facts["differences"][0]["tolerance_check"]
    # A tolerance covers samples only: a different transcript is still variation.
    text = baseline(tmp_path / "c", tts_reply(nudged(1), text="other"))
    assert (
        serial_variation(text.records(), run_dir=text.run_dir, tolerance=1, volatile=text.volatile).status
        is Status.PENDING
    )
