"""M5 stabilisation rule and the growth diagnostics measured against it (pure: no I/O).

The rule is declared in the plan before the run; without one, M5.stable stays PENDING with
the diagnostic: no bound is ever derived from the data. Two growths are measured: the
per-wave peak over repeated-use waves, and the residue left after each unload/reload cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from parval.gates.m5_samples import METRICS, StartMemory, StartSummary, is_repeat_wave, round3

MIN_UNLOAD_CYCLES = 2


@dataclass(frozen=True)
class StabilisationRule:
    """Declared in the plan BEFORE the run (it is part of the plan hash)."""

    last_k_waves: int  # e.g. 5
    max_growth_mib: float  # last - first per-wave peak over the last K waves must stay below this
    metric: str = "host_rss"  # "host_rss" | "host_pss" | "gpu_device" | "gpu_process"

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"unknown stabilisation metric {self.metric!r}; use one of {sorted(METRICS)}")
        if self.last_k_waves < 2:
            raise ValueError("last_k_waves must be at least 2 to measure growth")
        if self.max_growth_mib <= 0:
            raise ValueError("max_growth_mib must be positive")


@dataclass(frozen=True)
class CountInputs:
    """What every M5 judge sees at one count: the summarised starts and the plan's terms."""

    count: int
    sums: list[StartSummary]  # summarise_start() of each start, in start order
    rule: StabilisationRule | None
    gpu_required: bool
    baseline: list[StartMemory] | None
    # Why the plan compares memory with the baseline build (memory.baseline_comparison).
    baseline_reason: str | None = None
    # The starts a verdict at this count rests on (the procedure's three, or the plan's more).
    expected_starts: int = 0


def wave_growth(sums: list[StartSummary], metric: str, k: int | None) -> list[dict[str, Any]]:
    """Per start: the repeated-use wave peaks, their wave-to-wave change, and the growth over
    the last `k` waves (all of them when k is None)."""
    out = []
    for s in sums:
        ms = s["metrics"][metric]
        waves = [w for w in (ms["wave_peaks"] if ms else []) if is_repeat_wave(str(w["phase"]))]
        peaks = [float(w["peak_mib"]) for w in waves]
        deltas = [round(b - a, 3) for a, b in zip(peaks, peaks[1:], strict=False)]
        window = peaks[-k:] if k else peaks
        total = round(window[-1] - window[0], 3) if len(window) >= 2 else None
        out.append(
            {
                "start_index": s["start_index"],
                "waves": len(peaks),
                "first_wave": waves[0]["phase"] if waves else None,
                "last_wave": waves[-1]["phase"] if waves else None,
                "wave_peaks_mib": peaks,
                "growth_per_wave_mib": deltas,
                "window_waves": len(window),
                "window_growth_mib": total,
                "window_growth_per_wave_mib": None if total is None else round(total / (len(window) - 1), 3),
            }
        )
    return out


def tested_range(growth: list[dict[str, Any]], count: int) -> str:
    """How many starts, waves and requests the verdict rests on."""
    shapes = {(g["waves"], g["first_wave"], g["last_wave"]) for g in growth}
    if len(shapes) == 1:
        waves, first, last = shapes.pop()
        span = f" ({first} … {last})" if waves else ""
        return (
            f"tested range at count {count}: {len(growth)} starts x {waves} repeated-use "
            f"waves{span} x {count} requests = {len(growth) * waves * count} requests"
        )
    parts = [
        f"start {g['start_index']}: {g['waves']} repeated-use waves"
        + (f" ({g['first_wave']} … {g['last_wave']})" if g["waves"] else "")
        + f", {g['waves'] * count} requests"
        for g in growth
    ]
    return f"tested range at count {count}: " + "; ".join(parts)


class RetentionRow(TypedDict):
    start_index: int
    cycles: int
    residues_mib: list[float]
    growth_per_cycle_mib: list[float]


class Retention(TypedDict):
    """The retained-after-unload verdict of one metric (`status`: pending, unjudged, pass,
    fail) with its text, over the starts' rows."""

    metric: str
    bound_mib: float | None
    starts: list[RetentionRow]
    status: NotRequired[str]
    text: NotRequired[str]


