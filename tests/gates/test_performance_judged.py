"""The performance figures at the precision they are reported (seconds to 4 places,
rejection milliseconds to 3), and series records that name no count."""

from __future__ import annotations

from typing import Any

from parval.gates.performance import build_performance


def rep(batch: float, lat: list[float]) -> dict[str, Any]:
    return {"batch_s": batch, "latencies_s": lat, "failures": 0}


def perf(series: list[dict[str, Any]], rejections: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return build_performance(
        series,
        rejections or [],
        model_label="cpu/m",
        model_checks="PASS",
        framework_checks="PASS",
        memory_verdict="PASS",
    )


def test_series_times_are_reported_to_a_tenth_of_a_millisecond() -> None:
    repeats = [rep(1.234567, [0.111114]), rep(2.345678, [0.222226]), rep(3.456789, [0.333338])]
    out = perf([{"series": "candidate_n_slots", "count": 2, "repeats": repeats}])
    st = out["rows"][0]["candidate_n_slots"]
    assert (st["median_s"], st["min_s"], st["max_s"]) == (2.3457, 1.2346, 3.4568)
    assert st["latency_s"] == {"n": 3, "min": 0.1111, "median": 0.2222, "max": 0.3333}


def test_rejection_latency_is_reported_to_a_microsecond() -> None:
    probe = {"count": 2, "latencies_ms": [1.23456, 2.34567, 3.45678, 9.0], "statuses": [503, 503, 503, 200]}
    (r,) = perf([], [probe])["rejection_latency"]
    assert (r["median_ms"], r["min_ms"], r["max_ms"]) == (2.346, 1.235, 3.457)
    assert r["n"] == 3 and r["not_503"] == 1


def test_an_independent_servers_record_without_a_count_is_not_measured_at_any_count() -> None:
    three = [rep(1.0, [1.0])] * 3
    series = [
        {"series": "candidate_n_slots", "count": 2, "repeats": three},
        {"series": "independent_servers", "repeats": three},
    ]
    out = perf(series)
    assert [r["count"] for r in out["rows"]] == [2]
    assert out["rows"][0]["independent_servers"] == "not measured"


def test_a_row_takes_its_counts_verdict_only_when_both_verdicts_and_admission_are_given() -> None:
    three = [rep(1.0, [1.0])] * 3
    series = [{"series": "candidate_n_slots", "count": n, "repeats": three} for n in (1, 2)]

    def rows(**kw: Any) -> list[tuple[object, object]]:
        out = build_performance(
            series, [], model_label="m", model_checks="FAIL", framework_checks="PASS", memory_verdict="PASS", **kw
        )
        return [(r["model_checks"], r["admitted"]) for r in out["rows"]]

    run_wide = [("FAIL", False), ("FAIL", False)]
    assert rows(count_verdicts={1: "PASS"}) == run_wide
    assert rows(admitted_counts=[1]) == run_wide
    # a count without a verdict of its own is pending, never admitted
    assert rows(count_verdicts={1: "PASS"}, admitted_counts=[1]) == [("PASS", True), ("PENDING", False)]
