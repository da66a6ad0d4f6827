"""Pins parval.gates.serial (M1.serial_repeat): when serial repeat variation of the baseline
is measured, its verdict, reason text and evidence for identical, varying and tolerated
repeats, and why it stays PENDING or BLOCKED when the baseline starts are incomplete."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from parval.gates.serial import SerialVerdict, serial_variation
from parval.status import Status
from tests.gates.cmp_events import SAMPLES, VOLATILE, Events, tts_reply

A, B = "ref-baseline-a", "ref-baseline-b"
PHASES = ("ref_cold", "ref_warm", "ref_warm2")


def nudged(by: int) -> np.ndarray[Any, Any]:
    other = SAMPLES.copy()
    other[100] += by
    return other


Bodies = dict[tuple[str, str], dict[str, Any] | None]


def baseline(
    tmp_path: Path,
    a: Bodies | None = None,
    b: Bodies | None = None,
    *,
    names: tuple[str, ...] = ("base",),
    skip: tuple[tuple[str, str, str], ...] = (),
) -> Events:
    """Both baseline starts, each request cold, warm and repeated warm with the same reply,
    unless `a`/`b` replace one (req, phase)'s body or `skip` leaves out (run, req, phase)."""
    ev = Events(tmp_path)
    for run, over in ((A, a or {}), (B, b or {})):
        attempt = ev.start(run, role="reference", count=1, exe_role="baseline")
        for name in names:
            for phase in PHASES:
                if (run, name, phase) in skip:
                    continue
                body = over.get((name, phase), tts_reply())
                label = f"{name}|{'cold' if phase == 'ref_cold' else 'warm'}"
                ev.request(run, attempt, phase, body, req=name, ref=label)
        ev.end(run, attempt)
    return ev


def canons(ev: Events) -> dict[tuple[str, str], Any]:
    """Each baseline output's canonical hash, by (start, phase)."""
    return {(e["run"], e["phase"]): e["output"]["canon"] for e in ev.events if e["kind"] == "request"}


def listed(v: SerialVerdict, key: str) -> list[dict[str, Any]]:
    """One of the verdict's listed facts (differences, repeats within the tolerance)."""
    return cast(list[dict[str, Any]], v.facts[key])


def judge(ev: Events, **kw: Any) -> SerialVerdict:
    return serial_variation(ev.records(), run_dir=ev.run_dir, volatile=VOLATILE, **kw)


# -- evidence ------------------------------------------------------------------------------------


def test_evidence_states_the_findings_then_the_facts() -> None:
    v = SerialVerdict(Status.PASS, "r", True, True, False, outputs_compared=3, facts={"differences": [1]})
    assert v.evidence == {
        "measured": True,
        "varies": True,
        "tolerance_applies": False,
        "outputs_compared": 3,
        "differences": [1],
    }
    unmeasured = SerialVerdict(Status.PENDING, "r", False, False, True)
    assert unmeasured.evidence == {"measured": False, "varies": False, "tolerance_applies": True}
    assert unmeasured.outputs_compared is None and unmeasured.facts == {}
    assert SerialVerdict(Status.PASS, "r", True, False, False, outputs_compared=0).evidence["outputs_compared"] == 0


# -- identical repeats ---------------------------------------------------------------------------


def test_identical_repeats_pass_and_no_tolerance_applies(tmp_path: Path) -> None:
    v = judge(baseline(tmp_path, names=("base", "other")))
    assert v.status is Status.PASS
    assert v.reason == "6 outputs identical across two fresh starts and warm repeats"
    assert (v.measured, v.varies, v.tolerance_applies, v.outputs_compared) == (True, False, False, 6)
    assert v.evidence == {
        "measured": True,
        "varies": False,
        "tolerance_applies": False,
        "outputs_compared": 6,
        "differences": [],
    }


