"""M5 memory assessment from sampler streams (pure: no I/O).

Phases follow the campaign's PhaseTracker names: 'startup'/'idle', 'cold_load',
'cold_wave', '<kind>_wave:<k>' (repeated-use waves), 'unload', 'reload', 'serial'.
The stabilisation rule is declared in the plan before the run; without one, M5.stable
stays PENDING with the diagnostic: no bound is ever derived from the data.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from parval.status import Result, Status, blocked, failed, not_applicable, passed, pending

# metric name -> (sample kind, sample key)
METRICS: dict[str, tuple[str, str]] = {
    "host_rss": ("host", "rss_mib"),
    "host_pss": ("host", "pss_mib"),
    "gpu_device": ("gpu", "device_used_mib"),
    "gpu_process": ("gpu", "process_mib"),
}

INCLUDES: dict[str, str] = {
    "host_rss": "process tree RSS: weights + sessions + workspaces resident in host memory "
    "(touched mmapped weight pages included; pages shared between tree processes counted per process)",
    "host_pss": "process tree PSS: as RSS, with shared pages split between processes",
    "gpu_device": "NVML device-wide used memory: every process on the device plus driver "
    "contexts (the v2 struct excludes driver-reserved memory; v1 includes it)",
    "gpu_process": "NVML per-process GPU memory of the server tree: weights + contexts + workspaces on device",
}

_IDLE = {"startup", "idle", "idle_after_unload", "idle-after-unload"}
_COLD = {"cold_load", "cold_wave"}
REQUIRED_GROUPS = ("idle", "cold", "warm", "unload", "reload")


@dataclass(frozen=True)
class StabilisationRule:
    """Declared in the plan BEFORE the run (it is part of the plan hash)."""

    last_k_waves: int  # e.g. 5
    max_growth_mib: float  # last - first per-wave peak over the last K waves must stay below this
    metric: str = "host_rss"  # "host_rss" | "host_pss" | "gpu_device" | "gpu_process"

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(
                f"unknown stabilisation metric {self.metric!r}; use one of {sorted(METRICS)}"
            )
        if self.last_k_waves < 2:
            raise ValueError("last_k_waves must be at least 2 to measure growth")
        if self.max_growth_mib <= 0:
            raise ValueError("max_growth_mib must be positive")


@dataclass
class StartMemory:
    count: int
    start_index: int
    samples: list[dict[str, Any]]  # as emitted by MemorySampler
    gpu_info: str  # sampler info()["gpu"]
    interval: dict[str, float]
    guard_stop: dict[str, Any] | None = None  # sample that tripped the guard


# --- phase helpers ---------------------------------------------------------------------


def _base(phase: str) -> str:
    return phase.split(":", 1)[0]


def _is_repeat_wave(phase: str) -> bool:
    base = _base(phase)
    return base.endswith("_wave") and base != "cold_wave"


def _group(phase: str) -> str | None:
    base = _base(phase)
    if base in _IDLE:
        return "idle"
    if base in _COLD:
        return "cold"
    if _is_repeat_wave(phase):
        return "warm"
    if _is_unload(phase):
        return "unload"
    if base == "reload":
        return base
    return None


def _is_unload(phase: str) -> bool:
    base = _base(phase)  # 'unload', and the M4 probes' 'unload_targeted' / 'unload_all'
    return base == "unload" or base.startswith("unload_")


def _gpu_available(gpu_info: str) -> bool:
    return not gpu_info.startswith("unavailable")


def _points(samples: list[dict[str, Any]], metric: str) -> list[tuple[float, str, float]]:
    kind, key = METRICS[metric]
    pts = [
        (float(s["t"]), str(s["phase"]), float(s[key]))
        for s in samples
        if s.get("kind") == kind and s.get(key) is not None
    ]
    pts.sort(key=lambda p: p[0])
    return pts


def _segments(points: list[tuple[float, str, float]]) -> list[tuple[str, list[float]]]:
    """Contiguous runs of one phase, in time order."""
    segs: list[tuple[str, list[float]]] = []
    for _, phase, value in points:
        if segs and segs[-1][0] == phase:
            segs[-1][1].append(value)
        else:
            segs.append((phase, [value]))
    return segs


def _settled(values: list[float]) -> float:
    """Median of the second half: the level a phase settled at, not its transient."""
    return float(statistics.median(values[len(values) // 2 :]))


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


# --- per-start summary -----------------------------------------------------------------


def _metric_summary(points: list[tuple[float, str, float]]) -> dict[str, Any] | None:
    if not points:
        return None
    segs = _segments(points)
    leading_idle: list[float] = []
    for phase, values in segs:
        if _base(phase) not in _IDLE:
            break
        leading_idle.extend(values)
    idle = _settled(leading_idle) if leading_idle else None

    phase_peaks: dict[str, float] = {}
    for phase, values in segs:
        phase_peaks[phase] = max(phase_peaks.get(phase, values[0]), max(values))
    # first request = the first cold episode; a later cold_load (an M4 reload probe) is not it
    cold: list[float] = []
    for phase, values in segs:
        group = _group(phase)
        if group == "cold":
            cold.extend(values)
        elif group != "idle":
            break
    first_peak = max(cold) if cold else None
    # dict order = first appearance in time, so waves come out in the order they ran
    wave_items = [(ph, peak) for ph, peak in phase_peaks.items() if _base(ph).endswith("_wave")]
    waves = [{"phase": ph, "peak_mib": _r(peak)} for ph, peak in wave_items]
    repeat = [peak for ph, peak in wave_items if _is_repeat_wave(ph)]

    episodes: list[dict[str, Any]] = []
    for i, (phase, values) in enumerate(segs):
        if not _is_unload(phase):
            continue
        src_phase, src_values = phase, values
        if i + 1 < len(segs) and _base(segs[i + 1][0]) in _IDLE:
            src_phase, src_values = segs[i + 1]  # idle after unload: what stays retained
        value = _settled(src_values)
        episodes.append(
            {
                "source_phase": src_phase,
                "value_mib": _r(value),
                "residue_mib": None if idle is None else _r(value - idle),
            }
        )
    retained = None
    if episodes:
        retained = {**episodes[0], "episodes": episodes}
    return {
        "samples": len(points),
        "idle_baseline_mib": _r(idle),
        "first_request_peak_mib": _r(first_peak),
        "first_request_over_idle_mib": None
        if idle is None or first_peak is None
        else _r(first_peak - idle),
        "phase_peaks_mib": {k: _r(v) for k, v in phase_peaks.items()},
        "wave_peaks": waves,
        "warm_steady_state_mib": _r(statistics.median(repeat)) if repeat else None,
        "retained_after_unload": retained,
    }


def _achieved_interval(samples: list[dict[str, Any]], kind: str) -> dict[str, float] | None:
    ts = sorted(float(s["t"]) for s in samples if s.get("kind") == kind)
    gaps = [b - a for a, b in zip(ts, ts[1:], strict=False)]
    if not gaps:
        return None
    return {"median_s": round(statistics.median(gaps), 6), "max_s": round(max(gaps), 6)}


def summarise_start(start: StartMemory) -> dict[str, Any]:
    """Idle baseline, first-request peak, per-phase and per-wave peaks, warm steady state
    and retained-after-unload residue, for every metric that was sampled."""
    phases: dict[str, list[str]] = {}
    for kind in ("host", "gpu"):
        seen = {str(s["phase"]) for s in start.samples if s.get("kind") == kind}
        phases[kind] = sorted(seen)
    return {
        "count": start.count,
        "start_index": start.start_index,
        "gpu_info": start.gpu_info,
        "gpu_available": _gpu_available(start.gpu_info),
        "interval": dict(start.interval),
        "achieved_interval_s": {k: _achieved_interval(start.samples, k) for k in ("host", "gpu")},
        "samples": {
            k: sum(1 for s in start.samples if s.get("kind") == k) for k in ("host", "gpu")
        },
        "phases_sampled": phases,
        "metrics": {m: _metric_summary(_points(start.samples, m)) for m in METRICS},
        "guard_stop": start.guard_stop,
    }


# --- assertions ------------------------------------------------------------------------


def _missing_groups(summary: dict[str, Any], kind: str) -> list[str]:
    present = {_group(p) for p in summary["phases_sampled"][kind]}
    return [g for g in REQUIRED_GROUPS if g not in present]


def _interval_text(sums: list[dict[str, Any]]) -> str:
    iv = sums[0]["interval"]
    parts = []
    for kind in ("host", "gpu"):
        conf = iv.get(f"{kind}_interval_s", iv.get(kind))
        got = [
            s["achieved_interval_s"][kind]["median_s"]
            for s in sums
            if s["achieved_interval_s"][kind]
        ]
        text = (
            f"{kind} every {conf * 1000:.0f} ms"
            if conf is not None
            else f"{kind} interval not recorded"
        )
        if got:
            text += f" (achieved median {statistics.median(got) * 1000:.1f} ms)"
        parts.append(text)
    return ", ".join(parts)


def _gpu_unavailable(sums: list[dict[str, Any]]) -> list[str]:
    return sorted({s["gpu_info"] for s in sums if not s["gpu_available"]})


def _assess_sampled(sums: list[dict[str, Any]], gpu_required: bool) -> Result:
    per_start = []
    host_gaps, gpu_gaps = [], []
    for s in sums:
        miss_host = _missing_groups(s, "host")
        miss_gpu = _missing_groups(s, "gpu") if s["gpu_available"] else []
        if miss_host:
            host_gaps.append(f"start {s['start_index']}: no host samples in {', '.join(miss_host)}")
        if miss_gpu and gpu_required:
            gpu_gaps.append(f"start {s['start_index']}: no GPU samples in {', '.join(miss_gpu)}")
        per_start.append(
            {
                "start_index": s["start_index"],
                "samples": s["samples"],
                "gpu": s["gpu_info"],
                "achieved_interval_s": s["achieved_interval_s"],
                "phases_sampled": s["phases_sampled"],
                "missing": {"host": miss_host, "gpu": miss_gpu},
            }
        )
    evidence = {
        "interval": sums[0]["interval"],
        "required_phase_groups": list(REQUIRED_GROUPS),
        "starts": per_start,
    }
    limitations: list[str] = []
    unavailable = _gpu_unavailable(sums)
    host_text = (
        f"host memory sampled in every start ({len(sums)}) across {'/'.join(REQUIRED_GROUPS)}"
        if not host_gaps
        else "host memory incomplete: " + "; ".join(host_gaps)
    )
    if not gpu_required:
        limitations.append(
            "GPU memory not applicable for this backend (plan: gpu_required = false)"
        )
        gpu_text = "GPU memory not applicable"
    elif unavailable:
        limitations.append("GPU memory PENDING: " + "; ".join(unavailable))
        gpu_text = "GPU memory PENDING (" + "; ".join(unavailable) + ")"
    elif gpu_gaps:
        gpu_text = "GPU memory incomplete: " + "; ".join(gpu_gaps)
    else:
        gpu_text = f"GPU memory sampled in every start ({sums[0]['gpu_info']})"
    reason = f"{host_text}; {gpu_text}; {_interval_text(sums)}"
    ok = not host_gaps and (not gpu_required or (not unavailable and not gpu_gaps))
    result = (
        passed("M5.sampled", reason, **evidence)
        if ok
        else pending("M5.sampled", reason, **evidence)
    )
    result.limitations = limitations
    return result


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f} MiB"


def _assess_peaks(sums: list[dict[str, Any]], gpu_required: bool) -> Result:
    wanted = ["host_rss", "host_pss"] + (["gpu_device", "gpu_process"] if gpu_required else [])
    per_start = []
    for s in sums:
        row: dict[str, Any] = {"start_index": s["start_index"]}
        for m in wanted:
            ms = s["metrics"][m]
            if ms is not None:
                retained = ms["retained_after_unload"] or {}
                row[m] = {
                    "first_request_peak_mib": ms["first_request_peak_mib"],
                    "idle_baseline_mib": ms["idle_baseline_mib"],
                    "first_request_over_idle_mib": ms["first_request_over_idle_mib"],
                    "retained_after_unload_mib": retained.get("value_mib"),
                    "residue_mib": retained.get("residue_mib"),
                }
        per_start.append(row)

    def peaks(metric: str) -> list[float | None]:
        return [r.get(metric, {}).get("first_request_peak_mib") for r in per_start]

    summary = {
        m: max(v for v in peaks(m) if v is not None)
        for m in wanted
        if any(v is not None for v in peaks(m))
    }
    evidence = {
        "includes": {m: INCLUDES[m] for m in wanted},
        "max_first_request_peak_mib": summary,
        "starts": per_start,
        "note": "retained-after-unload is reported, not judged: a logical unload is not freed memory",
    }
    missing = []
    if any(v is None for v in peaks("host_rss")):
        missing.append(
            "host first-request peak missing (no cold_load/cold_wave host samples) in some start"
        )
    unavailable = _gpu_unavailable(sums)
    if gpu_required and unavailable:
        missing.append("GPU first-request peak not sampled: " + "; ".join(unavailable))
    elif gpu_required and any(v is None for v in peaks("gpu_device")):
        missing.append("GPU first-request peak missing (no cold GPU samples) in some start")
    figures = ", ".join(f"{m} {_fmt(v)}" for m, v in summary.items())
    reason = f"first-request peak (max over {len(sums)} starts): {figures or 'none'}"
    if missing:
        return pending("M5.peaks", reason + "; " + "; ".join(missing), **evidence)
    return passed("M5.peaks", reason + f"; includes {INCLUDES['host_rss']}", **evidence)


def _growth(sums: list[dict[str, Any]], metric: str, k: int | None) -> list[dict[str, Any]]:
    out = []
    for s in sums:
        ms = s["metrics"][metric]
        waves = [w for w in (ms["wave_peaks"] if ms else []) if _is_repeat_wave(str(w["phase"]))]
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
                "window_growth_per_wave_mib": None
                if total is None
                else round(total / (len(window) - 1), 3),
            }
        )
    return out


def _tested_range(growth: list[dict[str, Any]], count: int) -> str:
    shapes = {(g["waves"], g["first_wave"], g["last_wave"]) for g in growth}
    if len(shapes) == 1:
        waves, first, last = shapes.pop()
        span = f" ({first} … {last})" if waves else ""
        return (
            f"tested range at count {count}: {len(growth)} starts x {waves} repeated-use waves{span}"
            f" x {count} requests = {len(growth) * waves * count} requests"
        )
    parts = [
        f"start {g['start_index']}: {g['waves']} repeated-use waves"
        + (f" ({g['first_wave']} … {g['last_wave']})" if g["waves"] else "")
        + f", {g['waves'] * count} requests"
        for g in growth
    ]
    return f"tested range at count {count}: " + "; ".join(parts)


MIN_UNLOAD_CYCLES = 2


def _retention(sums: list[dict[str, Any]], metric: str, bound: float | None) -> dict[str, Any]:
    """Idle level after each unload against the idle level before the first load.

    An allocator that keeps freed weights cached shows a residue that may step up once and
    then stays (not a leak); a server that keeps weights after a logical unload adds a copy
    with every reload. So: settled (the last cycle-to-cycle change below the bound) is
    PASS, reported with its size; growth beyond the bound on every cycle of every start,
    over at least three cycles, is FAIL; anything between stays PENDING with the
    diagnostic. Fewer than two cycles cannot tell them apart (PENDING)."""
    rows = []
    for s in sums:
        ms = s["metrics"][metric]
        episodes = ((ms or {}).get("retained_after_unload") or {}).get("episodes") or []
        residues = [float(e["residue_mib"]) for e in episodes if e.get("residue_mib") is not None]
        deltas = [round(b - a, 3) for a, b in zip(residues, residues[1:], strict=False)]
        rows.append({"start_index": s["start_index"], "cycles": len(residues),
                     "residues_mib": [_r(x) for x in residues], "growth_per_cycle_mib": deltas})
    out: dict[str, Any] = {"metric": metric, "bound_mib": bound, "starts": rows}
    short = [r for r in rows if r["cycles"] < MIN_UNLOAD_CYCLES]
    if short:
        out["status"] = "pending"
        out["text"] = (f"{metric} retained after unload: " + "; ".join(
            f"start {r['start_index']} has {r['cycles']} unload/reload cycle(s) with an idle level"
            for r in short) + f" (at least {MIN_UNLOAD_CYCLES} are needed to tell a constant residue "
            "from memory kept after each unload)")
        return out
    cycles = min(r["cycles"] for r in rows)
    span = (f"{len(rows)} starts x {cycles}"
            + ("+" if any(r["cycles"] > cycles for r in rows) else "") + " unload/reload cycles")

    def listing(r: dict[str, Any]) -> str:
        return f"start {r['start_index']} residues {', '.join(f'{x:+.1f}' for x in r['residues_mib'])} MiB"

    last = [float(r["residues_mib"][-1]) for r in rows]
    settled_text = (f"{metric} residue after unload settled at {min(last):+.1f} … {max(last):+.1f} MiB over "
                    f"the idle level before the first load")
    if bound is None:
        out["status"] = "unjudged"
        out["text"] = f"{settled_text.replace('settled at', 'last')} ({span})"
        return out
    growing = [r for r in rows if r["growth_per_cycle_mib"][-1] >= bound]
    if not growing:
        out["status"] = "pass"
        out["text"] = (f"{settled_text}; the last cycle changed it by less than {bound:g} MiB in every "
                       f"start ({span}; {'; '.join(listing(r) for r in rows)})")
        return out
    diag = "; ".join(
        f"{listing(r)} (per cycle {', '.join(f'{d:+.1f}' for d in r['growth_per_cycle_mib'])} MiB, "
        f"bound {bound:g} MiB)" for r in growing)
    every = len(growing) == len(rows) and all(d >= bound for r in rows for d in r["growth_per_cycle_mib"])
    if every and cycles >= MIN_UNLOAD_CYCLES + 1:
        out["status"] = "fail"
        out["text"] = (f"{metric} retained after unload grows with every unload/reload cycle in every "
                       f"start (memory kept after a logical unload): {diag}; {span}")
    else:
        out["status"] = "pending"
        out["text"] = (f"{metric} retained after unload still grew on the last cycle (investigate: "
                       f"allocator caching settles, kept weights keep growing): {diag}; {span}")
    return out


def _retention_metrics(sums: list[dict[str, Any]], rule: StabilisationRule | None) -> list[str]:
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


def _with_retention(r: Result, retention: list[dict[str, Any]]) -> Result:
    """Combine the per-wave verdict with the retained-after-unload one."""
    if not retention:
        return r
    texts = "; ".join(x["text"] for x in retention)
    fails = [x["text"] for x in retention if x["status"] == "fail"]
    unclear = [x["text"] for x in retention if x["status"] == "pending"]
    if r.status is not Status.FAIL and fails:
        return Result("M5.stable", Status.FAIL, "; ".join(fails) + f"; per-wave: {r.reason}", r.evidence)
    if r.status is Status.PASS and unclear:
        return Result("M5.stable", Status.PENDING, "; ".join(unclear) + f"; per-wave: {r.reason}", r.evidence)
    r.reason = f"{r.reason}; {texts}"
    return r


def _assess_stable(
    count: int, sums: list[dict[str, Any]], rule: StabilisationRule | None, gpu_required: bool
) -> Result:
    diagnostics = {
        m: _growth(sums, m, rule.last_k_waves if rule else None)
        for m in METRICS
        if any(s["metrics"][m] for s in sums)
    }
    residue = {
        m: [
            {"start_index": s["start_index"], **(s["metrics"][m]["retained_after_unload"] or {})}
            for s in sums
            if s["metrics"][m]
        ]
        for m in diagnostics
    }
    evidence: dict[str, Any] = {
        "rule": None
        if rule is None
        else {
            "last_k_waves": rule.last_k_waves,
            "max_growth_mib": rule.max_growth_mib,
            "metric": rule.metric,
        },
        "growth": diagnostics,
        "retained_after_unload": residue,
    }
    limitations = [
        "retained-after-unload: the idle level after each unload is compared with the one before "
        "the first load; a constant residue is reported, a residue growing from cycle to cycle is judged",
        "FAIL only when the per-wave peak rises on every wave in every start and exceeds the "
        "declared bound in every start; any other growth stays PENDING for investigation "
        "(allocator caching alone is not a leak)",
    ]

    retention = [_retention(sums, m, rule.max_growth_mib if rule else None)
                 for m in _retention_metrics(sums, rule)]
    evidence["retention"] = retention

    def out(r: Result) -> Result:
        if r.status is not Status.BLOCKED:
            r = _with_retention(r, retention)
        r.limitations = limitations
        return r

    guards = [s for s in sums if s["guard_stop"]]
    if guards:
        g = guards[0]["guard_stop"]
        used = g.get("device_used_mib")
        limit = g.get("guard_mib", guards[0]["interval"].get("guard_mib"))
        why = g.get("reason") or f"memory guard: {_num(used)} MiB >= {_num(limit)} MiB"
        evidence["guard_stops"] = [
            {"start_index": s["start_index"], **s["guard_stop"]} for s in guards
        ]
        return out(
            blocked(
                "M5.stable",
                f"{why} (start {guards[0]['start_index']}, phase {g.get('phase')}); a guard stop is a "
                "resource-budget result, never a reason to lower quality settings",
                **evidence,
            )
        )

    range_metric = rule.metric if rule else "host_rss"
    tested = _tested_range(
        diagnostics.get(range_metric) or _growth(sums, range_metric, None), count
    )
    if rule is None:
        return out(
            pending(
                "M5.stable",
                f"no stabilisation rule declared in the plan; {tested}; growth diagnostic kept "
                "in evidence (no bound is inferred from the data)",
                **evidence,
            )
        )
    if rule.metric.startswith("gpu") and not gpu_required:
        return out(
            pending(
                "M5.stable",
                f"rule metric {rule.metric} but GPU memory is not applicable",
                **evidence,
            )
        )
    unavailable = _gpu_unavailable(sums) if rule.metric.startswith("gpu") else []
    if unavailable or rule.metric not in diagnostics:
        why = "; ".join(unavailable) or "no samples"
        return out(
            pending("M5.stable", f"rule metric {rule.metric} not sampled: {why}", **evidence)
        )

    growth = diagnostics[rule.metric]
    short = [g for g in growth if g["waves"] < rule.last_k_waves]
    if short:
        text = "; ".join(f"start {g['start_index']} has {g['waves']}" for g in short)
        return out(
            pending(
                "M5.stable",
                f"not enough waves: {text} < K={rule.last_k_waves} repeated-use waves ({rule.metric}); {tested}",
                **evidence,
            )
        )
    bound = rule.max_growth_mib
    over = [g for g in growth if g["window_growth_mib"] >= bound]
    if not over:
        worst = max(g["window_growth_mib"] for g in growth)
        return out(
            passed(
                "M5.stable",
                f"{rule.metric} per-wave peak grew at most {worst:+.1f} MiB over the last "
                f"{rule.last_k_waves} waves in every start (declared bound < {bound:g} MiB); {tested}",
                **evidence,
            )
        )
    diag = "; ".join(
        f"start {g['start_index']}: {g['window_growth_per_wave_mib']:+.1f} MiB/wave over the last "
        f"{g['window_waves']} waves ({g['window_growth_mib']:+.1f} MiB >= bound {bound:g} MiB; "
        f"per wave {', '.join(f'{d:+.1f}' for d in g['growth_per_wave_mib'])} MiB)"
        for g in over
    )
    monotonic_everywhere = len(over) == len(growth) and all(
        all(d > 0 for d in g["growth_per_wave_mib"]) for g in growth
    )
    if monotonic_everywhere:
        return out(
            failed(
                "M5.stable",
                f"continuing growth in every start, on every wave: {diag}; {tested}",
                **evidence,
            )
        )
    return out(
        pending(
            "M5.stable",
            f"growth above the declared bound, not yet explained (investigate): {diag}; {tested}",
            **evidence,
        )
    )


def _num(x: Any) -> str:
    return f"{x:.0f}" if isinstance(x, int | float) else "?"


def _aggregate(sums: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Median over starts of the headline figures of each metric."""
    agg: dict[str, dict[str, float | None]] = {}
    for m in METRICS:
        rows = [s["metrics"][m] for s in sums if s["metrics"][m]]
        if not rows:
            continue
        fig: dict[str, float | None] = {}
        for key in ("idle_baseline_mib", "first_request_peak_mib", "warm_steady_state_mib"):
            vals = [r[key] for r in rows if r[key] is not None]
            fig[key] = _r(statistics.median(vals)) if vals else None
        res = [
            r["retained_after_unload"]["residue_mib"] for r in rows if r["retained_after_unload"]
        ]
        res = [v for v in res if v is not None]
        fig["residue_mib"] = _r(statistics.median(res)) if res else None
        agg[m] = fig
    return agg


