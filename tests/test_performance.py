"""Performance table P1-P5 on synthetic series."""

from __future__ import annotations

from typing import Any

import pytest

from parval.gates.performance import TABLE_COLUMNS, build_performance, saved_pct
from parval.report.performance_md import performance_table_markdown


def rec(
    series: str, count: int, times: list[float], *, estimate: bool = False, failures: int = 0, cold: float | None = 5.0
) -> dict[str, Any]:
    return {
        "series": series,
        "count": count,
        "cold_s": cold,
        "estimate": estimate,
        "repeats": [
            {"batch_s": t, "latencies_s": [t / count] * count, "failures": failures if i == 0 else 0}
            for i, t in enumerate(times)
        ],
    }


def full_series(n: int = 4, *, base_n_estimate: bool = False, repeats: int = 3) -> list[dict[str, Any]]:
    one = [2.10, 2.15, 2.20][:repeats]
    return [
        rec("base_one_slot_serial", 1, one),
        rec("candidate_one_slot_serial", 1, [2.0, 2.05, 2.3][:repeats]),
        rec("candidate_n_slots", 1, [2.0, 2.05, 2.3][:repeats]),
        rec("base_one_slot_serial", n, [8.5, 8.6, 8.7][:repeats], estimate=base_n_estimate),
        rec("candidate_n_slots", n, [7.0, 7.04, 7.1][:repeats]),
    ]


