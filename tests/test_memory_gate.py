"""M5 assessment on synthetic sampler streams (no processes, no GPU)."""

from __future__ import annotations

from typing import Any

import pytest

from parval.gates.m5 import StabilisationRule, StartMemory, assess_m5, summarise_start
from parval.status import Result, Status

UNAVAILABLE = "unavailable: NVML init failed: NVML Shared Library Not Found"
INTERVAL = {"gpu_interval_s": 0.01, "host_interval_s": 0.05}


def make_start(
    *,
    count: int = 2,
    start_index: int = 0,
    waves: int = 10,
    growth: float = 0.0,
    growth_from_wave: int = 1,
    idle: float = 100.0,
    loaded: float = 600.0,
    residue: float = 50.0,
    gpu: bool = False,
    phases: tuple[str, ...] = ("startup", "cold", "warm", "unload", "reload", "serial"),
    guard_stop: dict[str, Any] | None = None,
    cycles: int = 2,
    residue_growth: float = 0.0,
) -> StartMemory:
    """A sampler stream: idle, cold load to `loaded`, cold wave, `waves` warm/mixed waves
    whose peak grows by `growth` MiB per wave, then `cycles` unload/reload cycles, the
    k-th unload leaving `residue + k * residue_growth`, then serial."""
    samples: list[dict[str, Any]] = []
    t = 0.0

    def emit(phase: str, values: list[float]) -> None:
        nonlocal t
        for v in values:
            samples.append({"t": t, "phase": phase, "kind": "host", "rss_mib": v, "pss_mib": v * 0.9, "pids": [1]})
            if gpu:
                samples.append(
                    {
                        "t": t + 0.001,
                        "phase": phase,
                        "kind": "gpu",
                        "device_used_mib": v * 10,
                        "device_total_mib": 24576.0,
                        "process_mib": v * 10 - 300,
                    }
                )
            t += 0.05

    if "startup" in phases:
        emit("startup", [idle + 5, idle, idle, idle, idle])
    if "cold" in phases:
        emit("cold_load", [idle + 100, loaded - 50, loaded])
        emit("cold_wave", [loaded + 150, loaded + 250, loaded + 20])
    if "warm" in phases:
        for k in range(1, waves + 1):
            kind = "warm" if k <= 2 else "mixed"
            extra = growth * max(0, k - growth_from_wave)
            peak = loaded + 200 + extra
            emit(f"{kind}_wave:{k}", [loaded + extra, peak, loaded + 10 + extra])
    for k in range(cycles if {"unload", "reload"} & set(phases) else 0):
        kept = residue + k * residue_growth
        if "unload" in phases:
            emit("unload", [loaded + k * residue_growth, idle + kept + 20, idle + kept])
            emit("idle", [idle + kept] * 4)
        if "reload" in phases:
            emit("reload", [loaded - 10 + kept - residue, loaded + kept - residue])
    if "serial" in phases:
        emit("serial", [loaded + 200, loaded + 5])
    return StartMemory(
        count=count,
        start_index=start_index,
        samples=samples,
        gpu_info="nvml v2 memory struct" if gpu else UNAVAILABLE,
        interval=dict(INTERVAL),
        guard_stop=guard_stop,
    )


def by_id(results: list[Result], count: int | None = None) -> dict[str, Result]:
    return {r.id: r for r in results if count is None or r.count == count}


RULE = StabilisationRule(last_k_waves=5, max_growth_mib=10.0)