def test_identical_repeats_leave_a_declared_tolerance_unapplied(tmp_path: Path) -> None:
    v = judge(baseline(tmp_path), tolerance=2)
    assert v.status is Status.PASS
    assert v.reason == (
        "3 outputs identical across two fresh starts and warm repeats; the declared tolerance (2) is not applied: "
        "deterministic output must be byte-identical"
    )
    assert (v.varies, v.tolerance_applies) == (False, False)
    assert v.facts == {"differences": [], "within_declared_tolerance": [], "tolerance": 2}


# -- varying repeats -----------------------------------------------------------------------------


def test_a_difference_between_the_starts_is_serial_variation(tmp_path: Path) -> None:
    ev = baseline(tmp_path, b={("base", "ref_cold"): tts_reply(nudged(1))})
    canon = canons(ev)
    v = judge(ev)
    assert v.status is Status.PENDING
    assert v.reason == (
        "parity unverified: serial output varies (1 difference(s) between repeats on one slot or across two "
        "fresh starts)"
    )
    assert (v.measured, v.varies, v.tolerance_applies, v.outputs_compared) == (True, True, False, 3)
    cold = {"start_a": canon[A, "ref_cold"], "start_b": canon[B, "ref_cold"]}
    assert cold["start_a"] != cold["start_b"]
    assert v.facts == {"differences": [{"req": "base", "phase": "ref_cold", **cold}]}


def test_a_warm_repeat_that_differs_is_serial_variation_in_both_comparisons(tmp_path: Path) -> None:
    ev = baseline(tmp_path, a={("base", "ref_warm2"): tts_reply(nudged(1))})
    canon = canons(ev)
    v = judge(ev)
    assert v.status is Status.PENDING and v.varies and not v.tolerance_applies
    assert "(2 difference(s) between" in v.reason
    assert v.facts["differences"] == [
        {"req": "base", "phase": "ref_warm2", "start_a": canon[A, "ref_warm2"], "start_b": canon[B, "ref_warm2"]},
        {"req": "base", "run": A, "warm": canon[A, "ref_warm"], "warm2": canon[A, "ref_warm2"]},
    ]


def test_variation_beyond_the_declared_tolerance_says_so(tmp_path: Path) -> None:
    ev = baseline(tmp_path, b={("base", "ref_warm"): tts_reply(nudged(3))})
    v = judge(ev, tolerance=2)
    assert v.status is Status.PENDING
    assert v.reason == (
        "parity unverified: serial output varies (2 difference(s) between repeats on one slot or across two "
        "fresh starts beyond the declared tolerance 2)"
    )
    why = "max abs sample difference 3 exceeds the declared 2"
    assert [(d.get("phase", d.get("run")), d["tolerance_check"]) for d in listed(v, "differences")] == [
        ("ref_warm", why),
        (B, why),
    ]
    assert v.facts["within_declared_tolerance"] == [] and v.facts["tolerance"] == 2
    assert (v.varies, v.tolerance_applies) == (True, False)


def test_a_tolerance_without_raw_replies_cannot_cover_a_difference(tmp_path: Path) -> None:
    ev = baseline(tmp_path, b={("base", "ref_cold"): tts_reply(nudged(1))})
    v = serial_variation(ev.records(), tolerance=2, volatile=VOLATILE)
    assert v.status is Status.PENDING
    assert listed(v, "differences")[0]["tolerance_check"] == "raw replies not available to apply the tolerance"


@pytest.mark.parametrize(("by", "status"), [(2, Status.PASS), (3, Status.PENDING)])
def test_repeats_within_the_declared_tolerance_make_it_apply(tmp_path: Path, by: int, status: Status) -> None:
    # the wall time differs too: a volatile field, left out of the comparison
    ev = baseline(tmp_path, b={("base", "ref_cold"): tts_reply(nudged(by), wall_ms=7.0)})
    v = judge(ev, tolerance=2)
    assert v.status is status
    if status is Status.PASS:
        assert v.reason == (
            "3 outputs agree across two fresh starts and warm repeats within the declared tolerance (1 repeat(s) "
            "differ by at most 2 LSB, never exact): the tolerance applies"
        )
        assert (v.measured, v.varies, v.tolerance_applies, v.outputs_compared) == (True, True, True, 3)
        assert v.facts == {
            "differences": [],
            "within_declared_tolerance": [{"req": "base", "phase": "ref_cold", "max_abs_sample_diff": 2}],
            "tolerance": 2,
        }
        assert v.evidence["tolerance_applies"] is True