def retention(sums: list[StartSummary], metric: str, bound: float | None) -> Retention:
    """Idle level after each unload against the idle level before the first load.

    An allocator that keeps freed weights cached shows a residue that may step up once and
    then stays (not a leak); a server that keeps weights after a logical unload adds a copy
    with every reload. So: settled (the last cycle-to-cycle change below the bound) is
    PASS, reported with its size; growth beyond the bound on every cycle of every start,
    over at least three cycles, is FAIL; anything between stays PENDING with the
    diagnostic. Fewer than two cycles cannot tell them apart (PENDING)."""
    rows: list[RetentionRow] = []
    for s in sums:
        ms = s["metrics"][metric]
        retained = ms.get("retained_after_unload") if ms else None
        episodes = (retained.get("episodes") if retained else None) or []
        residues = [float(residue) for e in episodes if (residue := e.get("residue_mib")) is not None]
        deltas = [round(b - a, 3) for a, b in zip(residues, residues[1:], strict=False)]
        rows.append(
            {
                "start_index": s["start_index"],
                "cycles": len(residues),
                "residues_mib": [round3(x) for x in residues],
                "growth_per_cycle_mib": deltas,
            }
        )
    out: Retention = {"metric": metric, "bound_mib": bound, "starts": rows}
    short = [r for r in rows if r["cycles"] < MIN_UNLOAD_CYCLES]
    if short:
        out["status"] = "pending"
        out["text"] = (
            f"{metric} retained after unload: "
            + "; ".join(
                f"start {r['start_index']} has {r['cycles']} unload/reload cycle(s) with an idle level" for r in short
            )
            + f" (at least {MIN_UNLOAD_CYCLES} are needed to tell a constant residue "
            "from memory kept after each unload)"
        )
        return out
    cycles = min(r["cycles"] for r in rows)
    span = (
        f"{len(rows)} starts x {cycles}"
        + ("+" if any(r["cycles"] > cycles for r in rows) else "")
        + " unload/reload cycles"
    )

    def listing(r: RetentionRow) -> str:
        residues = ", ".join(f"{x:+.1f}" for x in r["residues_mib"])
        return f"start {r['start_index']} residues {residues} MiB"

    last = [float(r["residues_mib"][-1]) for r in rows]
    settled_text = (
        f"{metric} residue after unload settled at {min(last):+.1f} … {max(last):+.1f} MiB "
        "over the idle level before the first load"
    )
    if bound is None:
        out["status"] = "unjudged"
        out["text"] = f"{settled_text.replace('settled at', 'last')} ({span})"
        return out
    growing = [r for r in rows if r["growth_per_cycle_mib"][-1] >= bound]
    if not growing:
        out["status"] = "pass"
        out["text"] = (
            f"{settled_text}; the last cycle changed it by less than {bound:g} MiB in every "
            f"start ({span}; {'; '.join(listing(r) for r in rows)})"
        )
        return out
    diag = "; ".join(
        f"{listing(r)} (per cycle {', '.join(f'{d:+.1f}' for d in r['growth_per_cycle_mib'])} MiB, bound {bound:g} MiB)"
        for r in growing
    )
    every = len(growing) == len(rows) and all(d >= bound for r in rows for d in r["growth_per_cycle_mib"])
    if every and cycles >= MIN_UNLOAD_CYCLES + 1:
        out["status"] = "fail"
        out["text"] = (
            f"{metric} retained after unload grows with every unload/reload cycle in every "
            f"start (memory kept after a logical unload): {diag}; {span}"
        )
    else:
        out["status"] = "pending"
        out["text"] = (
            f"{metric} retained after unload still grew on the last cycle (investigate: "
            f"allocator caching settles, kept weights keep growing): {diag}; {span}"
        )
    return out


def retention_metrics(sums: list[StartSummary], rule: StabilisationRule | None) -> list[str]:
    """The rule's metric, plus per-process (else device-wide) GPU memory where sampled."""
    first = rule.metric if rule else "host_rss"
    metrics = [first] if all(s["metrics"][first] for s in sums) else []
    if all(s["gpu_available"] for s in sums):
        for gpu in ("gpu_process", "gpu_device"):
            if all(s["metrics"][gpu] for s in sums):
                if gpu not in metrics:
                    metrics.append(gpu)
                break
    return metrics
