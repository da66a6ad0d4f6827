"""The performance object figure by figure on one set of series that reaches every branch:
failed repeats kept out of the timings, too few repeats, an estimate, memory-blocked and
unmeasured series, independent servers, rejection latency, notes and the table's status."""

from __future__ import annotations

from typing import Any

import pytest

from parval.gates.performance import NOTES, build_performance


def rep(batch: float, lat: list[float], failures: int = 0) -> dict[str, Any]:
    return {"batch_s": batch, "latencies_s": lat, "failures": failures}


SERIES: list[dict[str, Any]] = [
    {
        "series": "base_one_slot_serial",
        "count": 1,
        "cold_s": 2.0,
        "repeats": [rep(1.0, [1.0]), rep(1.2, [1.2]), rep(1.1, [1.1]), rep(9.0, [9.0], 1)],
    },
    {"series": "candidate_one_slot_serial", "count": 1, "cold_s": 1.5, "repeats": [rep(0.9, [0.9]), rep(0.8, [0.8])]},
    {"series": "candidate_n_slots", "count": 1, "repeats": [rep(0.5, [0.5]), rep(0.7, [0.7]), rep(0.6, [0.6])]},
    {"series": "independent_servers", "count": 1, "repeats": [rep(0.4, [0.4, 0.3]), rep(0.6, []), rep(0.5, [0.5])]},
    {
        "series": "base_one_slot_serial",
        "count": 2,
        "estimate": True,
        "repeats": [rep(2.0, [1.0, 2.0]), rep(2.4, []), rep(2.2, [])],
    },
    {
        "series": "candidate_n_slots",
        "count": 2,
        "repeats": [rep(1.0, [0.9, 1.0]), rep(1.25, [1.2]), rep(1.5, [1.5], 2)],
    },
    {"series": "independent_servers", "count": 2, "blocked": "would not fit", "repeats": []},
    {"series": "candidate_one_slot_serial", "count": 3, "blocked": "OOM", "repeats": []},
]


def stats(
    n: int,
    med: float | None,
    lo: float | None,
    hi: float | None,
    lat: tuple[int, float, float, float] | None,
    **kw: Any,
) -> dict[str, Any]:
    return {
        "n": n,
        "failed_repeats": kw.get("failed_repeats", 0),
        "failed_requests": kw.get("failed_requests", 0),
        "estimate": kw.get("estimate", False),
        "cold_s": kw.get("cold_s"),
        "median_s": med,
        "min_s": lo,
        "max_s": hi,
        "latency_s": None if lat is None else dict(zip(("n", "min", "median", "max"), lat, strict=True)),
        **({"blocked": kw["blocked"]} if "blocked" in kw else {}),
    }


BASE_1 = stats(3, 1.1, 1.0, 1.2, (3, 1.0, 1.1, 1.2), failed_repeats=1, failed_requests=1, cold_s=2.0)
CAND_1 = stats(2, 0.85, 0.8, 0.9, (2, 0.8, 0.85, 0.9), cold_s=1.5)
VERDICTS = {"backend_model": "cpu/m", "model_checks": "PENDING: x", "framework_checks": "PASS", "admitted": False}


def test_every_figure_of_the_performance_object() -> None:
    rej = [{"count": 2, "latencies_ms": [3.0, 1.0, 2.5]}, {"count": 4}]
    out = build_performance(
        SERIES, rej, model_label="cpu/m", model_checks="PENDING: x", framework_checks="PASS", memory_verdict="PASS"
    )
    assert set(out) == {
        "status",
        "model_checks",
        "framework_checks",
        "memory_verdict",
        "rows",
        "samples",
        "rejection_latency",
        "notes",
    }
    assert (out["status"], out["model_checks"], out["framework_checks"], out["memory_verdict"]) == (
        "pending",
        "PENDING: x",
        "PASS",
        "PASS",
    )
    one, two, three = out["rows"]
    assert one == {
        "count": 1,
        **VERDICTS,
        "base_one_request": BASE_1,
        "candidate_one_slot": CAND_1,
        "base_n_serial": BASE_1,
        "candidate_n_slots": stats(3, 0.6, 0.5, 0.7, (3, 0.5, 0.6, 0.7)),
        "one_request_saved_pct": 22.7,
        "n_saved_pct": 45.5,
        "candidate_serial_n": CAND_1,
        "independent_servers": {**stats(3, 0.5, 0.4, 0.6, (3, 0.3, 0.4, 0.5)), "candidate_saved_pct": -20.0},
        "status": "pending",
        "pending": ["candidate_one_slot: 2 clean warm repeats < 3"],
    }
    assert two == {
        "count": 2,
        **VERDICTS,
        "base_one_request": BASE_1,
        "candidate_one_slot": CAND_1,
        "base_n_serial": stats(3, 2.2, 2.0, 2.4, (2, 1.0, 1.5, 2.0), estimate=True),
        "candidate_n_slots": stats(2, 1.125, 1.0, 1.25, (3, 0.9, 1.0, 1.2), failed_repeats=1, failed_requests=2),
        "one_request_saved_pct": 22.7,
        "n_saved_pct": 48.9,
        "candidate_serial_n": None,
        "independent_servers": "memory blocked: would not fit",
        "status": "pending",
        "pending": [
            "candidate_one_slot: 2 clean warm repeats < 3",
            "base_n_serial: estimate, not a measured serial time (P1)",
            "candidate_n_slots: 2 clean warm repeats < 3",
        ],
    }
    assert three["candidate_serial_n"] == stats(0, None, None, None, None, blocked="OOM")
    assert (three["base_n_serial"], three["candidate_n_slots"], three["n_saved_pct"]) == (None, None, None)
    assert three["independent_servers"] == "not measured"
    assert three["pending"] == [
        "candidate_one_slot: 2 clean warm repeats < 3",
        "base_n_serial: not measured",
        "candidate_n_slots: not measured",
    ]
    assert out["samples"][0] == {
        "series": "base_one_slot_serial",
        "count": 1,
        "cold_s": 2.0,
        "estimate": False,
        "blocked": None,
        "sample_count": 4,
        "repeats": SERIES[0]["repeats"],
    }
    assert out["samples"][4]["estimate"] is True and out["samples"][6]["blocked"] == "would not fit"
    assert out["samples"][6]["sample_count"] == 0 and out["samples"][6]["repeats"] == []
    assert out["rejection_latency"] == [
        {
            "count": 2,
            "n": 3,
            "median_ms": 2.5,
            "min_ms": 1.0,
            "max_ms": 3.0,
            "latencies_ms": [3.0, 1.0, 2.5],
            "not_503": None,
        },
        {"count": 4, "n": 0, "median_ms": None, "min_ms": None, "max_ms": None, "latencies_ms": [], "not_503": None},
    ]
    assert out["notes"] == [
        *NOTES,
        "some base N-request serial times are estimates (N x one request), labelled 'estimate'",
        "model checks PENDING: x: not admitted whatever the speed figures say",
    ]