def build(
    series: list[dict[str, Any]], checks: str = "PASS", memory: str = "PASS", rej: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return build_performance(
        series,
        rej if rej is not None else [{"count": 4, "latencies_ms": [1.6, 1.7, 1.9]}],
        model_label="cuda / higgs_v3",
        model_checks=checks,
        framework_checks="PASS",
        memory_verdict=memory,
    )


def test_saved_pct_formula_including_negative() -> None:
    assert saved_pct(8.6, 7.04) == pytest.approx(18.1)
    assert saved_pct(2.0, 2.5) == -25.0  # slower candidate: negative time saved
    assert saved_pct(0.0, 1.0) is None and saved_pct(None, 1.0) is None


def test_completed_rows_use_medians() -> None:
    perf = build(full_series())
    assert perf["status"] == "completed"
    row = {r["count"]: r for r in perf["rows"]}[4]
    assert row["base_one_request"]["median_s"] == 2.15
    assert row["candidate_one_slot"]["median_s"] == 2.05
    assert row["one_request_saved_pct"] == saved_pct(2.15, 2.05)
    assert row["base_n_serial"] == {**row["base_n_serial"], "median_s": 8.6, "min_s": 8.5, "max_s": 8.7, "n": 3}
    assert row["n_saved_pct"] == pytest.approx(18.1)
    assert row["independent_servers"] == "not measured"  # optional, never a failure
    assert row["candidate_n_slots"]["latency_s"]["n"] == 12
    assert perf["rejection_latency"][0]["median_ms"] == 1.7
    assert [s["sample_count"] for s in perf["samples"]] == [3, 3, 3, 3, 3]


def test_table_header_is_exactly_the_procedure_columns() -> None:
    md = performance_table_markdown(build(full_series()))
    header = (
        "| backend/model | model checks | shared framework checks | base one-request time "
        "| candidate one-slot time | time saved % | measured base N-request serial time "
        "| candidate N-slot completion time | time saved % |"
    )
    assert header in md.splitlines()
    assert len(TABLE_COLUMNS) == 9
    row4 = next(line for line in md.splitlines() if line.startswith("| cuda / higgs_v3 (N=4)"))
    assert "8.600 s (8.500–8.700, n=3)" in row4 and "7.040 s (7.000–7.100, n=3)" in row4
    assert "+18.1%" in row4
    assert "PASS; memory PASS" in row4
    assert "503 rejection latency" in md and "1.700 ms (1.600–1.900, n=3)" in md


def test_estimate_is_labelled_and_keeps_the_report_pending() -> None:
    perf = build(full_series(base_n_estimate=True))
    row = {r["count"]: r for r in perf["rows"]}[4]
    assert row["base_n_serial"]["estimate"] is True
    assert perf["status"] == "pending"
    assert any("estimate" in p for p in row["pending"])
    md = performance_table_markdown(perf)
    row4 = next(line for line in md.splitlines() if line.startswith("| cuda / higgs_v3 (N=4)"))
    assert "**estimate**" in row4 and "(vs estimate)" in row4


def test_fewer_than_three_repeats_is_pending() -> None:
    perf = build(full_series(repeats=2))
    assert perf["status"] == "pending"
    assert all(r["status"] == "pending" for r in perf["rows"])
    assert "pending: n&lt;3" in performance_table_markdown(perf)  # a cell escapes `<` (GitHub shows it)


def test_failed_repeats_are_excluded_from_times() -> None:
    series = full_series()
    series[4] = rec("candidate_n_slots", 4, [1.0, 7.04, 7.1, 7.0], failures=1)
    row = {r["count"]: r for r in build(series)["rows"]}[4]
    assert row["candidate_n_slots"]["n"] == 3 and row["candidate_n_slots"]["failed_repeats"] == 1
    assert row["candidate_n_slots"]["min_s"] == 7.0


def test_faster_model_with_failed_checks_is_marked_not_admitted() -> None:
    perf = build(full_series(), checks="FAIL (M2.exact)")
    assert not perf["rows"][0]["admitted"]
    md = performance_table_markdown(perf)
    row4 = next(line for line in md.splitlines() if line.startswith("| cuda / higgs_v3 (N=4)"))
    assert "**NOT ADMITTED**" in row4 and "+18.1% (not admitted)" in row4


def test_a_pending_row_is_not_called_not_admitted_in_bold_and_every_saving_is_labelled() -> None:
    """PENDING is not a failure: its row says 'not admitted yet' without the bold NOT
    ADMITTED of a FAIL; a slower figure (-x%) of a row not admitted is labelled like a faster one."""
    slower = full_series()
    slower[4] = rec("candidate_n_slots", 4, [10.0, 10.04, 10.1])
    for checks, lead in (("PENDING (M2.observed_active)", "not admitted yet — PENDING"), ("FAIL (M2.exact)", None)):
        md = performance_table_markdown(build(slower, checks=checks))
        row4 = next(line for line in md.splitlines() if line.startswith("| cuda / higgs_v3 (N=4)"))
        if lead is None:
            assert "**NOT ADMITTED** — FAIL" in row4
        else:
            assert lead in row4 and "NOT ADMITTED" not in row4
        saved = row4.split("|")[-2].strip()
        assert saved.startswith("-") and saved.endswith("(not admitted)"), saved
    admitted = performance_table_markdown(build(slower))
    assert "(not admitted)" not in admitted and "not admitted yet" not in admitted


def test_independent_servers_and_memory_blocked() -> None:
    series = full_series() + [rec("independent_servers", 4, [12.5, 12.55, 12.6])]
    row = {r["count"]: r for r in build(series)["rows"]}[4]
    assert row["independent_servers"]["candidate_saved_pct"] == saved_pct(12.55, 7.04)
    blocked = full_series()[:-1] + [
        {"series": "candidate_n_slots", "count": 4, "blocked": "VRAM guard: stopped", "repeats": []}
    ]
    perf = build(blocked)
    assert perf["status"] == "memory_blocked"
    assert "memory blocked: VRAM guard: stopped" in performance_table_markdown(perf)
    indep_blocked = full_series() + [
        {"series": "independent_servers", "count": 4, "blocked": "VRAM estimate: skipped", "repeats": []}
    ]
    perf = build(indep_blocked)
    assert perf["status"] == "completed"  # P3 is optional
    assert perf["rows"][-1]["independent_servers"] == "memory blocked: VRAM estimate: skipped"


def test_unknown_series_rejected() -> None:
    with pytest.raises(ValueError):
        build([rec("shared", 2, [1.0, 1.0, 1.0])])


def test_the_markdown_report_says_how_long_a_single_run_took() -> None:
    perf = build(full_series())
    assert "Campaign" not in performance_table_markdown(perf)  # a merged record has none of its own
    overhead = {
        "wall_s": 10.0,
        "requests": 1,
        "starts": 1,
        "server_s": 4.0,
        "service_s": 3.0,
        "readiness_s": 1.0,
        "overhead_s": 6.0,
        "ratio": 2.5,
        "per_start_s": 6.0,
    }
    md = performance_table_markdown({**perf, "campaign_overhead": overhead})
    line = next(x for x in md.splitlines() if x.startswith("Campaign"))
    # the overhead and wall/server ratio stay in the JSON: summed service times of concurrent
    # requests exceed the wall time, so they say nothing about parval's own cost
    assert line == "Campaign: 10.0 s from start to end, 1 requests over 1 server starts."
    unended = performance_table_markdown({**perf, "campaign_overhead": None})
    assert "Campaign: its duration is not available (the campaign did not end)." in unended
