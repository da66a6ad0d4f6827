"""The M5 rule and its growth diagnostics exactly (parval/gates/m5.py): the rule's
bounds, the per-wave growth, the tested range and the residue left after each unload."""

from __future__ import annotations

from typing import Any

import pytest

from parval.gates import m5
from parval.gates.m5 import StabilisationRule, retention, retention_metrics, wave_growth


def test_the_rule_refuses_what_cannot_measure_growth() -> None:
    assert StabilisationRule(2, 0.001).metric == "host_rss"
    with pytest.raises(ValueError, match="at least 2"):
        StabilisationRule(1, 5.0)
    with pytest.raises(ValueError, match="positive"):
        StabilisationRule(2, 0.0)
    with pytest.raises(ValueError, match="unknown stabilisation metric 'rss'"):
        StabilisationRule(3, 5.0, "rss")


def start(
    index: int, peaks: list[tuple[str, float]] | None, residues: list[float | None] | None = None
) -> dict[str, Any]:
    ms: dict[str, Any] | None = None
    if peaks is not None:
        ms = {"wave_peaks": [{"phase": p, "peak_mib": v} for p, v in peaks]}
        if residues is not None:
            ms["retained_after_unload"] = {"episodes": [{"residue_mib": r} for r in residues] + [{}]}
    return {"start_index": index, "metrics": {"host_rss": ms}, "gpu_available": False}


def test_wave_growth_over_the_repeated_use_waves() -> None:
    sums = [
        start(1, [("cold_wave", 50.0), ("warm_wave", 100.0), ("mixed_wave", 100.5), ("warm_wave", 101.0)]),
        start(2, [("cold_wave", 50.0)]),
        start(3, None),
    ]
    one, two, three = wave_growth(sums, "host_rss", 2)
    assert one == {
        "start_index": 1,
        "waves": 3,
        "first_wave": "warm_wave",
        "last_wave": "warm_wave",
        "wave_peaks_mib": [100.0, 100.5, 101.0],
        "growth_per_wave_mib": [0.5, 0.5],
        "window_waves": 2,
        "window_growth_mib": 0.5,
        "window_growth_per_wave_mib": 0.5,
    }
    assert two == {
        "start_index": 2,
        "waves": 0,
        "first_wave": None,
        "last_wave": None,
        "wave_peaks_mib": [],
        "growth_per_wave_mib": [],
        "window_waves": 0,
        "window_growth_mib": None,
        "window_growth_per_wave_mib": None,
    }
    assert three["waves"] == 0 and three["window_growth_mib"] is None
    whole = wave_growth(
        [start(1, [("warm_wave", 1.0), ("warm_wave", 1.0001), ("warm_wave", 2.0006)])], "host_rss", None
    )
    assert whole[0]["growth_per_wave_mib"] == [0.0, 1.0]
    assert whole[0]["window_waves"] == 3 and whole[0]["window_growth_mib"] == 1.001
    assert whole[0]["window_growth_per_wave_mib"] == 0.5
    single = wave_growth([start(1, [("warm_wave", 1.0)])], "host_rss", 3)[0]
    assert single["window_waves"] == 1 and single["window_growth_mib"] is None
    third = wave_growth([start(1, [("warm_wave", 0.0), ("warm_wave", 1.0), ("warm_wave", 2.0)])], "host_rss", 3)[0]
    assert third["window_growth_per_wave_mib"] == 1.0 and third["window_growth_mib"] == 2.0
    thirds = wave_growth([start(1, [("warm_wave", 0.0), ("warm_wave", 0.0), ("warm_wave", 2 / 3)])], "host_rss", None)
    assert thirds[0]["window_growth_mib"] == 0.667 and thirds[0]["window_growth_per_wave_mib"] == 0.334


def test_the_tested_range_in_words() -> None:
    same = wave_growth([start(i, [("warm_wave", 1.0), ("mixed_wave", 1.0)]) for i in (1, 2, 3)], "host_rss", None)
    assert m5.tested_range(same, 4) == (
        "tested range at count 4: 3 starts x 2 repeated-use waves (warm_wave … mixed_wave) x 4 requests = 24 requests"
    )
    none = wave_growth([start(1, [])], "host_rss", None)
    assert (
        m5.tested_range(none, 2) == "tested range at count 2: 1 starts x 0 repeated-use waves x 2 requests = 0 requests"
    )
    mixed = wave_growth([start(1, [("warm_wave", 1.0)]), start(2, [])], "host_rss", None)
    assert m5.tested_range(mixed, 2) == (
        "tested range at count 2: start 1: 1 repeated-use waves (warm_wave … warm_wave), 2 requests; "
        "start 2: 0 repeated-use waves, 0 requests"
    )