def test_summary_figures_and_residue() -> None:
    s = summarise_start(make_start(residue=50.0))
    host = s["metrics"]["host_rss"]
    assert host["idle_baseline_mib"] == 100.0
    assert host["first_request_peak_mib"] == 850.0  # cold wave peak, loaded + 250
    assert host["first_request_over_idle_mib"] == 750.0
    assert host["warm_steady_state_mib"] == 800.0
    assert [w["phase"] for w in host["wave_peaks"]][:3] == ["cold_wave", "warm_wave:1", "warm_wave:2"]
    assert len(host["wave_peaks"]) == 11
    retained = host["retained_after_unload"]
    assert retained["source_phase"] == "idle"
    assert retained["residue_mib"] == pytest.approx(50.0)
    assert s["achieved_interval_s"]["host"]["median_s"] == pytest.approx(0.05)
    assert s["metrics"]["gpu_device"] is None  # not sampled


def test_clean_run_passes_under_declared_rule() -> None:
    starts = [make_start(start_index=i, gpu=True) for i in range(3)]
    res = by_id(assess_m5(starts, RULE))
    assert res["M5.stable"].status is Status.PASS
    assert "tested range" in res["M5.stable"].reason
    assert "3 starts x 10 repeated-use waves" in res["M5.stable"].reason
    assert "= 60 requests" in res["M5.stable"].reason
    assert res["M5.sampled"].status is Status.PASS
    assert res["M5.peaks"].status is Status.PASS
    assert "weights + sessions + workspaces" in res["M5.peaks"].reason
    assert res["M5.peaks"].evidence["max_first_request_peak_mib"]["gpu_device"] == 8500.0
    assert res["M5.baseline"].status is Status.NOT_APPLICABLE
    assert "declares no retention investigation or memory change" in res["M5.baseline"].reason
    assert all(r.count == 2 for r in res.values())


def test_growth_on_every_wave_in_every_start_fails_with_diagnostic() -> None:
    starts = [make_start(start_index=i, growth=4.0, gpu=True) for i in range(3)]
    r = by_id(assess_m5(starts, RULE))["M5.stable"]
    assert r.status is Status.FAIL
    assert "+4.0 MiB/wave" in r.reason
    assert r.evidence["growth"]["host_rss"][0]["growth_per_wave_mib"] == [4.0] * 9


def test_growth_that_starts_late_and_reaches_the_bound_fails() -> None:
    # flat for the first waves, then +4 MiB per wave to the end: not on every wave, but the
    # whole range's slope is above zero in every start and its fitted rise reaches the bound
    starts = [make_start(start_index=i, growth=4.0, growth_from_wave=5) for i in range(3)]
    r = by_id(assess_m5(starts, RULE, gpu_required=False))["M5.stable"]
    assert r.status is Status.FAIL, r.reason
    assert "continuing growth in every start, at or above the declared bound (10 MiB)" in r.reason
    assert "flat tail 1 of 10" in r.reason and "+4.0 MiB/wave over the last 5 waves" in r.reason


