"""Performance report P1-P5 (pure): separate from admission, verdicts kept visible.

Series records (one per series and count):
  {"series": "base_one_slot_serial" | "candidate_one_slot_serial" | "candidate_n_slots"
             | "independent_servers",
   "count": N, "cold_s": float | None, "estimate": bool,
   "repeats": [{"batch_s": float, "latencies_s": [...], "failures": int}],
   "blocked": "reason"  (optional: the series could not run for memory reasons)}
`base_one_slot_serial` at count N is the original server finishing N requests one after
another (measured); `estimate: true` marks an N x one-request figure, always labelled.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

from parval.jsonread import as_float, as_int, get, item, iterate

MIN_WARM_REPEATS = 3

BASE = "base_one_slot_serial"
CANDIDATE_SERIAL = "candidate_one_slot_serial"
CANDIDATE_N = "candidate_n_slots"
INDEPENDENT = "independent_servers"
SERIES = (BASE, CANDIDATE_SERIAL, CANDIDATE_N, INDEPENDENT)

TABLE_COLUMNS = (
    "backend/model",
    "model checks",
    "shared framework checks",
    "base one-request time",
    "candidate one-slot time",
    "time saved %",
    "measured base N-request serial time",
    "candidate N-slot completion time",
    "time saved %",
)

NOTES = [
    "time saved % = 100 * (base - candidate) / base; positive means less elapsed time",
    "cold start/loading is kept separate from the warm figures (cold_s per series)",
    f"times are warm repeats: median (min-max, n); at least {MIN_WARM_REPEATS} per figure",
    "repeats with request failures are excluded from timings and counted separately",
    "three batches do not support robust tail-latency claims",
    "quicker HTTP 503 rejection is not quicker generation (rejection latency reported separately)",
    "N independent one-slot servers are an optional deployment comparison; missing or "
    "memory-blocked, they do not fail model quality",
    "speed is not part of admission: a faster model whose checks are not PASS is not admitted",
]


def _first_word(verdict: str) -> str:
    word = verdict.strip().split(maxsplit=1)[0] if verdict.strip() else ""
    return word.rstrip(":;,.").upper()


def saved_pct(base: float | None, candidate: float | None) -> float | None:
    """100 * (base - candidate) / base: elapsed time saved, positive = less time."""
    if base is None or candidate is None or base <= 0:
        return None
    return round(100.0 * (base - candidate) / base, 1)


class LatencyStats(TypedDict):
    n: int
    min: float
    median: float
    max: float


class SeriesStats(TypedDict):
    """One series' warm figures at one count, as a performance row shows them."""

    n: int
    failed_repeats: int
    failed_requests: int
    estimate: bool
    cold_s: object
    median_s: float | None
    min_s: float | None
    max_s: float | None
    latency_s: LatencyStats | None
    blocked: NotRequired[str]


class RejectionStats(TypedDict):
    count: object
    n: int  # the 503 replies the figures are made of
    median_ms: float | None
    min_ms: float | None
    max_ms: float | None
    latencies_ms: list[float]
    not_503: int | None  # replies of another status, left out (None: statuses not recorded)


def _stats(record: Mapping[str, object] | None) -> SeriesStats | None:
    if record is None:
        return None
    repeats = list(iterate(record.get("repeats") or []))
    clean = [r for r in repeats if not get(r, "failures")]
    times = [as_float(item(r, "batch_s")) for r in clean]
    lat = [as_float(x) for r in clean for x in iterate(get(r, "latencies_s") or [])]
    out: SeriesStats = {
        "n": len(times),
        "failed_repeats": len(repeats) - len(clean),
        "failed_requests": sum(as_int(get(r, "failures") or 0) for r in repeats),
        "estimate": bool(record.get("estimate")),
        "cold_s": record.get("cold_s"),
        "median_s": round(statistics.median(times), 4) if times else None,
        "min_s": round(min(times), 4) if times else None,
        "max_s": round(max(times), 4) if times else None,
        "latency_s": None
        if not lat
        else {
            "n": len(lat),
            "min": round(min(lat), 4),
            "median": round(statistics.median(lat), 4),
            "max": round(max(lat), 4),
        },
    }
    if record.get("blocked"):
        out["blocked"] = str(record["blocked"])
    return out


def _find(series: Sequence[Mapping[str, object]], name: str, count: int) -> Mapping[str, object] | None:
    for rec in series:
        if rec.get("series") == name and as_int(rec.get("count", 0)) == count:
            return rec
    return None


