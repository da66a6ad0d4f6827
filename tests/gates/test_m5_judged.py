"""M5 judged exactly: every branch of M5.sampled, M5.peaks, M5.stable and M5.baseline on
synthetic sampler streams, with the reasons and evidence each gives."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from parval.gates import m5
from parval.gates.m5 import (
    CountInputs,
    StabilisationRule,
    StartMemory,
    m5_baseline,
    m5_peaks,
    m5_sampled,
    m5_stable,
    summarise_start,
)
from parval.status import Result, Status
from tests.test_memory_gate import RULE, UNAVAILABLE, make_start

HOST_INCLUDES = m5.INCLUDES["host_rss"]
NVML = "nvml v2 memory struct"
INTERVALS = "host every 50 ms (achieved median 50.0 ms), gpu every 10 ms"
GPU_INTERVALS = "host every 50 ms (achieved median 50.0 ms), gpu every 10 ms (achieved median 50.0 ms)"


def inputs(
    starts: list[StartMemory],
    rule: StabilisationRule | None = RULE,
    *,
    gpu_required: bool = False,
    baseline: list[StartMemory] | None = None,
    reason: str | None = None,
    expected: int = 0,
    count: int = 2,
) -> CountInputs:
    return CountInputs(count, [summarise_start(s) for s in starts], rule, gpu_required, baseline, reason, expected)


def starts(n: int = 3, **kw: Any) -> list[StartMemory]:
    return [make_start(start_index=i, **kw) for i in range(1, n + 1)]


def without(start: StartMemory, kind: str, *phases: str) -> StartMemory:
    """The start with its `kind` samples of `phases` removed."""
    kept = [s for s in start.samples if not (s["kind"] == kind and s["phase"] in phases)]
    return replace(start, samples=kept)


def unrecorded(start: StartMemory) -> StartMemory:
    return replace(start, sampler_recorded=False)


# --- M5.sampled ------------------------------------------------------------------------


def test_sampled_passes_on_every_phase_group_with_gpu_where_required() -> None:
    r = m5_sampled(inputs(starts(3, gpu=True), gpu_required=True))
    assert r.status is Status.PASS
    assert r.reason == (
        "host memory sampled in every start (3) across idle/cold/warm/unload/reload; GPU memory sampled in every "
        f"start ({NVML}); {GPU_INTERVALS}"
    )
    assert r.limitations == ()
    assert r.evidence["required_phase_groups"] == ["idle", "cold", "warm", "unload", "reload"]
    assert r.evidence["interval"] == {"gpu_interval_s": 0.01, "host_interval_s": 0.05}
    assert r.evidence["rests_on"] == {"starts with host samples in every phase group": 3}
    first = r.evidence["starts"][0]
    assert first["start_index"] == 1 and first["gpu"] == NVML
    assert first["missing"] == {"host": [], "gpu": []}
    assert first["samples"]["host"] > 0 and first["samples"]["gpu"] == first["samples"]["host"]
    assert first["achieved_interval_s"]["host"]["median_s"] == pytest.approx(0.05)
    assert "unload" in first["phases_sampled"]["host"]


def test_sampled_on_a_cpu_backend_names_gpu_memory_not_applicable() -> None:
    r = m5_sampled(inputs(starts(2)))
    assert r.status is Status.PASS
    assert r.reason == (
        "host memory sampled in every start (2) across idle/cold/warm/unload/reload; GPU memory not applicable; "
        + INTERVALS
    )
    assert r.limitations == ("GPU memory not applicable for this backend (plan: gpu_required = false)",)


def test_sampled_is_pending_with_too_few_starts() -> None:
    r = m5_sampled(inputs(starts(2), expected=3))
    assert (r.status, r.reason) == (Status.PENDING, "2 start(s) with memory samples, 3 needed")
    assert m5_sampled(inputs(starts(3), expected=3)).status is Status.PASS


def test_sampled_names_each_start_and_phase_group_without_host_samples() -> None:
    gappy = [make_start(start_index=1, phases=("startup", "cold", "warm")), *starts(1)]
    gappy[1] = without(make_start(start_index=2), "host", "reload")
    r = m5_sampled(inputs(gappy))
    assert r.status is Status.PENDING
    assert r.reason == (
        "host memory incomplete: start 1: no host samples in unload, reload; start 2: no host samples in reload; "
        f"GPU memory not applicable; {INTERVALS}"
    )
    assert r.evidence["starts"][0]["missing"] == {"host": ["unload", "reload"], "gpu": []}


def test_sampled_gpu_unavailable_where_required_is_pending_with_the_samplers_words() -> None:
    r = m5_sampled(inputs(starts(1), gpu_required=True))
    assert r.status is Status.PENDING
    assert r.reason == (
        "host memory sampled in every start (1) across idle/cold/warm/unload/reload; "
        f"GPU memory PENDING ({UNAVAILABLE}); {INTERVALS}"
    )
    assert r.limitations == (f"GPU memory PENDING: {UNAVAILABLE}",)


def test_sampled_gpu_gaps_count_only_where_gpu_memory_is_required() -> None:
    gap = [without(make_start(start_index=1, gpu=True), "gpu", "reload")]
    r = m5_sampled(inputs(gap, gpu_required=True))
    assert r.status is Status.PENDING
    assert r.reason == (
        "host memory sampled in every start (1) across idle/cold/warm/unload/reload; "
        f"GPU memory incomplete: start 1: no GPU samples in reload; {GPU_INTERVALS}"
    )
    assert r.evidence["starts"][0]["missing"] == {"host": [], "gpu": ["reload"]}
    assert r.limitations == ()
    cpu = m5_sampled(inputs(gap, gpu_required=False))
    assert cpu.status is Status.PASS and "GPU memory not applicable" in cpu.reason


def test_sampled_without_the_samplers_record_is_pending() -> None:
    r = m5_sampled(inputs([unrecorded(make_start(start_index=1)), make_start(start_index=2)]))
    assert r.status is Status.PENDING
    assert r.reason == (
        "host memory incomplete: start(s) [1]: the sampler's record (intervals) is missing; "
        f"GPU memory not applicable; {INTERVALS}"
    )
    both = m5_sampled(inputs([unrecorded(make_start(start_index=1, phases=("startup", "cold", "warm")))]))
    assert both.reason.startswith(
        "host memory incomplete: start 1: no host samples in unload, reload; "
        "start(s) [1]: the sampler's record (intervals) is missing; "
    )


def test_sampled_reports_intervals_as_recorded() -> None:
    no_intervals = [replace(make_start(start_index=1), interval={})]
    r = m5_sampled(inputs(no_intervals))
    assert r.reason.endswith("host interval not recorded (achieved median 50.0 ms), gpu interval not recorded")
    short_names = [replace(make_start(start_index=1), interval={"host": 0.2, "gpu": 0.0125})]
    assert m5_sampled(inputs(short_names)).reason.endswith(
        "host every 200 ms (achieved median 50.0 ms), gpu every 12 ms"
    )
    # the median over starts of each start's achieved median
    slow = make_start(start_index=2)
    slow = replace(slow, samples=[{**s, "t": s["t"] * 3} for s in slow.samples])
    faster = make_start(start_index=3)
    faster = replace(faster, samples=[{**s, "t": s["t"] * 2} for s in faster.samples])
    assert "(achieved median 100.0 ms)" in m5_sampled(inputs([make_start(start_index=1), slow, faster])).reason
    with pytest.raises(TypeError, match="unsupported operand"):
        m5_sampled(inputs([replace(make_start(start_index=1), interval={"host_interval_s": "fast"})]))


# --- M5.peaks ----------------------------------------------------------------------------


def test_peaks_passes_with_the_largest_first_request_peak_of_every_metric() -> None:
    two = [make_start(start_index=1, gpu=True), make_start(start_index=2, gpu=True, loaded=700.0)]
    r = m5_peaks(inputs(two, gpu_required=True))
    assert r.status is Status.PASS
    assert r.reason == (
        "first-request peak (max over 2 starts): host_rss 950.0 MiB, host_pss 855.0 MiB, gpu_device 9500.0 MiB, "
        f"gpu_process 9200.0 MiB; includes {HOST_INCLUDES}"
    )
    assert r.evidence["max_first_request_peak_mib"] == {
        "host_rss": 950.0,
        "host_pss": 855.0,
        "gpu_device": 9500.0,
        "gpu_process": 9200.0,
    }
    assert r.evidence["includes"] == m5.INCLUDES
    assert r.evidence["note"] == "retained-after-unload is reported, not judged: a logical unload is not freed memory"
    assert r.evidence["rests_on"] == {"first-request peaks": 4}
    assert r.evidence["starts"][0] == {
        "start_index": 1,
        "host_rss": {
            "first_request_peak_mib": 850.0,
            "idle_baseline_mib": 100.0,
            "first_request_over_idle_mib": 750.0,
            "retained_after_unload_mib": 150.0,
            "residue_mib": 50.0,
        },
        "host_pss": {
            "first_request_peak_mib": 765.0,
            "idle_baseline_mib": 90.0,
            "first_request_over_idle_mib": 675.0,
            "retained_after_unload_mib": 135.0,
            "residue_mib": 45.0,
        },
        "gpu_device": {
            "first_request_peak_mib": 8500.0,
            "idle_baseline_mib": 1000.0,
            "first_request_over_idle_mib": 7500.0,
            "retained_after_unload_mib": 1500.0,
            "residue_mib": 500.0,
        },
        "gpu_process": {
            "first_request_peak_mib": 8200.0,
            "idle_baseline_mib": 700.0,
            "first_request_over_idle_mib": 7500.0,
            "retained_after_unload_mib": 1200.0,
            "residue_mib": 500.0,
        },
    }


def test_peaks_on_a_cpu_backend_reports_host_memory_only() -> None:
    r = m5_peaks(inputs(starts(1, gpu=True), gpu_required=False))
    assert r.status is Status.PASS
    assert r.reason == (
        f"first-request peak (max over 1 starts): host_rss 850.0 MiB, host_pss 765.0 MiB; includes {HOST_INCLUDES}"
    )
    assert set(r.evidence["includes"]) == {"host_rss", "host_pss"}
    assert set(r.evidence["starts"][0]) == {"start_index", "host_rss", "host_pss"}
    no_unload = m5_peaks(inputs([make_start(start_index=1, phases=("startup", "cold", "warm"))]))
    assert no_unload.status is Status.PASS
    assert no_unload.evidence["starts"][0]["host_rss"]["residue_mib"] is None
    assert no_unload.evidence["starts"][0]["host_rss"]["retained_after_unload_mib"] is None


def test_peaks_is_pending_with_too_few_starts() -> None:
    r = m5_peaks(inputs(starts(1), expected=2))
    assert (r.status, r.reason) == (Status.PENDING, "1 start(s) with memory samples, 2 needed")
    assert m5_peaks(inputs(starts(2), expected=2)).status is Status.PASS


@pytest.mark.parametrize(
    ("start", "gpu_required", "reason"),
    [
        (
            make_start(start_index=1, phases=("startup", "warm", "unload", "reload")),
            False,
            "first-request peak (max over 1 starts): none; host first-request peak missing (no cold_load/cold_wave "
            "host samples) in some start",
        ),
        (
            make_start(start_index=1),
            True,
            "first-request peak (max over 1 starts): host_rss 850.0 MiB, host_pss 765.0 MiB; GPU first-request peak "
            f"not sampled: {UNAVAILABLE}",
        ),
        (
            without(make_start(start_index=1, gpu=True), "gpu", "cold_load", "cold_wave"),
            True,
            "first-request peak (max over 1 starts): host_rss 850.0 MiB, host_pss 765.0 MiB; GPU first-request peak "
            "missing (no cold GPU samples) in some start",
        ),
        (
            unrecorded(make_start(start_index=1)),
            False,
            "first-request peak (max over 1 starts): host_rss 850.0 MiB, host_pss 765.0 MiB; the sampler's record of "
            "start(s) [1] is missing",
        ),
    ],
    ids=["no-cold-host", "gpu-unavailable", "no-cold-gpu", "unrecorded"],
)
def test_peaks_is_pending_naming_what_is_missing(start: StartMemory, gpu_required: bool, reason: str) -> None:
    r = m5_peaks(inputs([start], gpu_required=gpu_required))
    assert (r.status, r.reason) == (Status.PENDING, reason)


def test_peaks_missing_in_one_start_of_several_is_pending() -> None:
    mixed = [make_start(start_index=1), make_start(start_index=2, phases=("startup", "warm", "unload", "reload"))]
    r = m5_peaks(inputs(mixed))
    assert r.status is Status.PENDING
    assert r.reason == (
        "first-request peak (max over 2 starts): host_rss 850.0 MiB, host_pss 765.0 MiB; host first-request peak "
        "missing (no cold_load/cold_wave host samples) in some start"
    )
    gpu_mixed = [
        make_start(start_index=1, gpu=True),
        without(make_start(start_index=2, gpu=True), "gpu", "cold_load", "cold_wave"),
    ]
    assert m5_peaks(inputs(gpu_mixed, gpu_required=True)).reason.endswith(
        "GPU first-request peak missing (no cold GPU samples) in some start"
    )


def test_peaks_without_any_peak_is_pending() -> None:
    host_less = replace(make_start(start_index=1), samples=[])
    r = m5_peaks(inputs([host_less]))
    assert r.status is Status.PENDING
    assert r.reason == (
        "first-request peak (max over 1 starts): none; host first-request peak missing (no cold_load/cold_wave "
        "host samples) in some start"
    )
    assert r.evidence["max_first_request_peak_mib"] == {}
    assert r.evidence["starts"] == [{"start_index": 1}]


# --- M5.baseline -------------------------------------------------------------------------


def test_baseline_is_not_applicable_unless_the_plan_declares_a_comparison() -> None:
    r = m5_baseline(inputs(starts(2), baseline=starts(1)))
    assert r.status is Status.NOT_APPLICABLE
    assert r.reason == (
        "the plan declares no retention investigation or memory change (memory.baseline_comparison), so the "
        "candidate's memory is not compared with the baseline build's"
    )


@pytest.mark.parametrize("baseline", [None, [], [make_start(count=3, start_index=1)]], ids=["none", "empty", "other"])
def test_baseline_declared_but_not_recorded_at_the_count_is_pending(baseline: list[StartMemory] | None) -> None:
    r = m5_baseline(inputs(starts(2), baseline=baseline, reason="allocator change"))
    assert r.status is Status.PENDING
    assert r.reason == (
        "a baseline comparison is declared (allocator change), but no baseline memory start at count 2 was "
        "recorded; comparison not made"
    )


def test_baseline_compares_the_medians_at_the_same_count() -> None:
    base = [make_start(count=2, start_index=1, loaded=500.0, residue=40.0), make_start(count=3, start_index=1)]
    cand = [make_start(start_index=1), make_start(start_index=2), make_start(start_index=3, loaded=900.0)]
    r = m5_baseline(inputs(cand, baseline=base, reason="allocator change"))
    assert r.status is Status.PASS
    assert r.reason == (
        "compared with the baseline build at count 2 (1 baseline / 3 candidate starts; medians over starts; "
        "declared: allocator change): host_rss first_request_peak_mib 750.0 MiB -> 850.0 MiB, "
        "warm_steady_state_mib 700.0 MiB -> 800.0 MiB, residue_mib 40.0 MiB -> 50.0 MiB"
    )
    assert r.evidence["comparison"] == {
        "host_rss": {
            "idle_baseline_mib": {"baseline": 100.0, "candidate": 100.0, "delta": 0.0},
            "first_request_peak_mib": {"baseline": 750.0, "candidate": 850.0, "delta": 100.0},
            "warm_steady_state_mib": {"baseline": 700.0, "candidate": 800.0, "delta": 100.0},
            "residue_mib": {"baseline": 40.0, "candidate": 50.0, "delta": 10.0},
        },
        "host_pss": {
            "idle_baseline_mib": {"baseline": 90.0, "candidate": 90.0, "delta": 0.0},
            "first_request_peak_mib": {"baseline": 675.0, "candidate": 765.0, "delta": 90.0},
            "warm_steady_state_mib": {"baseline": 630.0, "candidate": 720.0, "delta": 90.0},
            "residue_mib": {"baseline": 36.0, "candidate": 45.0, "delta": 9.0},
        },
    }
    assert (r.evidence["baseline_starts"], r.evidence["candidate_starts"]) == (1, 3)
    assert r.evidence["rests_on"] == {"baseline starts": 1, "candidate starts": 3, "host_rss comparison": 4}


def test_baseline_without_figures_on_one_side_says_na() -> None:
    # no unload on the baseline: no residue there, so no delta
    base = [make_start(count=2, start_index=1, phases=("startup", "cold", "warm"))]
    r = m5_baseline(inputs(starts(1), baseline=base, reason="retention"))
    assert r.status is Status.PASS
    assert r.reason.endswith("residue_mib n/a -> 50.0 MiB")
    assert r.evidence["comparison"]["host_rss"]["residue_mib"] == {"baseline": None, "candidate": 50.0, "delta": None}
    # no repeated-use waves on the candidate: no warm steady state
    cand = [make_start(start_index=1, phases=("startup", "cold", "unload", "reload"))]
    warm = m5_baseline(inputs(cand, baseline=starts(1), reason="retention")).evidence["comparison"]["host_rss"]
    assert warm["warm_steady_state_mib"] == {"baseline": 800.0, "candidate": None, "delta": None}


def test_baseline_is_pending_with_too_few_candidate_starts() -> None:
    r = m5_baseline(inputs(starts(2), baseline=starts(1), reason="retention", expected=3))
    assert (r.status, r.reason) == (Status.PENDING, "2 candidate start(s) with memory samples at count 2, 3 needed")
    assert m5_baseline(inputs(starts(3), baseline=starts(1), reason="retention", expected=3)).status is Status.PASS


@pytest.mark.parametrize("side", ["baseline", "candidate"])
@pytest.mark.parametrize("how", ["no-samples", "unrecorded", "gpu-only"])
def test_baseline_with_a_start_that_recorded_no_host_memory_is_pending(side: str, how: str) -> None:
    empty = make_start(start_index=2)
    if how == "no-samples":
        empty = replace(empty, samples=[])
    elif how == "unrecorded":
        empty = unrecorded(empty)
    else:
        empty = replace(empty, samples=[{**s, "kind": "gpu", "device_used_mib": 1.0} for s in empty.samples])
    cand = [make_start(start_index=1), empty] if side == "candidate" else starts(2)
    base = [empty] if side == "baseline" else [make_start(start_index=1)]
    r = m5_baseline(inputs(cand, baseline=base, reason="retention"))
    assert (r.status, r.reason) == (Status.PENDING, "start(s) [2] recorded no host memory samples at count 2")


def test_baseline_without_host_rss_on_both_builds_is_pending() -> None:
    pss_only = make_start(start_index=1)
    pss_only = replace(pss_only, samples=[{k: v for k, v in s.items() if k != "rss_mib"} for s in pss_only.samples])
    r = m5_baseline(inputs(starts(1), baseline=[pss_only], reason="retention"))
    assert (r.status, r.reason) == (Status.PENDING, "no host memory figure measured on both builds at count 2")


# --- M5.stable ---------------------------------------------------------------------------

GUARD = {"t": 1.0, "phase": "warm_wave:3", "kind": "gpu", "device_used_mib": 23600.0, "guard_mib": 23552.0}
SETTLED_2 = (
    "host_rss residue after unload settled at +50.0 … +50.0 MiB over the idle level before the first load; "
    "host_rss residue after unload: 2 of 2 starts end flat (within 1 MiB) for at least 2 cycles (flat tail 2 of 2, "
    "2 of 2 cycles); shared slope over them +0.00 MiB/cycle (95 % upper +0.00: +0.0 MiB over 1 cycles, under 1 MiB); "
    "rise over the whole range +0.0, +0.0 MiB (2 starts x 2 unload/reload cycles; start 1 residues +50.0, +50.0 MiB; "
    "start 2 residues +50.0, +50.0 MiB)"
)
GUARD_TAIL = "a guard stop is a resource-budget result, never a reason to lower quality settings"


def stable(inp: CountInputs) -> Result:
    r = m5_stable(inp)
    assert r.limitations == tuple(m5.LIMITATIONS)
    return r


def test_stable_is_blocked_by_a_guard_stop_in_any_start() -> None:
    r = stable(inputs([make_start(start_index=1), make_start(start_index=2, guard_stop=GUARD)]))
    assert r.status is Status.BLOCKED
    assert r.reason == f"memory guard: 23600 MiB >= 23552 MiB (start 2, phase warm_wave:3); {GUARD_TAIL}"
    assert r.evidence["guard_stops"] == [{"start_index": 2, **GUARD}]
    # the retention verdict is not folded into a BLOCKED one
    assert "residue" not in r.reason and r.evidence["retention"][0]["status"] == "pass"
    both = stable(inputs([make_start(start_index=i, guard_stop={**GUARD, "phase": f"p{i}"}) for i in (1, 2)]))
    assert both.reason.startswith("memory guard: 23600 MiB >= 23552 MiB (start 1, phase p1); ")
    assert [g["start_index"] for g in both.evidence["guard_stops"]] == [1, 2]


def test_stable_guard_stop_reason_and_limit_as_recorded() -> None:
    said = stable(inputs([make_start(start_index=1, guard_stop={"phase": "cold_load", "reason": "the guard said so"})]))
    assert said.reason == f"the guard said so (start 1, phase cold_load); {GUARD_TAIL}"
    bare = stable(inputs([make_start(start_index=1, guard_stop={"phase": "x"})]))
    assert bare.reason == f"memory guard: ? MiB >= ? MiB (start 1, phase x); {GUARD_TAIL}"
    # the limit from the sampler's intervals where the stop does not carry it
    limited = replace(make_start(start_index=1, guard_stop={"device_used_mib": 700.5}), interval={"guard_mib": 640})
    assert stable(inputs([limited])).reason.startswith("memory guard: 700 MiB >= 640 MiB (start 1, phase None); ")


def test_stable_is_pending_with_too_few_starts() -> None:
    r = stable(inputs(starts(2), expected=3))
    assert r.status is Status.PENDING
    assert r.reason == f"2 start(s) with memory samples, 3 needed; {SETTLED_2}"
    assert stable(inputs(starts(3), expected=3)).status is Status.PASS


def test_stable_without_the_samplers_record_is_pending() -> None:
    r = stable(inputs([unrecorded(make_start(start_index=1)), make_start(start_index=2)]))
    assert r.status is Status.PENDING
    assert r.reason == f"the sampler's record of start(s) [1] is missing: a guard stop cannot be ruled out; {SETTLED_2}"


def test_stable_without_a_rule_is_pending_with_the_tested_range() -> None:
    r = stable(inputs(starts(2), rule=None))
    assert r.status is Status.PENDING
    assert r.reason == (
        "no stabilisation rule declared in the plan; tested range at count 2: 2 starts x 10 repeated-use waves "
        "(warm_wave:1 … mixed_wave:10) x 2 requests = 40 requests; growth diagnostic kept in evidence (no bound is "
        "inferred from the data); host_rss residue after unload last +50.0 … +50.0 MiB over the idle level before "
        "the first load (2 starts x 2 unload/reload cycles)"
    )
    assert r.evidence["rule"] is None
    assert [g["window_waves"] for g in r.evidence["growth"]["host_rss"]] == [10, 10]
    assert r.evidence["retention"][0]["status"] == "unjudged"


def test_stable_on_a_gpu_metric_where_gpu_memory_is_not_required_or_not_sampled() -> None:
    gpu_rule = StabilisationRule(5, 10.0, "gpu_process")
    r = stable(inputs(starts(2, gpu=True), rule=gpu_rule, gpu_required=False))
    assert r.status is Status.PENDING
    assert r.reason.startswith("rule metric gpu_process but GPU memory is not applicable; ")
    r = stable(inputs(starts(2), rule=gpu_rule, gpu_required=True))
    assert (r.status, r.reason) == (Status.PENDING, f"rule metric gpu_process not sampled: {UNAVAILABLE}")
    no_pss = [
        replace(s, samples=[{k: v for k, v in x.items() if k != "pss_mib"} for x in s.samples]) for s in starts(2)
    ]
    r = stable(inputs(no_pss, rule=StabilisationRule(5, 10.0, "host_pss")))
    assert (r.status, r.reason) == (Status.PENDING, "rule metric host_pss not sampled: no samples")
    r = stable(inputs(starts(2, gpu=True), rule=gpu_rule, gpu_required=True))
    assert r.status is Status.PASS
    assert r.reason.startswith("gpu_process per-wave peak stopped growing: gpu_process per-wave peak ")


def test_stable_is_pending_with_fewer_than_k_repeated_use_waves_in_any_start() -> None:
    few = [make_start(start_index=1, waves=3), make_start(start_index=2, waves=4), make_start(start_index=3)]
    r = stable(inputs(few))
    assert r.status is Status.PENDING
    assert r.reason.startswith(
        "not enough waves: start 1 has 3; start 2 has 4 < K=5 repeated-use waves (host_rss); tested range at count "
        "2: start 1: 3 repeated-use waves (warm_wave:1 … mixed_wave:3), 6 requests; start 2: 4 repeated-use waves "
        "(warm_wave:1 … mixed_wave:4), 8 requests; start 3: 10 repeated-use waves (warm_wave:1 … mixed_wave:10), "
        "20 requests; host_rss residue after unload settled at "
    )
    exactly_k = stable(inputs(starts(2, waves=5)))
    assert exactly_k.status is Status.PASS, exactly_k.reason


def test_stable_passes_when_every_start_ends_flat_under_the_bound() -> None:
    r = stable(inputs(starts(2)))
    assert r.status is Status.PASS
    assert r.reason == (
        "host_rss per-wave peak stopped growing: host_rss per-wave peak (every repeated-use wave): 2 of 2 starts end "
        "flat (within 1 MiB) for at least 5 waves (flat tail 10 of 10, 10 of 10 waves); shared slope over them "
        "+0.00 MiB/wave (95 % upper +0.00: +0.0 MiB over 9 waves, under 1 MiB); rise over the whole range +0.0, "
        "+0.0 MiB; grew at most +0.0 MiB over the last 5 waves in every start (declared bound < 10 MiB); tested "
        "range at count 2: 2 starts x 10 repeated-use waves (warm_wave:1 … mixed_wave:10) x 2 requests = 40 "
        f"requests; {SETTLED_2}"
    )
    assert r.evidence["rests_on"] == {"per-wave growth of each start": 2, "trend": 11, "declared bound": 10.0}
    assert r.evidence["rule"] == {"last_k_waves": 5, "max_growth_mib": 10.0, "metric": "host_rss"}
    assert r.evidence["trend"]["stopped"] is True
    assert set(r.evidence["growth"]) == {"host_rss", "host_pss"}
    assert r.evidence["retained_after_unload"]["host_rss"][0]["start_index"] == 1
    assert r.evidence["retained_after_unload"]["host_rss"][0]["residue_mib"] == 50.0
    assert [x["metric"] for x in r.evidence["retention"]] == ["host_rss"]


def test_stable_window_growth_at_the_bound_is_not_a_pass() -> None:
    """A flat series whose last-K growth reaches the declared bound is not PASS, however
    flat it ends; just under the bound it is."""
    dipped = starts(2, waves=20)
    for st in dipped:
        for smp in st.samples:
            if smp["phase"] == "mixed_wave:16":  # the first wave of the last 5, 0.5 MiB low
                smp["rss_mib"] -= 0.5
    under = stable(inputs(dipped, rule=StabilisationRule(5, 0.6)))
    assert under.status is Status.PASS, under.reason
    assert "grew at most +0.5 MiB over the last 5 waves in every start (declared bound < 0.6 MiB)" in under.reason
    at = stable(inputs(dipped, rule=StabilisationRule(5, 0.5)))
    assert at.status is Status.PENDING, at.reason


def test_stable_fails_on_growth_every_wave_in_every_start() -> None:
    r = stable(inputs(starts(2, growth=3.0)))
    assert r.status is Status.FAIL
    assert r.reason.startswith(
        "continuing growth in every start, at or above the declared bound (10 MiB): host_rss per-wave peak (every "
        "repeated-use wave) slope over the whole range: start 1 +3.00 MiB/wave (95 % lower +3.00); start 2 "
        "+3.00 MiB/wave (95 % lower +3.00); fitted rise over the whole range +27.0, +27.0 MiB; host_rss per-wave "
        "peak (every repeated-use wave): 0 of 2 starts end flat (within 1 MiB) for at least 5 waves (flat tail 1 of "
        "10, 1 of 10 waves); no slope can be fitted over them; rise over the whole range +27.0, +27.0 MiB; start 1: "
        "+3.0 MiB/wave over the last 5 waves (+12.0 MiB; per wave +3.0, +3.0, +3.0, +3.0, +3.0, +3.0, +3.0, +3.0, "
        "+3.0 MiB); start 2: +3.0 MiB/wave over the last 5 waves (+12.0 MiB; per wave +3.0, +3.0, +3.0, +3.0, "
        "+3.0, +3.0, +3.0, +3.0, +3.0 MiB); no baseline memory start at count 2 to compare with "
        "(memory.baseline_comparison is not declared); tested range at count 2: 2 starts x 10 repeated-use waves "
        f"(warm_wave:1 … mixed_wave:10) x 2 requests = 40 requests; {SETTLED_2}"
    )
    assert [v["start_index"] for v in r.evidence["violation"]] == [1, 2]
    assert r.evidence["violation"][0]["window_growth_mib"] == 12.0


def test_stable_fails_on_a_fitted_rise_that_reaches_the_bound_without_growing_every_wave() -> None:
    late = starts(2, growth=4.0, growth_from_wave=5)
    r = stable(inputs(late))
    assert r.status is Status.FAIL, r.reason
    assert "fitted rise over the whole range " in r.reason
    # the violation is the window growth that reached the bound (16 MiB over the last 5 waves)
    assert [v["window_growth_mib"] for v in r.evidence["violation"]] == [16.0, 16.0]
    # under a bound the fitted rise does not reach, the same growth is not a FAIL
    loose = stable(inputs(late, rule=StabilisationRule(5, 64.0)))
    assert loose.status is Status.PENDING, loose.reason


def test_stable_growth_in_some_starts_only_is_pending_with_the_baseline_named() -> None:
    one = [make_start(start_index=1, growth=4.0), make_start(start_index=2)]
    r = stable(inputs(one, baseline=starts(2), reason="retention"))
    assert r.status is Status.PENDING
    assert r.reason.startswith(
        "host_rss per-wave peak has not been shown to stop growing (investigate; uncertain growth stays pending): "
        "host_rss per-wave peak (every repeated-use wave): 1 of 2 starts end flat"
    )
    assert "; baseline build at count 2, host_rss per-wave peak (every repeated-use wave)" not in r.reason
    assert "; baseline build at count 2, host_rss per-wave peak: 2 of 2 starts end flat" in r.reason
    assert ": its growth stopped; tested range at count 2" in r.reason
    declared = stable(inputs(one, reason="retention"))
    assert "; no baseline memory start at count 2 to compare with; tested range" in declared.reason
    other_count = stable(inputs(one, baseline=starts(2, count=3), reason="retention"))
    assert "; no baseline memory start at count 2 to compare with; tested range" in other_count.reason
    one_wave = stable(inputs(one, baseline=starts(2, waves=1), reason="retention"))
    assert "; no baseline memory start at count 2 to compare with; tested range" in one_wave.reason


def test_stable_per_wave_pass_with_residue_growing_every_cycle_fails() -> None:
    leaky = starts(2, cycles=3, residue_growth=12.0)
    r = stable(inputs(leaky))
    assert r.status is Status.FAIL
    assert r.reason.startswith(
        "host_rss retained after unload grows with every unload/reload cycle in every start (memory kept after a "
        "logical unload): start 1 residues +50.0, +62.0, +74.0 MiB (per cycle +12.0, +12.0 MiB, bound 10 MiB); "
    )
    assert "; per-wave: host_rss per-wave peak stopped growing: " in r.reason
    assert [v["metric"] for v in r.evidence["violation"]] == ["host_rss"]
    assert r.evidence["rests_on"] == {"per-wave growth of each start": 2, "trend": 11, "declared bound": 10.0}


def test_stable_per_wave_pass_with_residue_not_shown_to_stop_is_pending() -> None:
    # two cycles in one start only: cannot be told apart from memory kept after each unload
    r = stable(inputs([make_start(start_index=1, cycles=1), make_start(start_index=2)]))
    assert r.status is Status.PENDING
    assert r.reason.startswith(
        "host_rss retained after unload: start 1 has 1 unload/reload cycle(s) with an idle level (at least 2 are "
        "needed to tell a constant residue from memory kept after each unload); per-wave: host_rss per-wave peak "
        "stopped growing: "
    )
    assert r.evidence["rests_on"] == {"per-wave growth of each start": 2, "trend": 11, "declared bound": 10.0}


def test_stable_fail_keeps_its_own_reason_before_the_retention_text() -> None:
    r = stable(inputs(starts(2, growth=3.0, cycles=3, residue_growth=12.0)))
    assert r.status is Status.FAIL
    assert r.reason.startswith("continuing growth in every start, at or above the declared bound (10 MiB): ")
    assert r.reason.endswith("; 2 starts x 3 unload/reload cycles")
    assert "; host_rss retained after unload grows with every unload/reload cycle" in r.reason


def test_stable_judges_gpu_residue_where_sampled() -> None:
    r = stable(inputs(starts(2, gpu=True), gpu_required=True))
    assert [x["metric"] for x in r.evidence["retention"]] == ["host_rss", "gpu_process"]
    assert r.status is Status.PASS
    assert r.reason.endswith(
        "gpu_process residue after unload settled at +500.0 … +500.0 MiB over the idle level before the first load; "
        "gpu_process residue after unload: 2 of 2 starts end flat (within 1 MiB) for at least 2 cycles (flat tail 2 "
        "of 2, 2 of 2 cycles); shared slope over them +0.00 MiB/cycle (95 % upper +0.00: +0.0 MiB over 1 cycles, "
        "under 1 MiB); rise over the whole range +0.0, +0.0 MiB (2 starts x 2 unload/reload cycles; start 1 residues "
        "+500.0, +500.0 MiB; start 2 residues +500.0, +500.0 MiB)"
    )
    assert set(r.evidence["retained_after_unload"]) == {"host_rss", "host_pss", "gpu_device", "gpu_process"}


def shaped(added: list[float], n: int = 2, **kw: Any) -> list[StartMemory]:
    """`n` starts whose k-th repeated-use wave is raised by added[k-1] MiB."""
    out = starts(n, waves=len(added), **kw)
    for st in out:
        for smp in st.samples:
            phase = str(smp["phase"])
            if m5.is_repeat_wave(phase):
                smp["rss_mib"] += added[int(phase.split(":")[1]) - 1]
    return out


def test_stable_fails_on_growth_every_wave_past_the_bound_that_a_line_fits_under() -> None:
    # a rise on every wave, the last one past the bound: the fitted rise (+5.2 MiB) stays under
    # the bound, the last-K growth (+10.45 MiB) does not
    spike = [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 10.5]
    r = stable(inputs(shaped(spike)))
    assert r.status is Status.FAIL, r.reason
    assert "fitted rise over the whole range +5.2, +5.2 MiB" in r.reason
    assert [v["window_growth_mib"] for v in r.evidence["violation"]] == [10.45, 10.45]
    # one wave that did not rise: not growth on every wave, and the line stays under: PENDING
    flat_once = [0.0, 0.01, 0.02, 0.03, 0.03, 0.05, 0.06, 0.07, 0.08, 10.5]
    assert stable(inputs(shaped(flat_once))).status is Status.PENDING


def test_stable_fails_on_a_fitted_rise_exactly_at_the_bound() -> None:
    linear = [float(k) for k in range(10)]  # +1 MiB a wave: +9 MiB fitted, +4 MiB over the last 5
    r = stable(inputs(shaped(linear), rule=StabilisationRule(5, 9.0)))
    assert r.status is Status.FAIL, r.reason
    assert "fitted rise over the whole range +9.0, +9.0 MiB" in r.reason
    # no start's last-K growth reached the bound: the violation is the fitted trend of each start
    assert r.evidence["violation"] == r.evidence["trend"]["starts"]
    assert [v["slope_mib"] for v in r.evidence["violation"]] == [1.0, 1.0]
    assert stable(inputs(shaped(linear), rule=StabilisationRule(5, 9.01))).status is Status.PENDING


def test_stable_pending_texts_keep_their_evidence() -> None:
    for inp in (
        inputs(starts(2), expected=3),
        inputs([unrecorded(make_start(start_index=1))]),
        inputs(starts(1, gpu=True), rule=StabilisationRule(5, 10.0, "gpu_process"), gpu_required=False),
        inputs(starts(1), rule=StabilisationRule(5, 10.0, "gpu_process"), gpu_required=True),
        inputs(starts(1, waves=3)),
        inputs([make_start(start_index=1, growth=4.0), make_start(start_index=2)]),
    ):
        r = stable(inp)
        assert r.status is Status.PENDING
        assert {"rule", "growth", "retained_after_unload", "retention"} <= set(r.evidence), r.reason


def test_stable_names_every_unavailable_gpu_and_the_rule_metrics_range() -> None:
    two = [make_start(start_index=1), replace(make_start(start_index=2), gpu_info="unavailable: no device")]
    r = stable(inputs(two, rule=StabilisationRule(5, 10.0, "gpu_process"), gpu_required=True))
    assert r.reason == f"rule metric gpu_process not sampled: {UNAVAILABLE}; unavailable: no device"
    # the tested range is the rule metric's: host_pss missing from one wave of each start
    gappy = [
        replace(s, samples=[{**x, "pss_mib": None} if x["phase"] == "mixed_wave:10" else x for x in s.samples])
        for s in starts(2, waves=10)
    ]
    pss = stable(inputs(gappy, rule=StabilisationRule(5, 10.0, "host_pss")))
    assert "tested range at count 2: 2 starts x 9 repeated-use waves (warm_wave:1 … mixed_wave:9)" in pss.reason
    rss = stable(inputs(gappy, rule=StabilisationRule(5, 10.0, "host_rss")))
    assert "tested range at count 2: 2 starts x 10 repeated-use waves (warm_wave:1 … mixed_wave:10)" in rss.reason


def test_stable_joins_the_retention_texts_of_every_metric() -> None:
    flat = stable(inputs(starts(2, gpu=True), gpu_required=True))
    assert "start 2 residues +50.0, +50.0 MiB); gpu_process residue after unload settled at +500.0" in flat.reason
    leaky = stable(inputs(starts(2, gpu=True, cycles=3, residue_growth=12.0), gpu_required=True))
    assert leaky.status is Status.FAIL
    assert leaky.reason.startswith("host_rss retained after unload grows with every unload/reload cycle")
    assert "; 2 starts x 3 unload/reload cycles; gpu_process retained after unload grows with every" in leaky.reason
    assert [v["metric"] for v in leaky.evidence["violation"]] == ["host_rss", "gpu_process"]
    short = stable(inputs([make_start(start_index=1, cycles=1, gpu=True)], gpu_required=True))
    assert short.status is Status.PENDING
    assert short.reason.startswith(
        "host_rss retained after unload: start 1 has 1 unload/reload cycle(s) with an idle level (at least 2 are "
        "needed to tell a constant residue from memory kept after each unload); gpu_process retained after unload: "
        "start 1 has 1 unload/reload cycle(s)"
    )


def test_stable_compares_with_a_baseline_of_two_waves_in_its_own_words() -> None:
    growing = [make_start(start_index=1, growth=4.0), make_start(start_index=2)]
    rule = StabilisationRule(2, 64.0)
    base = stable(inputs(growing, rule=rule, baseline=starts(2, waves=2), reason="retention"))
    assert (
        "; baseline build at count 2, host_rss per-wave peak: 2 of 2 starts end flat (within 1 MiB) for at least 2 "
        "waves (flat tail 2 of 2, 2 of 2 waves); shared slope over them +0.00 MiB/wave"
    ) in base.reason
    grows = stable(inputs(growing, rule=rule, baseline=starts(2, growth=4.0), reason="retention"))
    assert "MiB: it has not stopped either; tested range at count 2: " in grows.reason


def test_sampled_and_peaks_name_every_gap_and_unavailable_gpu() -> None:
    second = "unavailable: no device"
    two = [make_start(start_index=1), replace(make_start(start_index=2), gpu_info=second)]
    sampled = m5_sampled(inputs(two, gpu_required=True))
    assert f"; GPU memory PENDING ({UNAVAILABLE}; {second}); " in sampled.reason
    assert sampled.limitations == (f"GPU memory PENDING: {UNAVAILABLE}; {second}",)
    assert m5_peaks(inputs(two, gpu_required=True)).reason.endswith(
        f"; GPU first-request peak not sampled: {UNAVAILABLE}; {second}"
    )
    gaps = [without(make_start(start_index=i, gpu=True), "gpu", "reload", "unload") for i in (1, 2)]
    assert (
        "GPU memory incomplete: start 1: no GPU samples in unload, reload; start 2: no GPU samples in unload, reload; "
    ) in m5_sampled(inputs(gaps, gpu_required=True)).reason
    unrecorded_host_less = unrecorded(make_start(start_index=1, phases=("startup", "warm", "unload", "reload")))
    assert m5_peaks(inputs([unrecorded_host_less])).reason.endswith(
        "; the sampler's record of start(s) [1] is missing; host first-request peak missing (no cold_load/cold_wave "
        "host samples) in some start"
    )
    # the GPU the first start names
    v1 = [make_start(start_index=1, gpu=True), replace(make_start(start_index=2, gpu=True), gpu_info="nvml v1")]
    assert f"GPU memory sampled in every start ({NVML})" in m5_sampled(inputs(v1, gpu_required=True)).reason


def test_baseline_delta_from_a_zero_figure() -> None:
    r = m5_baseline(inputs([make_start(start_index=1, residue=0.0)], baseline=starts(1), reason="retention"))
    assert r.evidence["comparison"]["host_rss"]["residue_mib"] == {"baseline": 50.0, "candidate": 0.0, "delta": -50.0}
    r = m5_baseline(inputs(starts(1), baseline=[make_start(start_index=1, residue=0.0)], reason="retention"))
    assert r.evidence["comparison"]["host_rss"]["residue_mib"] == {"baseline": 0.0, "candidate": 50.0, "delta": 50.0}


# --- the residue after unload (retention), at its boundaries -----------------------------


def residues(rows: list[list[float]], bound: float | None) -> m5.Retention:
    sums: list[Any] = [
        {
            "start_index": i,
            "metrics": {"host_rss": {"retained_after_unload": {"episodes": [{"residue_mib": x} for x in row]}}},
        }
        for i, row in enumerate(rows, 1)
    ]
    return m5.retention(sums, "host_rss", bound)


def test_retention_growth_on_every_cycle_at_the_bound_fails_where_no_line_shows_it() -> None:
    # +10 then +20 MiB: every cycle reaches the bound, but three points fit no slope above zero
    r = residues([[0.0, 10.0, 30.0], [0.0, 10.0, 30.0]], 10.0)
    assert r["status"] == "fail"
    assert r.get("trend", {}).get("grows") is False


def test_retention_fitted_rise_reaches_the_bound_at_equality() -> None:
    assert residues([[0.0, 5.0, 10.0], [0.0, 5.0, 10.0]], 10.0)["status"] == "fail"  # +10 fitted
    assert residues([[0.0, 4.0, 8.0], [0.0, 4.0, 8.0]], 10.0)["status"] == "pending"  # +8 fitted


def test_retention_rows_trend_and_every_short_start() -> None:
    r = residues([[1.0, 1.1], [2.0, 2.1, 2.0]], 1.0)
    assert [row["growth_per_cycle_mib"] for row in r["starts"]] == [[0.1], [0.1, -0.1]]
    assert r["trend"]["stopped"] is True
    assert [t["values_mib"] for t in r["trend"]["starts"]] == [[1.0, 1.1], [2.0, 2.1, 2.0]]
    short = residues([[1.0], [2.0]], 1.0)
    assert short["text"] == (
        "host_rss retained after unload: start 1 has 1 unload/reload cycle(s) with an idle level; start 2 has 1 "
        "unload/reload cycle(s) with an idle level (at least 2 are needed to tell a constant residue from memory "
        "kept after each unload)"
    )
    assert "trend" not in short