def _assess_baseline(
    count: int, sums: list[dict[str, Any]], baseline: list[StartMemory] | None
) -> Result:
    if baseline is None:
        return not_applicable("M5.baseline", "no retention investigation or memory change declared")
    base = [summarise_start(b) for b in baseline if b.count == count]
    if not base:
        return pending(
            "M5.baseline", f"baseline has no start at count {count}; comparison not made"
        )
    cand, ref = _aggregate(sums), _aggregate(base)
    compare: dict[str, Any] = {}
    for m in cand.keys() & ref.keys():
        compare[m] = {
            key: {
                "baseline": ref[m][key],
                "candidate": cand[m][key],
                "delta": None
                if ref[m][key] is None or cand[m][key] is None
                else _r(float(cand[m][key] or 0) - float(ref[m][key] or 0)),
            }
            for key in cand[m]
        }
    host = compare.get("host_rss", {})
    text = ", ".join(
        f"{key} {_fmt(v['baseline'])} -> {_fmt(v['candidate'])}"
        for key, v in host.items()
        if key in ("first_request_peak_mib", "warm_steady_state_mib", "residue_mib")
    )
    return passed(
        "M5.baseline",
        f"compared with baseline at count {count} ({len(base)} baseline / {len(sums)} candidate "
        f"starts; medians over starts): host_rss {text or 'n/a'}",
        comparison=compare,
        baseline_starts=len(base),
        candidate_starts=len(sums),
    )