def test_growth_in_steps_under_the_bound_stays_pending() -> None:
    # +3 MiB every other wave: each step is followed by a flat wave, never by a plateau
    starts = [make_start(start_index=i) for i in range(3)]
    for st in starts:
        for smp in st.samples:
            phase = str(smp["phase"])
            if phase.split(":")[0] in ("warm_wave", "mixed_wave"):
                smp["rss_mib"] += 3.0 * (int(phase.split(":")[1]) // 2)
    r = by_id(assess_m5(starts, StabilisationRule(last_k_waves=5, max_growth_mib=64.0), gpu_required=False))
    assert r["M5.stable"].status is Status.PENDING, r["M5.stable"].reason
    assert "0 of 3 starts end flat" in r["M5.stable"].reason


def test_growth_in_one_start_only_stays_pending() -> None:
    starts = [make_start(start_index=0, growth=4.0)] + [make_start(start_index=i) for i in (1, 2)]
    r = by_id(assess_m5(starts, RULE, gpu_required=False))["M5.stable"]
    assert r.status is Status.PENDING
    assert "2 of 3 starts end flat" in r.reason and "flat tail 1 of 10, 10 of 10, 10 of 10 waves" in r.reason
    assert "start 0 +4.00 MiB/wave (95 % lower +4.00); start 1 +0.00 MiB/wave" in r.reason


def test_no_rule_is_pending_and_never_invents_a_bound() -> None:
    starts = [make_start(start_index=i) for i in range(3)]
    r = by_id(assess_m5(starts, None, gpu_required=False))["M5.stable"]
    assert r.status is Status.PENDING
    assert r.reason.startswith("no stabilisation rule declared in the plan; tested range")
    assert r.evidence["rule"] is None
    assert r.evidence["growth"]["host_rss"][0]["waves"] == 10


def test_not_enough_waves() -> None:
    starts = [make_start(start_index=i, waves=3) for i in range(3)]
    r = by_id(assess_m5(starts, RULE, gpu_required=False))["M5.stable"]
    assert r.status is Status.PENDING
    assert "not enough waves" in r.reason


def test_guard_stop_is_blocked() -> None:
    stop = {"t": 1.0, "phase": "warm_wave:3", "kind": "gpu", "device_used_mib": 23600.0, "guard_mib": 23552.0}
    starts = [make_start(start_index=0, gpu=True, guard_stop=stop), make_start(start_index=1, gpu=True)]
    r = by_id(assess_m5(starts, RULE))["M5.stable"]
    assert r.status is Status.BLOCKED
    assert "memory guard: 23600 MiB >= 23552 MiB" in r.reason
    assert "never a reason to lower" in r.reason


def test_nvml_unavailable_makes_sampled_pending_while_host_is_judged() -> None:
    starts = [make_start(start_index=i) for i in range(3)]
    res = by_id(assess_m5(starts, RULE))
    sampled = res["M5.sampled"]
    assert sampled.status is Status.PENDING
    assert "host memory sampled in every start (3)" in sampled.reason
    assert UNAVAILABLE in sampled.reason
    assert any("GPU memory PENDING" in lim for lim in sampled.limitations)
    assert res["M5.peaks"].status is Status.PENDING
    assert "host_rss 850.0 MiB" in res["M5.peaks"].reason
    # host-metric stability is still judged
    assert res["M5.stable"].status is Status.PASS


def test_cpu_backend_gpu_not_applicable() -> None:
    starts = [make_start(start_index=i) for i in range(3)]
    res = by_id(assess_m5(starts, RULE, gpu_required=False))
    assert res["M5.sampled"].status is Status.PASS
    assert any("not applicable" in lim for lim in res["M5.sampled"].limitations)
    assert res["M5.peaks"].status is Status.PASS


def test_gpu_rule_metric_unavailable_is_pending() -> None:
    rule = StabilisationRule(last_k_waves=5, max_growth_mib=64.0, metric="gpu_device")
    r = by_id(assess_m5([make_start()], rule))["M5.stable"]
    assert r.status is Status.PENDING
    assert "gpu_device not sampled" in r.reason


def test_missing_phase_keeps_sampled_pending() -> None:
    starts = [make_start(start_index=0), make_start(start_index=1, phases=("startup", "cold", "warm", "serial"))]
    r = by_id(assess_m5(starts, RULE, gpu_required=False))["M5.sampled"]
    assert r.status is Status.PENDING
    assert "start 1: no host samples in unload, reload" in r.reason


def test_residue_always_in_evidence() -> None:
    starts = [make_start(start_index=i, residue=80.0) for i in range(3)]
    res = by_id(assess_m5(starts, None, gpu_required=False))
    residue = res["M5.stable"].evidence["retained_after_unload"]["host_rss"]
    assert [r["residue_mib"] for r in residue] == [80.0, 80.0, 80.0]
    assert res["M5.peaks"].evidence["starts"][0]["host_rss"]["residue_mib"] == 80.0


def test_one_result_set_per_count() -> None:
    starts = [make_start(count=c, start_index=i) for c in (1, 2) for i in range(3)]
    results = assess_m5(starts, RULE, gpu_required=False)
    assert [(r.count, r.id) for r in results] == [
        (c, i) for c in (1, 2) for i in ("M5.sampled", "M5.peaks", "M5.stable", "M5.baseline")
    ]


def test_baseline_comparison_same_count() -> None:
    cand = [make_start(start_index=i, residue=80.0) for i in range(3)]
    base = [make_start(start_index=i, residue=20.0) for i in range(3)]
    r = by_id(assess_m5(cand, RULE, baseline=base, gpu_required=False, baseline_reason="allocator change"))[
        "M5.baseline"
    ]
    assert r.status is Status.PASS
    assert r.evidence["comparison"]["host_rss"]["residue_mib"]["delta"] == pytest.approx(60.0)
    other = [make_start(count=4, start_index=0)]
    r2 = by_id(assess_m5(cand, RULE, baseline=other, gpu_required=False, baseline_reason="allocator change"))[
        "M5.baseline"
    ]
    assert r2.status is Status.PENDING


def test_rule_validation() -> None:
    with pytest.raises(ValueError):
        StabilisationRule(last_k_waves=1, max_growth_mib=10)
    with pytest.raises(ValueError):
        StabilisationRule(last_k_waves=5, max_growth_mib=10, metric="vram")


def test_campaign_phase_names_idle_between_waves() -> None:
    """The campaign's own naming: 'cold_wave:0', 'idle' after every wave, unload then reload
    directly, and a later M4 'cold_load' that is not the first request."""
    seq: list[tuple[str, list[float]]] = [
        ("startup", [50, 100, 100]),
        ("idle", [100, 100]),
        ("cold_wave:0", [400, 900, 700]),
        ("idle", [700, 700]),
    ]
    for k in range(1, 7):
        seq += [(f"warm_wave:{k}", [700, 800, 700]), ("idle", [700])]
    seq += [
        ("unload", [700, 300, 160, 160]),
        ("reload", [500, 800]),
        ("idle", [700]),
        ("cold_load", [1500]),
        ("unload_targeted", [700, 160, 160]),  # the same residue as the first unload
    ]
    samples = []
    t = 0.0
    for phase, values in seq:
        for v in values:
            samples.append({"t": t, "phase": phase, "kind": "host", "rss_mib": float(v), "pss_mib": None, "pids": [1]})
            t += 0.05
    start = StartMemory(2, 1, samples, UNAVAILABLE, dict(INTERVAL))
    host = summarise_start(start)["metrics"]["host_rss"]
    assert host["idle_baseline_mib"] == 100.0
    assert host["first_request_peak_mib"] == 900.0  # not the later 1500 MiB cold_load probe
    assert host["warm_steady_state_mib"] == 800.0
    retained = host["retained_after_unload"]
    assert retained["source_phase"] == "unload" and retained["residue_mib"] == 60.0
    assert [e["source_phase"] for e in retained["episodes"]] == ["unload", "unload_targeted"]
    assert summarise_start(start)["metrics"]["host_pss"] is None
    res = by_id(assess_m5([start], RULE, gpu_required=False))
    assert res["M5.sampled"].status is Status.PASS
    assert res["M5.stable"].evidence["retention"][0]["starts"][0]["residues_mib"] == [60.0, 60.0]
    # One start's two cycles leave no degree of freedom for a slope interval: not shown stopped.
    assert res["M5.stable"].status is Status.PENDING
    assert "shared slope over them +0.00 MiB/cycle (no interval: too few points)" in res["M5.stable"].reason


# -- retained memory after unload (unload/reload cycles per start) ---------------------------
def test_constant_residue_passes_with_its_size_and_range() -> None:
    starts = [make_start(start_index=i, residue=64.0, cycles=3) for i in range(3)]
    r = by_id(assess_m5(starts, RULE, gpu_required=False))["M5.stable"]
    assert r.status is Status.PASS
    assert "residue after unload settled at +64.0 … +64.0 MiB" in r.reason
    assert "3 starts x 3 unload/reload cycles" in r.reason
    assert r.evidence["retention"][0]["starts"][0]["residues_mib"] == [64.0, 64.0, 64.0]


def test_allocator_caching_that_steps_up_once_then_stays_passes() -> None:
    # glibc keeps a freed block cached after the first reload: +5, then +25, +25
    starts = []
    for i in range(3):
        st = make_start(start_index=i, residue=5.0, cycles=3, residue_growth=20.0)
        for smp in st.samples:  # cap the third cycle at the second one's level
            if smp["rss_mib"] >= 100.0 + 45.0 and smp["phase"] in ("idle",):
                smp["rss_mib"] = 125.0
        starts.append(st)
    res = by_id(assess_m5(starts, RULE, gpu_required=False))["M5.stable"]
    residues = res.evidence["retention"][0]["starts"][0]["residues_mib"]
    assert residues == [5.0, 25.0, 25.0]
    assert res.status is Status.PASS and "settled at +25.0" in res.reason


def test_residue_growing_every_cycle_fails() -> None:
    # weights kept after each logical unload: every reload adds another 64 MiB copy
    starts = [make_start(start_index=i, residue=64.0, residue_growth=64.0, cycles=3) for i in range(3)]
    r = by_id(assess_m5(starts, RULE, gpu_required=False))["M5.stable"]
    assert r.status is Status.FAIL
    assert "grows with every unload/reload cycle" in r.reason
    assert "+64.0, +128.0, +192.0 MiB" in r.reason


def test_growth_over_two_cycles_only_is_pending_not_fail() -> None:
    # one step up cannot tell caching from a kept copy: not PASS, but not proven either
    starts = [make_start(start_index=i, residue=64.0, residue_growth=64.0, cycles=2) for i in range(3)]
    r = by_id(assess_m5(starts, RULE, gpu_required=False))["M5.stable"]
    assert r.status is Status.PENDING and "investigate" in r.reason


def test_residue_growth_on_gpu_is_judged_where_sampled() -> None:
    # host flat, GPU per-process memory 200 MiB higher after every unload: still not PASS
    starts = []
    for i in range(3):
        st = make_start(start_index=i, gpu=True, residue=10.0, cycles=3)
        unloads = 0
        previous = ""
        for smp in st.samples:
            if smp["kind"] != "gpu":
                continue
            if smp["phase"] == "idle" and previous == "unload":
                unloads += 1
            previous = smp["phase"]
            smp["process_mib"] += 200.0 * unloads
        starts.append(st)
    r = by_id(assess_m5(starts, RULE))["M5.stable"]
    assert r.status is Status.FAIL and "gpu_process retained after unload grows" in r.reason
    assert r.reason.startswith("gpu_process")


def test_residue_growth_in_some_starts_stays_pending() -> None:
    starts = [make_start(start_index=0, residue_growth=40.0, cycles=3)] + [
        make_start(start_index=i, cycles=3) for i in (1, 2)
    ]
    r = by_id(assess_m5(starts, RULE, gpu_required=False))["M5.stable"]
    assert r.status is Status.PENDING
    head = r.reason.split("per-wave")[0]
    assert "investigate" in head and "start 0 residues" in head and "start 1 residues" not in head


def test_one_unload_cycle_cannot_pass() -> None:
    starts = [make_start(start_index=i, cycles=1) for i in range(3)]
    r = by_id(assess_m5(starts, RULE, gpu_required=False))["M5.stable"]
    assert r.status is Status.PENDING
    assert "has 1 unload/reload cycle(s)" in r.reason


# -- growth that has not stopped, under the declared bound -------------------------------------


def test_growth_under_the_bound_that_has_not_stopped_is_not_pass() -> None:
    # The stand-in's memory_growth=4 against a 64 MiB bound over 3 waves: +4 MiB on every
    # wave stays under the bound in the window, yet memory never stopped growing. It once
    # PASSed; the procedure keeps uncertain growth pending.
    rule = StabilisationRule(last_k_waves=3, max_growth_mib=64.0)
    starts = [make_start(start_index=i, growth=4.0) for i in range(3)]
    r = by_id(assess_m5(starts, rule, gpu_required=False))["M5.stable"]
    assert r.status is Status.PENDING, r.reason
    assert "has not been shown to stop growing" in r.reason
    assert "start 0 +4.00 MiB/wave (95 % lower +4.00)" in r.reason


def test_slow_growth_inside_the_jitter_band_is_not_pass() -> None:
    # +0.5 MiB a wave: no two waves of the last K differ by a MiB, yet the shared slope over
    # the flat tails, projected over the tested range, is 4.5 MiB
    rule = StabilisationRule(last_k_waves=3, max_growth_mib=64.0)
    slow = [make_start(start_index=i, growth=0.5) for i in range(3)]
    r = by_id(assess_m5(slow, rule, gpu_required=False))["M5.stable"]
    assert r.status is Status.PENDING, r.reason
    assert "shared slope over them +0.50 MiB/wave (95 % upper +0.50: +4.5 MiB over 9 waves, not under 1 MiB)" in (
        r.reason
    )


def test_growth_that_stopped_inside_the_window_passes() -> None:
    # +4 MiB on early waves only (then flat), or jitter under a MiB: growth has stopped.
    rule = StabilisationRule(last_k_waves=3, max_growth_mib=64.0)
    stopped = [make_start(start_index=i, growth=4.0, waves=10) for i in range(3)]
    for st in stopped:
        for smp in st.samples:  # flatten waves 8-10 at wave 8's level
            phase = str(smp["phase"])
            if phase.startswith("mixed_wave:") and int(phase.split(":")[1]) >= 8:
                smp["rss_mib"] -= 4.0 * (int(phase.split(":")[1]) - 8)
    r = by_id(assess_m5(stopped, rule, gpu_required=False))["M5.stable"]
    assert r.status is Status.PASS, r.reason
    assert r.reason.startswith(
        "host_rss per-wave peak stopped growing: host_rss per-wave peak (every repeated-use wave)"
    )
    assert "3 of 3 starts end flat (within 1 MiB) for at least 3 waves (flat tail 3 of 10" in r.reason
    jitter = [make_start(start_index=i) for i in range(3)]
    for i, st in enumerate(jitter):
        for smp in st.samples:  # +-0.4 MiB, alternating from wave to wave
            phase = str(smp["phase"])
            if phase.split(":")[0] in ("warm_wave", "mixed_wave"):
                smp["rss_mib"] += 0.4 if (int(phase.split(":")[1]) + i) % 2 else -0.4
    assert by_id(assess_m5(jitter, rule, gpu_required=False))["M5.stable"].status is Status.PASS


def test_an_allocator_step_then_flat_passes_and_steps_that_recur_do_not() -> None:
    # One step of 6 MiB on the second wave, then flat: an allocator's cache. The same step
    # every third wave: each flat stretch is as long as the one before, so not stopped.
    once = [make_start(start_index=i, waves=12) for i in range(3)]
    recurring = [make_start(start_index=i, waves=12) for i in range(3)]
    for st in once:
        for smp in st.samples:
            phase = str(smp["phase"])
            if phase.split(":")[0] in ("warm_wave", "mixed_wave") and int(phase.split(":")[1]) >= 2:
                smp["rss_mib"] += 6.0
    for st in recurring:
        for smp in st.samples:
            phase = str(smp["phase"])
            if phase.split(":")[0] in ("warm_wave", "mixed_wave"):
                smp["rss_mib"] += 6.0 * ((int(phase.split(":")[1]) - 1) // 3)
    rule = StabilisationRule(last_k_waves=3, max_growth_mib=64.0)
    assert by_id(assess_m5(once, rule, gpu_required=False))["M5.stable"].status is Status.PASS
    r = by_id(assess_m5(recurring, rule, gpu_required=False))["M5.stable"]
    assert r.status is Status.PENDING, r.reason
    assert "flat tail 3 of 12 (needs 4: longer than the stretch before a change)" in r.reason


def test_a_single_step_halfway_is_not_shown_to_have_stopped() -> None:
    # 3 MiB kept every 8th request at one slot: one step within 12 waves, then 6 flat waves
    # (more than K=5). The flat tail is no longer than the stretch before the step, which
    # growth in steps would also show: not PASS.
    starts = [make_start(start_index=i, waves=12) for i in range(3)]
    for st in starts:
        for smp in st.samples:
            phase = str(smp["phase"])
            if phase.split(":")[0] in ("warm_wave", "mixed_wave") and int(phase.split(":")[1]) >= 7:
                smp["rss_mib"] += 3.0
    r = by_id(assess_m5(starts, StabilisationRule(last_k_waves=5, max_growth_mib=8.0), gpu_required=False))
    assert r["M5.stable"].status is Status.PENDING, r["M5.stable"].reason
    assert "flat tail 6 of 12 (needs 7: longer than the stretch before a change)" in r["M5.stable"].reason


def test_growth_is_compared_with_the_baseline_at_the_same_count() -> None:
    # The candidate grows 0.5 MiB a wave; the baseline's peaks at the same count are flat
    # (then it grows too): the PENDING text says which, and the verdict stays PENDING.
    rule = StabilisationRule(last_k_waves=3, max_growth_mib=64.0)
    growing = [make_start(start_index=i, growth=0.5) for i in range(3)]
    for base_growth, words in ((0.0, ": its growth stopped"), (0.5, ": it has not stopped either")):
        baseline = [make_start(start_index=i, growth=base_growth) for i in range(3)]
        baseline += [make_start(count=4, start_index=i, growth=9.0) for i in range(3)]  # another count: not read
        r = by_id(assess_m5(growing, rule, gpu_required=False, baseline=baseline, baseline_reason="retention"))
        stable = r["M5.stable"]
        assert stable.status is Status.PENDING, stable.reason
        assert "baseline build at count 2, host_rss per-wave peak: " in stable.reason
        assert words in stable.reason, stable.reason
    alone = by_id(assess_m5(growing, rule, gpu_required=False))["M5.stable"]
    assert "no baseline memory start at count 2 to compare with (memory.baseline_comparison is not declared)" in (
        alone.reason
    )


def test_an_unload_phase_that_ended_before_its_teardown_settles_at_its_lowest_level() -> None:
    """A busy machine: the second unload phase ends while the teardown is still freeing the
    pool ([81.4, 81.4, 81.4, 77.4, 57.4]; its second half's median is 77.4): the residue
    is the level the unload fell to, not a 20 MiB jump that read as memory kept."""
    seq: list[tuple[str, list[float]]] = [("startup", [40.5] * 4), ("cold_wave:0", [81.4] * 3)]
    seq += [(f"warm_wave:{k}", [81.4] * 3) for k in range(1, 7)]
    for unload in ([81.4, 81.4, 57.4, 57.4, 57.4], [81.4, 81.4, 81.4, 77.4, 57.4], [81.4, 57.4, 57.4, 57.4]):
        seq += [("unload", unload), ("reload", [57.4, 81.4, 81.4])]
    samples = []
    t = 0.0
    for phase, values in seq:
        for v in values:
            samples.append({"t": t, "phase": phase, "kind": "host", "rss_mib": v, "pss_mib": None, "pids": [1]})
            t += 0.05
    host = summarise_start(StartMemory(2, 1, samples, UNAVAILABLE, dict(INTERVAL)))["metrics"]["host_rss"]
    episodes = host["retained_after_unload"]["episodes"]
    assert [e["residue_mib"] for e in episodes] == [16.9, 16.9, 16.9]