def _row(series: Sequence[Mapping[str, object]], count: int, verdicts: dict[str, object]) -> dict[str, object]:
    """One N's figures; `verdicts` (backend/model, that count's checks and admission) lead."""
    figures = {
        "base_one_request": _stats(_find(series, BASE, 1)),
        "candidate_one_slot": _stats(_find(series, CANDIDATE_SERIAL, 1)),
        "base_n_serial": _stats(_find(series, BASE, count)),
        "candidate_n_slots": _stats(_find(series, CANDIDATE_N, count)),
    }
    pending: list[str] = []
    memory_blocked: list[str] = []
    for name, st in figures.items():
        if st is None:
            pending.append(f"{name}: not measured")
        elif st.get("blocked"):
            memory_blocked.append(f"{name}: {st['blocked']}")
        elif st["n"] < MIN_WARM_REPEATS:
            pending.append(f"{name}: {st['n']} clean warm repeats < {MIN_WARM_REPEATS}")
        elif st["estimate"] and name != "base_one_request":
            pending.append(f"{name}: estimate, not a measured serial time (P1)")

    def med(name: str) -> float | None:
        st = figures[name]
        return None if st is None else st["median_s"]

    independent = _stats(_find(series, INDEPENDENT, count))
    if independent is None:
        indep: dict[str, object] | str = "not measured"
    elif independent.get("blocked"):
        indep = f"memory blocked: {independent['blocked']}"
    else:
        indep = {**independent, "candidate_saved_pct": saved_pct(independent["median_s"], med("candidate_n_slots"))}
    status = "memory_blocked" if memory_blocked else ("pending" if pending else "completed")
    return {
        "count": count,
        **verdicts,
        **figures,
        "one_request_saved_pct": saved_pct(med("base_one_request"), med("candidate_one_slot")),
        "n_saved_pct": saved_pct(med("base_n_serial"), med("candidate_n_slots")),
        "candidate_serial_n": _stats(_find(series, CANDIDATE_SERIAL, count)),
        "independent_servers": indep,
        "status": status,
        "pending": pending + memory_blocked,
    }


def _rejection(probe: Mapping[str, object]) -> RejectionStats:
    """The HTTP 503 rejection latency: only replies that were 503 (a request that was served,
    or failed otherwise, is not a rejection), where the probe recorded each reply's status."""
    every = [as_float(x) for x in iterate(probe.get("latencies_ms") or [])]
    statuses = probe.get("statuses")
    if isinstance(statuses, list) and len(statuses) == len(every):
        lat = [x for x, status in zip(every, statuses, strict=True) if status == 503]
        others: int | None = len(every) - len(lat)
    else:  # recorded before statuses were: every reply counts, as it did then
        lat, others = every, None
    return {
        "count": probe.get("count"),
        "n": len(lat),
        "median_ms": round(statistics.median(lat), 3) if lat else None,
        "min_ms": round(min(lat), 3) if lat else None,
        "max_ms": round(max(lat), 3) if lat else None,
        "latencies_ms": lat,
        "not_503": others,
    }


def build_performance(
    series: Sequence[Mapping[str, object]],
    rejections: Sequence[Mapping[str, object]],
    *,
    model_label: str,
    model_checks: str,
    framework_checks: str,
    memory_verdict: str,
    count_verdicts: Mapping[int, str] | None = None,
    admitted_counts: Sequence[int] | None = None,
) -> dict[str, object]:
    """The evidence `performance` object: status, one row per N, raw samples, notes. Each
    row carries its own count's verdict and admission (`count_verdicts`, `admitted_counts`)
    where given, not the run-wide status (an admitted count is not labelled NOT ADMITTED
    because a larger one failed)."""
    unknown = sorted({str(r.get("series")) for r in series} - set(SERIES))
    if unknown:
        raise ValueError(f"unknown performance series {unknown}; expected {list(SERIES)}")
    counts = sorted({as_int(r["count"]) for r in series if r.get("series") != INDEPENDENT})
    verdicts = {
        "backend_model": model_label,
        "model_checks": model_checks,
        "framework_checks": framework_checks,
        "admitted": _first_word(model_checks) == "PASS" and _first_word(framework_checks) == "PASS",
    }

    def at(n: int) -> dict[str, object]:
        if count_verdicts is None or admitted_counts is None:
            return verdicts
        return {**verdicts, "model_checks": count_verdicts.get(n, "PENDING"), "admitted": n in admitted_counts}

    rows = [_row(series, n, at(n)) for n in counts]
    statuses = {r["status"] for r in rows}
    if not rows:
        status = "pending"
    elif "memory_blocked" in statuses:
        status = "memory_blocked"
    elif "pending" in statuses:
        status = "pending"
    else:
        status = "completed"
    if status == "pending" and _first_word(memory_verdict) == "BLOCKED":
        status = "memory_blocked"  # the missing figures could not run within memory
    notes = list(NOTES)
    if any(r["base_n_serial"] and item(r["base_n_serial"], "estimate") for r in rows):
        notes.append("some base N-request serial times are estimates (N x one request), labelled 'estimate'")
    if _first_word(model_checks) != "PASS":
        notes.append(f"model checks {model_checks}: not admitted whatever the speed figures say")
    return {
        "status": status,
        "model_checks": model_checks,
        "framework_checks": framework_checks,
        "memory_verdict": memory_verdict,
        "rows": rows,
        "samples": [
            {
                "series": r.get("series"),
                "count": r.get("count"),
                "cold_s": r.get("cold_s"),
                "estimate": bool(r.get("estimate")),
                "blocked": r.get("blocked"),
                "sample_count": len(list(iterate(r.get("repeats") or []))),
                "repeats": list(iterate(r.get("repeats") or [])),
            }
            for r in series
        ],
        "rejection_latency": [_rejection(p) for p in rejections],
        "notes": notes,
    }