def assess_m5(
    starts: list[StartMemory],
    rule: StabilisationRule | None,
    *,
    baseline: list[StartMemory] | None = None,
    gpu_required: bool = True,
) -> list[Result]:
    """M5.sampled/peaks/stable/baseline for every count present in `starts`, in count order.

    `gpu_required=False` is for CPU backends: GPU memory is then not applicable rather
    than pending.
    """
    results: list[Result] = []
    for count in sorted({s.count for s in starts}):
        group = sorted((s for s in starts if s.count == count), key=lambda s: s.start_index)
        sums = [summarise_start(s) for s in group]
        for r in (
            _assess_sampled(sums, gpu_required),
            _assess_peaks(sums, gpu_required),
            _assess_stable(count, sums, rule, gpu_required),
            _assess_baseline(count, sums, baseline),
        ):
            r.count = count
            results.append(r)
    return results


def preflight_estimate(
    two_slot_mib: float,
    one_slot_mib: float,
    slots: int,
    available_mib: float,
    margin_mib: float = 1024,
) -> tuple[bool, str]:
    """The survey preflight: estimate = two-slot retained + (slots - 2) x (two - one).

    The count is skipped when the estimate exceeds available - margin. A negative 1->2
    increment (measurement noise) is clamped to zero so the estimate never undercuts the
    measured two-slot figure.
    """
    if slots < 1:
        raise ValueError("slots must be at least 1")
    increment = max(0.0, two_slot_mib - one_slot_mib)
    if slots == 1:
        estimate = one_slot_mib
        arithmetic = f"estimate = one-slot {one_slot_mib:.0f} MiB"
    else:
        estimate = two_slot_mib + (slots - 2) * increment
        arithmetic = (
            f"estimate = two-slot {two_slot_mib:.0f} MiB + ({slots} - 2) x increment "
            f"{increment:.0f} MiB (two {two_slot_mib:.0f} - one {one_slot_mib:.0f}"
            f"{', clamped at 0' if two_slot_mib < one_slot_mib else ''}) = {estimate:.0f} MiB"
        )
    budget = available_mib - margin_mib
    fits = estimate <= budget
    verdict = "fits" if fits else "skip (VRAM estimate)"
    return fits, (
        f"{arithmetic}; budget = available {available_mib:.0f} MiB - margin {margin_mib:.0f} MiB "
        f"= {budget:.0f} MiB; {verdict}"
    )


__all__ = [
    "INCLUDES",
    "METRICS",
    "StabilisationRule",
    "StartMemory",
    "assess_m5",
    "preflight_estimate",
    "summarise_start",
]