def test_the_performance_status() -> None:
    def status(series: list[dict[str, Any]], memory: str = "PASS", checks: str = "PASS") -> tuple[str, Any]:
        out = build_performance(
            series, [], model_label="m", model_checks=checks, framework_checks="pass.", memory_verdict=memory
        )
        return out["status"], [r["status"] for r in out["rows"]]

    three = [rep(1.0, [1.0]), rep(1.0, [1.0]), rep(1.0, [1.0])]
    whole = [
        {"series": s, "count": n, "repeats": three}
        for s, n in (
            ("base_one_slot_serial", 1),
            ("candidate_one_slot_serial", 1),
            ("candidate_n_slots", 1),
            ("base_one_slot_serial", 2),
            ("candidate_n_slots", 2),
        )
    ]
    assert status(whole) == ("completed", ["completed", "completed"])
    out = build_performance(
        whole, [], model_label="m", model_checks="PASS", framework_checks="pass.", memory_verdict="PASS"
    )
    assert all(r["admitted"] for r in out["rows"]) and out["notes"] == NOTES
    assert all(r["n_saved_pct"] == 0.0 and r["independent_servers"] == "not measured" for r in out["rows"])
    assert status([]) == ("pending", [])
    assert status([], memory="BLOCKED: no GPU") == ("memory_blocked", [])
    assert status([], memory="pending") == ("pending", [])
    blocked = [*whole[:4], {"series": "candidate_n_slots", "count": 2, "blocked": "OOM", "repeats": []}]
    assert status(blocked) == ("memory_blocked", ["completed", "memory_blocked"])
    short = [*whole[:4], {"series": "candidate_n_slots", "count": 2, "repeats": three[:2]}]
    assert status(short) == ("pending", ["completed", "pending"])
    assert status([*blocked, *short[4:]])[0] == "memory_blocked"
    # an estimate is never a measured serial time: at count 1 the base series is both the
    # one-request figure (which may be an estimate) and the N-request one (which may not)
    est = [{**whole[0], "estimate": True}, *whole[1:]]
    assert status(est) == ("pending", ["pending", "completed"])
    est = [*whole[:3], {**whole[3], "estimate": True}, whole[4]]
    assert status(est) == ("pending", ["completed", "pending"])
    # independent servers alone make no row
    assert status([{"series": "independent_servers", "count": 2, "repeats": three}]) == ("pending", [])
    with pytest.raises(ValueError, match="unknown performance series"):
        status([{"series": "mystery", "count": 1, "repeats": []}])
    out = build_performance(whole, [], model_label="m", model_checks="", framework_checks="PASS", memory_verdict="PASS")
    assert out["rows"][0]["admitted"] is False


def test_the_rejection_latency_is_of_503_replies_only() -> None:
    # A probe's requests that were served (200) or failed otherwise are not rejections:
    # they once were averaged into the "HTTP 503 rejection latency".
    probe = {"count": 2, "latencies_ms": [2.0, 150.0, 4.0, 90.0], "statuses": [503, 200, 503, 500]}
    out = build_performance(
        [], [probe], model_label="cpu/m", model_checks="PASS", framework_checks="PASS", memory_verdict="PASS"
    )
    (r,) = out["rejection_latency"]
    assert (r["n"], r["median_ms"], r["max_ms"], r["latencies_ms"], r["not_503"]) == (2, 3.0, 4.0, [2.0, 4.0], 2)


def test_each_row_carries_its_own_counts_verdict() -> None:
    # Count 1 admitted, count 2 failed: the table once labelled both rows with the run-wide
    # FAIL ("NOT ADMITTED" on an admitted count).
    series = [
        {"series": "candidate_n_slots", "count": n, "cold_s": 0.1, "repeats": [], "estimate": False} for n in (1, 2)
    ]
    out = build_performance(
        series,
        [],
        model_label="cpu/m",
        model_checks="FAIL",
        framework_checks="PASS",
        memory_verdict="PASS",
        count_verdicts={1: "PASS", 2: "FAIL"},
        admitted_counts=[1],
    )
    rows = {r["count"]: r for r in out["rows"]}
    assert (rows[1]["admitted"], rows[1]["model_checks"]) == (True, "PASS")
    assert (rows[2]["admitted"], rows[2]["model_checks"]) == (False, "FAIL")