def test_the_residue_after_each_unload() -> None:
    def ret(residues: list[list[float | None]], bound: float | None) -> dict[str, Any]:
        return retention([start(i, [], r) for i, r in enumerate(residues, 1)], "host_rss", bound)

    short = ret([[1.0, None]], 5.0)
    assert short["status"] == "pending" and short["starts"] == [
        {"start_index": 1, "cycles": 1, "residues_mib": [1.0], "growth_per_cycle_mib": []}
    ]
    assert short["text"] == (
        "host_rss retained after unload: start 1 has 1 unload/reload cycle(s) with an idle level (at least 2 are "
        "needed to tell a constant residue from memory kept after each unload)"
    )
    assert (short["metric"], short["bound_mib"]) == ("host_rss", 5.0)
    settled = ret([[1.0, 1.1], [2.0, 2.1, 2.0]], 1.0)
    assert settled["status"] == "pass"
    assert settled["text"] == (
        "host_rss residue after unload settled at +1.1 … +2.0 MiB over the idle level before the first load; "
        "host_rss residue after unload: 2 of 2 starts end flat (within 1 MiB) for at least 2 cycles (flat tail 2 "
        "of 2, 3 of 3 cycles); shared slope over them +0.02 MiB/cycle (95 % upper +0.22: +0.4 MiB over 2 cycles, "
        "under 1 MiB); rise over the whole range +0.1, +0.0 MiB (2 starts x 2+ unload/reload cycles; start 1 "
        "residues +1.0, +1.1 MiB; start 2 residues +2.0, +2.1, +2.0 MiB)"
    )
    # +0.25 MiB a cycle, each change under a MiB: slow growth, not shown to stop
    slow = ret([[1.0, 1.5], [2.0, 2.25, 2.5]], 1.0)
    assert slow["status"] == "pending"
    assert (
        "shared slope over them +0.30 MiB/cycle (95 % upper +0.60: +1.2 MiB over 2 cycles, not under 1 MiB)"
        in (slow["text"])
    )
    unjudged = ret([[1.0, 1.5], [2.0, 2.5]], None)
    assert unjudged["status"] == "unjudged"
    assert unjudged["text"] == (
        "host_rss residue after unload last +1.5 … +2.5 MiB over the idle level before the first load "
        "(2 starts x 2 unload/reload cycles)"
    )
    growing = ret([[0.0, 10.0, 20.0], [0.0, 10.0, 20.0]], 10.0)
    assert growing["status"] == "fail"
    assert growing["text"] == (
        "host_rss retained after unload grows with every unload/reload cycle in every start (memory kept after "
        "a logical unload): start 1 residues +0.0, +10.0, +20.0 MiB (per cycle +10.0, +10.0 MiB, bound 10 MiB); "
        "start 2 residues +0.0, +10.0, +20.0 MiB (per cycle +10.0, +10.0 MiB, bound 10 MiB); host_rss residue "
        "slope over the whole range: start 1 +10.00 MiB/cycle (95 % lower +10.00); start 2 +10.00 MiB/cycle (95 % "
        "lower +10.00); 2 starts x 3 unload/reload cycles"
    )
    # 6 MiB kept with every unload, under a 10 MiB bound per cycle: the fitted rise (+12 MiB)
    # reaches it, with a slope above zero in every start
    kept = ret([[6.5, 12.5, 18.7], [6.4, 12.6, 18.6]], 10.0)
    assert kept["status"] == "fail", kept["text"]
    two_cycles = ret([[0.0, 10.0], [0.0, 10.0]], 10.0)
    assert two_cycles["status"] == "pending" and two_cycles["text"].startswith(
        "host_rss retained after unload has not been shown to stop changing (investigate: allocator caching "
        "settles, kept weights keep growing): host_rss residue after unload: 0 of 2 starts end flat"
    )
    once = ret([[0.0, 1.0, 20.0], [0.0, 10.0, 20.0]], 10.0)
    assert once["status"] == "pending"
    one_start = ret([[0.0, 10.0, 20.0], [0.0, 0.0, 0.0]], 10.0)
    assert one_start["status"] == "pending" and "start 2" not in one_start["text"].split(";")[0]


def test_the_metrics_retention_is_judged_on() -> None:
    gpu = {"gpu_process": {"x": 1}, "gpu_device": {"x": 1}}
    host = {"host_rss": {"x": 1}, "host_pss": {"x": 1}}
    s = [{"metrics": {**host, **gpu}, "gpu_available": True}]
    assert retention_metrics(s, None) == ["host_rss", "gpu_process"]
    assert retention_metrics(s, StabilisationRule(2, 1.0, "gpu_process")) == ["gpu_process"]
    assert retention_metrics(s, StabilisationRule(2, 1.0, "host_pss")) == ["host_pss", "gpu_process"]
    s = [{"metrics": {**host, "gpu_process": None, "gpu_device": {"x": 1}}, "gpu_available": True}]
    assert retention_metrics(s, None) == ["host_rss", "gpu_device"]
    s = [{"metrics": {**host, **gpu}, "gpu_available": False}]
    assert retention_metrics(s, None) == ["host_rss"]
    s = [
        {"metrics": {"host_rss": None, **gpu}, "gpu_available": True},
        {"metrics": {**host, **gpu}, "gpu_available": True},
    ]
    assert retention_metrics(s, None) == ["gpu_process"]