def test_a_tolerated_repeat_beside_an_untolerated_one_does_not_apply_the_tolerance(tmp_path: Path) -> None:
    ev = baseline(
        tmp_path, a={("base", "ref_warm2"): tts_reply(text="other")}, b={("base", "ref_cold"): tts_reply(nudged(1))}
    )
    v = judge(ev, tolerance=2)
    assert v.status is Status.PENDING
    assert (v.varies, v.tolerance_applies) == (True, False)
    assert len(listed(v, "within_declared_tolerance")) == 1
    assert "(2 difference(s) between" in v.reason


def test_the_warm_repeats_of_each_start_are_compared_with_their_warm_run(tmp_path: Path) -> None:
    # Start b's warm and repeated warm both differ from start a's alike: only across starts.
    ev = baseline(tmp_path, b={("base", "ref_warm"): tts_reply(nudged(1)), ("base", "ref_warm2"): tts_reply(nudged(1))})
    v = judge(ev, tolerance=1)
    assert v.status is Status.PASS and v.tolerance_applies
    assert [(t["phase"], t["max_abs_sample_diff"]) for t in listed(v, "within_declared_tolerance")] == [
        ("ref_warm", 1),
        ("ref_warm2", 1),
    ]
    # b's warm repeats differ from each other: within b, tolerated
    ev = baseline(tmp_path / "w", b={("base", "ref_warm2"): tts_reply(nudged(1))})
    v = judge(ev, tolerance=1)
    assert [{k: t[k] for k in ("req", "run")} for t in listed(v, "within_declared_tolerance")[1:]] == [
        {"req": "base", "run": B}
    ]
    assert "(2 repeat(s) differ by at most 1 LSB" in v.reason


# -- not measured --------------------------------------------------------------------------------


def unmeasured(v: SerialVerdict, status: Status, reason: str, **facts: object) -> None:
    assert (v.status, v.reason) == (status, reason)
    assert (v.measured, v.varies, v.tolerance_applies, v.outputs_compared) == (False, False, False, None)
    assert v.facts == facts


@pytest.mark.parametrize("run", [A, B])
def test_a_baseline_start_whose_server_crashed_blocks(tmp_path: Path, run: str) -> None:
    ev = baseline(tmp_path)
    ev.events = [e for e in ev.events if e.get("run") != run]
    crashed = ev.start(run, role="reference", count=1, exe_role="baseline")
    ev.crash(run, crashed)
    what = "server crashed during warm_wave (exit status -11, SIGSEGV)"
    unmeasured(
        judge(ev),
        Status.BLOCKED,
        f"upstream reference start {run} did not complete ({what}): serial repeat variation not measured",
        incomplete={run: what},
    )


def test_a_baseline_start_parval_stopped_blocks(tmp_path: Path) -> None:
    ev = baseline(tmp_path)
    ev.events = [e for e in ev.events if e.get("run") != B]
    attempt = ev.start(B, role="reference", count=1, exe_role="baseline")
    stop = {"kind": "wave_timeout", "run": B, "attempt": attempt, "phase": "ref_cold", "wave": 0, "reason": "hung"}
    ev.events.append(stop)
    ev.end(B, attempt)
    unmeasured(
        judge(ev),
        Status.BLOCKED,
        f"upstream reference start {B} did not complete (stopped: hung): serial repeat variation not measured",
        incomplete={B: "stopped: hung"},
    )


def test_a_standing_baseline_start_without_its_end_is_pending(tmp_path: Path) -> None:
    ev = baseline(tmp_path)
    rec = ev.records()
    del rec.ends[A]  # a start that stands without its end (neither crashed nor stopped)
    unmeasured(
        serial_variation(rec, run_dir=ev.run_dir),
        Status.PENDING,
        f"upstream reference start {A} did not complete (did not complete): serial repeat variation not measured",
        incomplete={A: "did not complete"},
    )


@pytest.mark.parametrize("missing", [A, B])
def test_one_baseline_start_is_not_enough(tmp_path: Path, missing: str) -> None:
    ev = baseline(tmp_path)
    ev.events = [e for e in ev.events if e.get("run") != missing]
    unmeasured(judge(ev), Status.PENDING, "two fresh baseline starts are needed to measure serial repeat variation")


def test_no_baseline_at_all_is_pending(tmp_path: Path) -> None:
    unmeasured(
        judge(Events(tmp_path)),
        Status.PENDING,
        "two fresh baseline starts are needed to measure serial repeat variation",
    )


@pytest.mark.parametrize("run", [A, B])
def test_a_request_a_start_did_not_record_leaves_it_unmeasured(tmp_path: Path, run: str) -> None:
    ev = baseline(tmp_path, names=("base", "other"), skip=((run, "other", "ref_warm"),))
    unmeasured(
        judge(ev),
        Status.PENDING,
        f"{run} recorded no other/ref_warm: serial repeat variation not measured for every request",
    )


def test_the_plans_requests_must_each_be_recorded_and_at_most_six_are_named(tmp_path: Path) -> None:
    ev = baseline(tmp_path)
    unmeasured(
        judge(ev, requests=["base", "x", "y"]),
        Status.PENDING,
        f"{A} recorded no x/ref_cold, x/ref_warm, x/ref_warm2, y/ref_cold, y/ref_warm, y/ref_warm2: serial "
        "repeat variation not measured for every request",
    )
    unmeasured(
        judge(ev, requests=["base", "a", "z", "m"]),
        Status.PENDING,
        f"{A} recorded no a/ref_cold, a/ref_warm, a/ref_warm2, m/ref_cold, m/ref_warm, m/ref_warm2: serial "
        "repeat variation not measured for every request",
    )
    # the plan's requests recorded: measured, whatever else was recorded too
    v = judge(baseline(tmp_path / "both", names=("base", "other")), requests=["base"])
    assert v.status is Status.PASS and v.outputs_compared == 6


def test_a_request_only_start_a_recorded_beyond_the_plans_leaves_it_unmeasured(tmp_path: Path) -> None:
    ev = baseline(tmp_path, names=("base", "other"), skip=tuple((B, "other", p) for p in PHASES))
    unmeasured(judge(ev, requests=["base"]), Status.PENDING, "other/ref_cold: no valid output in one of the starts")


def test_only_the_reference_phases_are_serial_repeats(tmp_path: Path) -> None:
    # a serial performance request start a made (and b did not) is no repeat to compare
    ev = baseline(tmp_path)
    ev.events.insert(2, {**ev.events[1], "phase": "perf_serial", "output": {"valid": False}})
    v = judge(ev)
    assert v.status is Status.PASS and v.outputs_compared == 3


@pytest.mark.parametrize("run", [A, B])
def test_a_start_without_a_valid_output_leaves_it_unmeasured(tmp_path: Path, run: str) -> None:
    ev = baseline(tmp_path)
    for e in ev.events:
        if e.get("run") == run and e.get("phase") == "ref_warm":
            e["output"] = {"valid": False, "problem": "not a WAV"}
    unmeasured(judge(ev), Status.PENDING, "base/ref_warm: no valid output in one of the starts")


def test_an_output_missing_from_a_start_leaves_it_unmeasured(tmp_path: Path) -> None:
    ev = baseline(tmp_path)
    for e in ev.events:
        if e.get("run") == B and e.get("phase") == "ref_cold":
            e["output"] = None
    unmeasured(judge(ev), Status.PENDING, "base/ref_cold: no valid output in one of the starts")
