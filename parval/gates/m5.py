"""M5 memory: the sampler streams summarised per start, the declared stabilisation rule and
the growth measured against it, one judge per assertion (every count judged on its own
starts), and the loader that hands the judges each start's recorded samples.

The judges are pure: they read only the per-start summaries of `summarise_start`, so a fix
to a judge applies to an old run on `parval report --rejudge`. Only `memory_results` reads
the run directory (each start's memory.jsonl).

Phases follow the campaign's PhaseTracker names: 'startup'/'idle', 'cold_load',
'cold_wave', '<kind>_wave:<k>' (repeated-use waves), 'unload', 'reload', 'serial'.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, NotRequired, TypedDict, overload

from parval.gates.memory_trend import JITTER_MIB, Trend, growth_text, judge_trend, trend_text
from parval.jsonread import as_float
from parval.jsontypes import JsonObject, JsonValue
from parval.plan.judged import JudgedPlan, as_judged
from parval.procedure import judge_shape as shape
from parval.procedure.entry import MEMORY, PLAN, Entry, Gate
from parval.procedure.judge_shape import blocked, pending
from parval.rundir.event_index import Records
from parval.status import Result, Status
from parval.status import pending as pending_result

# Each judge below declares its registry entry, judged once per count.
_m5 = Gate("count")


# metric name -> (sample kind, sample key)
METRICS: dict[str, tuple[str, str]] = {
    "host_rss": ("host", "rss_mib"),
    "host_pss": ("host", "pss_mib"),
    "gpu_device": ("gpu", "device_used_mib"),
    "gpu_process": ("gpu", "process_mib"),
}

INCLUDES: dict[str, str] = {
    "host_rss": "process tree RSS: weights + sessions + workspaces resident in host memory "
    "(touched mmapped weight pages included; pages shared between tree processes counted "
    "per process)",
    "host_pss": "process tree PSS: as RSS, with shared pages split between processes",
    "gpu_device": "NVML device-wide used memory: every process on the device plus driver "
    "contexts (the v2 struct excludes driver-reserved memory; v1 includes it)",
    "gpu_process": "NVML per-process GPU memory of the server tree: weights + contexts + workspaces on device",
}

_IDLE = {"startup", "idle", "idle_after_unload", "idle-after-unload"}
_COLD = {"cold_load", "cold_wave"}
REQUIRED_GROUPS = ("idle", "cold", "warm", "unload", "reload")


class WavePeak(TypedDict):
    phase: str
    peak_mib: float


class Episode(TypedDict):
    """One unload's settled level (of the idle phase after it, where there is one)."""

    source_phase: str
    value_mib: float
    residue_mib: float | None  # over the idle baseline (None without one)


class Retained(Episode):
    """The first unload's episode, with every episode."""

    episodes: list[Episode]


class MetricSummary(TypedDict):
    """One sampled metric of one start (`summarise_start`), in MiB."""

    samples: int
    idle_baseline_mib: float | None
    first_request_peak_mib: float | None
    first_request_over_idle_mib: float | None
    phase_peaks_mib: dict[str, float]
    wave_peaks: list[WavePeak]
    warm_steady_state_mib: float | None
    retained_after_unload: Retained | None


class StartSummary(TypedDict):
    """`summarise_start` of one start: what every M5 judge reads."""

    count: int
    start_index: int
    gpu_info: str
    gpu_available: bool
    interval: dict[str, JsonValue]  # the sampler's configured intervals (s), as recorded
    achieved_interval_s: dict[str, dict[str, float] | None]
    samples: dict[str, int]
    phases_sampled: dict[str, list[str]]
    metrics: dict[str, MetricSummary | None]  # None: the metric was not sampled
    guard_stop: JsonObject | None
    sampler_recorded: bool


@dataclass
class StartMemory:
    """One server start's memory samples, as the campaign recorded them."""

    count: int
    start_index: int
    samples: list[JsonObject]  # memory.jsonl, as emitted by MemorySampler
    gpu_info: str  # sampler info()["gpu"]
    interval: dict[str, JsonValue]
    guard_stop: JsonObject | None = None  # sample that tripped the guard
    # Whether the sampler's own record (intervals, GPU info, guard) came with the start's end:
    # without it the interval cannot be reported, nor a guard stop ruled out.
    sampler_recorded: bool = True


# --- phase helpers ---------------------------------------------------------------------


def phase_base(phase: str) -> str:
    """The phase name without its ':<k>' wave index."""
    return phase.split(":", 1)[0]


def is_repeat_wave(phase: str) -> bool:
    """A repeated-use wave (warm or mixed), not the cold first wave."""
    base = phase_base(phase)
    return base.endswith("_wave") and base != "cold_wave"


def is_unload(phase: str) -> bool:
    """'unload', and the M4 probes' 'unload_targeted' / 'unload_all'."""
    base = phase_base(phase)
    return base == "unload" or base.startswith("unload_")


def phase_group(phase: str) -> str | None:
    """The REQUIRED_GROUPS entry a phase counts for (None: none of them)."""
    base = phase_base(phase)
    if base in _IDLE:
        return "idle"
    if base in _COLD:
        return "cold"
    if is_repeat_wave(phase):
        return "warm"
    if is_unload(phase):
        return "unload"
    if base == "reload":
        return base
    return None


def _gpu_available(gpu_info: str) -> bool:
    return not gpu_info.startswith("unavailable")


def gpu_unavailable(sums: list[StartSummary]) -> list[str]:
    """The distinct sampler explanations of starts without GPU samples."""
    return sorted({s["gpu_info"] for s in sums if not s["gpu_available"]})


@overload
def round3(x: float) -> float: ...
@overload
def round3(x: None) -> None: ...
@overload
def round3(x: float | None) -> float | None: ...
def round3(x: float | None) -> float | None:
    """MiB figures are reported to three decimals."""
    return None if x is None else round(x, 3)


def _points(samples: list[JsonObject], metric: str) -> list[tuple[float, str, float]]:
    kind, key = METRICS[metric]
    pts = [
        (as_float(s["t"]), str(s["phase"]), as_float(s[key]))
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


def _settled_after_unload(values: list[float]) -> float:
    """The lowest level of the second half of an unload (or the idle after it): what stays
    after the unload. Memory only falls during an unload, so a higher sample there is the
    teardown still in progress when the phase ended early (a busy machine), or the reload
    already begun when the sampler labelled it; memory kept after the unload is in every
    sample, the lowest too."""
    return min(values[len(values) // 2 :])


# --- per-start summary -----------------------------------------------------------------


def _metric_summary(points: list[tuple[float, str, float]]) -> MetricSummary | None:
    if not points:
        return None
    segs = _segments(points)
    leading_idle: list[float] = []
    for phase, values in segs:
        if phase_base(phase) not in _IDLE:
            break
        leading_idle.extend(values)
    idle = _settled(leading_idle) if leading_idle else None

    phase_peaks: dict[str, float] = {}
    for phase, values in segs:
        phase_peaks[phase] = max(phase_peaks.get(phase, values[0]), max(values))
    # first request = the first cold episode; a later cold_load (an M4 reload probe) is not it
    cold: list[float] = []
    for phase, values in segs:
        group = phase_group(phase)
        if group == "cold":
            cold.extend(values)
        elif group != "idle":
            break
    first_peak = max(cold) if cold else None
    # dict order = first appearance in time, so waves come out in the order they ran
    wave_items = [(ph, peak) for ph, peak in phase_peaks.items() if phase_base(ph).endswith("_wave")]
    waves: list[WavePeak] = [{"phase": ph, "peak_mib": round3(peak)} for ph, peak in wave_items]
    repeat = [peak for ph, peak in wave_items if is_repeat_wave(ph)]

    episodes: list[Episode] = []
    for i, (phase, values) in enumerate(segs):
        if not is_unload(phase):
            continue
        src_phase, src_values = phase, values
        if i + 1 < len(segs) and phase_base(segs[i + 1][0]) in _IDLE:
            src_phase, src_values = segs[i + 1]  # idle after unload: what stays retained
        value = _settled_after_unload(src_values)
        episodes.append(
            {
                "source_phase": src_phase,
                "value_mib": round3(value),
                "residue_mib": None if idle is None else round3(value - idle),
            }
        )
    retained: Retained | None = None
    if episodes:
        retained = {**episodes[0], "episodes": episodes}
    return {
        "samples": len(points),
        "idle_baseline_mib": round3(idle),
        "first_request_peak_mib": round3(first_peak),
        "first_request_over_idle_mib": None if idle is None or first_peak is None else round3(first_peak - idle),
        "phase_peaks_mib": {k: round3(v) for k, v in phase_peaks.items()},
        "wave_peaks": waves,
        "warm_steady_state_mib": round3(statistics.median(repeat)) if repeat else None,
        "retained_after_unload": retained,
    }


def _achieved_interval(samples: list[JsonObject], kind: str) -> dict[str, float] | None:
    ts = sorted(as_float(s["t"]) for s in samples if s.get("kind") == kind)
    gaps = [b - a for a, b in zip(ts, ts[1:], strict=False)]
    if not gaps:
        return None
    return {"median_s": round(statistics.median(gaps), 6), "max_s": round(max(gaps), 6)}


def summarise_start(start: StartMemory) -> StartSummary:
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
        "samples": {k: sum(1 for s in start.samples if s.get("kind") == k) for k in ("host", "gpu")},
        "phases_sampled": phases,
        "metrics": {m: _metric_summary(_points(start.samples, m)) for m in METRICS},
        "guard_stop": start.guard_stop,
        "sampler_recorded": start.sampler_recorded,
    }


# --- stabilisation rule and growth diagnostics -------------------------------------


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


class Growth(TypedDict):
    """One start's repeated-use wave peaks of one metric and how they grew (MiB)."""

    start_index: int
    waves: int
    first_wave: str | None
    last_wave: str | None
    wave_peaks_mib: list[float]
    growth_per_wave_mib: list[float]
    window_waves: int
    window_growth_mib: float | None  # None with fewer than two waves in the window
    window_growth_per_wave_mib: float | None


def wave_growth(sums: list[StartSummary], metric: str, k: int | None) -> list[Growth]:
    """Per start: the repeated-use wave peaks, their wave-to-wave change, and the growth over
    the last `k` waves (all of them when k is None)."""
    out: list[Growth] = []
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


def tested_range(growth: list[Growth], count: int) -> str:
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
    trend: NotRequired[Trend]


def retention(sums: list[StartSummary], metric: str, bound: float | None) -> Retention:
    """Idle level after each unload against the idle level before the first load.

    An allocator that keeps freed weights cached shows a residue that may step up once and
    then stays (not a leak); a server that keeps weights after a logical unload adds a copy
    with every reload. So: stopped (`judge_trend`: every start's residues end on a plateau of
    at least two cycles and the starts' shared slope over it is too small to matter) is PASS,
    reported with its size; growth reaching the bound in every start, over at least three
    cycles (on every cycle, or as a fitted whole-range rise with a slope above zero), is
    FAIL; anything between stays PENDING with the diagnostic. Fewer than two cycles cannot
    tell them apart (PENDING)."""
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
    trend = judge_trend([(r["start_index"], r["residues_mib"]) for r in rows], MIN_UNLOAD_CYCLES, "cycle")
    out["trend"] = trend
    test = trend_text(trend, f"{metric} residue after unload")
    if trend["stopped"]:
        out["status"] = "pass"
        out["text"] = f"{settled_text}; {test} ({span}; {'; '.join(listing(r) for r in rows)})"
        return out
    unsettled = {t["start_index"] for t in trend["starts"] if t["plateau_points"] < t["plateau_needed"]}
    diag = "; ".join(
        f"{listing(r)} (per cycle {', '.join(f'{d:+.1f}' for d in r['growth_per_cycle_mib'])} MiB, bound {bound:g} MiB)"
        for r in rows
        if r["start_index"] in unsettled or not unsettled
    )
    every = all(d >= bound for r in rows for d in r["growth_per_cycle_mib"])
    fitted = [(t["slope_mib"] or 0.0) * (len(t["values_mib"]) - 1) for t in trend["starts"]]
    over = trend["grows"] and all(rise >= bound for rise in fitted)
    if (every or over) and cycles >= MIN_UNLOAD_CYCLES + 1:
        out["status"] = "fail"
        out["text"] = (
            f"{metric} retained after unload grows with every unload/reload cycle in every "
            f"start (memory kept after a logical unload): {diag}; {growth_text(trend, f'{metric} residue')}; {span}"
        )
    else:
        out["status"] = "pending"
        out["text"] = (
            f"{metric} retained after unload has not been shown to stop changing (investigate: "
            f"allocator caching settles, kept weights keep growing): {test}; {diag}; {span}"
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


# --- M5.stable ---------------------------------------------------------------------

LIMITATIONS = [
    "retained-after-unload: the idle level after each unload is compared with the one before "
    "the first load; a constant residue (one step, then flat: an allocator cache) is reported, a residue "
    "that has not stopped changing is judged",
    f"PASS only when growth has stopped: every start's per-wave peaks (all repeated-use waves) and residues end "
    f"on a plateau (within {JITTER_MIB:g} MiB, at least last_k_waves waves, or {MIN_UNLOAD_CYCLES} cycles) and "
    f"the slope shared by the starts over their plateaus, at its 95 % upper bound, adds under {JITTER_MIB:g} MiB "
    "over the tested range (a regression after the last change point: growth in steps keeps moving the change "
    "point, slow growth keeps a slope); or, for peaks that wander with no trend, where the slope shared by every "
    f"point of every start adds under {JITTER_MIB:g} MiB at its 95 % upper bound and no start's own slope shows "
    "it growing by that much",
    "FAIL only when the declared bound is reached in every start: the per-wave peak rising on every wave beyond "
    "it over the last K waves, or a whole-range slope above zero (95 % lower bound) whose fitted rise reaches it; "
    "any other growth stays PENDING for investigation, with the baseline build's trend at the same count where "
    "one was recorded",
]


def _window_growth(g: Growth) -> float:
    """The growth over the last K waves of a start that had K (at least two)."""
    grew = g["window_growth_mib"]
    if grew is None:
        raise TypeError("'>=' not supported between instances of 'NoneType' and 'float'")
    return grew


def _num(x: object) -> str:
    return f"{x:.0f}" if isinstance(x, int | float) else "?"


def _with_retention(r: Result, found: list[Retention]) -> Result:
    """Combine the per-wave verdict with the retained-after-unload one."""
    if not found:
        return r
    texts = "; ".join(x["text"] for x in found)
    fails = [x["text"] for x in found if x["status"] == "fail"]
    unclear = [x["text"] for x in found if x["status"] == "pending"]
    if r.status is not Status.FAIL and fails:
        reason = "; ".join(fails) + f"; per-wave: {r.reason}"
        return shape.failed("M5.stable", reason, violation=[x for x in found if x["status"] == "fail"], **r.evidence)
    if r.status is Status.PASS and unclear:
        reason = "; ".join(unclear) + f"; per-wave: {r.reason}"
        return Result("M5.stable", Status.PENDING, reason, r.evidence)
    return replace(r, reason=f"{r.reason}; {texts}")


def _evidence(inp: CountInputs, diagnostics: dict[str, list[Growth]]) -> dict[str, object]:
    rule, sums = inp.rule, inp.sums
    residue = {
        m: [
            {"start_index": s["start_index"], **(ms["retained_after_unload"] or {})}
            for s in sums
            if (ms := s["metrics"][m])
        ]
        for m in diagnostics
    }
    return {
        "rule": None
        if rule is None
        else {"last_k_waves": rule.last_k_waves, "max_growth_mib": rule.max_growth_mib, "metric": rule.metric},
        "growth": diagnostics,
        "retained_after_unload": residue,
    }


@shape.judge(
    "M5.stable",
    _m5(
        (
            MEMORY + ": per-wave peaks of the repeated-use waves and the idle level after each unload/reload cycle",
            PLAN + ": memory.stabilisation (last_k_waves, max_growth_mib, metric)",
        ),
        ("retain_after_unload",),
        (
            "PENDING without a stabilisation rule in the plan; PASS only when every start's per-wave peaks and "
            "residues after unload end flat, or the peaks wander with no growth from the first wave "
            "(memory_trend.judge_trend); FAIL only when growth reaches the bound in "
            "every start, or the residue grows cycle to cycle",
            "BLOCKED when the memory guard (memory.guard_mib) stopped a start (its `memory_guard` event; the "
            "count's M2.starts is BLOCKED too)",
            "the stand-in fault memory_growth leaves it PENDING or FAIL",
        ),
    ),
)
def m5_stable(inp: CountInputs) -> Result:
    """The per-wave verdict under the declared rule, combined with the retention verdict."""
    count, sums, rule = inp.count, inp.sums, inp.rule
    diagnostics = {
        m: wave_growth(sums, m, rule.last_k_waves if rule else None)
        for m in METRICS
        if any(s["metrics"][m] for s in sums)
    }
    evidence = _evidence(inp, diagnostics)
    found = [retention(sums, m, rule.max_growth_mib if rule else None) for m in retention_metrics(sums, rule)]
    evidence["retention"] = found

    def out(r: Result) -> Result:
        if r.status is not Status.BLOCKED:
            r = _with_retention(r, found)
        return replace(r, limitations=LIMITATIONS)

    guards = [s for s in sums if s["guard_stop"]]
    if guards:
        g = guards[0]["guard_stop"] or {}  # never empty: guards have one
        used = g.get("device_used_mib")
        limit = g.get("guard_mib", guards[0]["interval"].get("guard_mib"))
        why = g.get("reason") or f"memory guard: {_num(used)} MiB >= {_num(limit)} MiB"
        evidence["guard_stops"] = [{"start_index": s["start_index"], **(s["guard_stop"] or {})} for s in guards]
        return out(
            blocked(
                "M5.stable",
                f"{why} (start {guards[0]['start_index']}, phase {g.get('phase')}); a guard "
                "stop is a resource-budget result, never a reason to lower quality settings",
                **evidence,
            )
        )

    if len(sums) < inp.expected_starts:
        return out(
            pending("M5.stable", f"{len(sums)} start(s) with memory samples, {inp.expected_starts} needed", **evidence)
        )
    if unrecorded := [s["start_index"] for s in sums if not s.get("sampler_recorded", True)]:
        return out(
            pending(
                "M5.stable",
                f"the sampler's record of start(s) {unrecorded} is missing: a guard stop cannot be ruled out",
                **evidence,
            )
        )
    range_metric = rule.metric if rule else "host_rss"
    tested = tested_range(diagnostics.get(range_metric) or wave_growth(sums, range_metric, None), count)
    if rule is None:
        return out(
            pending(
                "M5.stable",
                f"no stabilisation rule declared in the plan; {tested}; growth diagnostic kept "
                "in evidence (no bound is inferred from the data)",
                **evidence,
            )
        )
    if rule.metric.startswith("gpu") and not inp.gpu_required:
        return out(pending("M5.stable", f"rule metric {rule.metric} but GPU memory is not applicable", **evidence))
    unavailable = gpu_unavailable(sums) if rule.metric.startswith("gpu") else []
    if unavailable or rule.metric not in diagnostics:
        why = "; ".join(unavailable) or "no samples"
        return out(pending("M5.stable", f"rule metric {rule.metric} not sampled: {why}", **evidence))

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
    # Every start has K >= 2 waves here, so a window growth each.
    window = [(g, _window_growth(g)) for g in growth]
    over = [g for g, grew in window if grew >= bound]
    trend = judge_trend([(g["start_index"], g["wave_peaks_mib"]) for g in growth], rule.last_k_waves, "wave")
    evidence["trend"] = trend
    what = f"{rule.metric} per-wave peak (every repeated-use wave)"
    test = trend_text(trend, what)
    if trend["stopped"] and not over:
        worst = max(grew for _, grew in window)
        return out(
            shape.passed(
                "M5.stable",
                f"{rule.metric} per-wave peak stopped growing: {test}; grew at most {worst:+.1f} MiB over the last "
                f"{rule.last_k_waves} waves in every start (declared bound < {bound:g} MiB); {tested}",
                {"per-wave growth of each start": growth, "trend": trend, "declared bound": bound},
                **evidence,
            )
        )
    slopes = growth_text(trend, what)
    compared = _baseline_trend(inp, rule)
    monotonic_everywhere = len(over) == len(growth) and all(
        all(d > 0 for d in g["growth_per_wave_mib"]) for g in growth
    )
    fitted = [
        (r, (r["slope_mib"] or 0.0) * (len(r["values_mib"]) - 1)) for r in trend["starts"] if r["slope_mib"] is not None
    ]
    trend_over = trend["grows"] and len(fitted) == len(growth) and all(rise >= bound for _, rise in fitted)
    if monotonic_everywhere or trend_over:
        diag = "; ".join(
            f"start {g['start_index']}: {g['window_growth_per_wave_mib']:+.1f} MiB/wave over the last "
            f"{g['window_waves']} waves ({g['window_growth_mib']:+.1f} MiB; per wave "
            f"{', '.join(f'{d:+.1f}' for d in g['growth_per_wave_mib'])} MiB)"
            for g in growth
        )
        fits = ", ".join(f"{rise:+.1f}" for _, rise in fitted)
        return out(
            shape.failed(
                "M5.stable",
                f"continuing growth in every start, at or above the declared bound ({bound:g} MiB): {slopes}; "
                f"fitted rise over the whole range {fits} MiB; {test}; {diag}; {compared}; {tested}",
                violation=over or trend["starts"],
                **evidence,
            )
        )
    return out(
        pending(
            "M5.stable",
            f"{rule.metric} per-wave peak has not been shown to stop growing (investigate; uncertain growth stays "
            f"pending): {test}; {slopes}; {compared}; {tested}",
            **evidence,
        )
    )


def _baseline_trend(inp: CountInputs, rule: StabilisationRule) -> str:
    """The baseline build's per-wave peaks at the same count under the same test, in words:
    whether it grows too (where the plan declared a baseline comparison)."""
    base = [summarise_start(b) for b in inp.baseline or [] if b.count == inp.count]
    peaks = [(g["start_index"], g["wave_peaks_mib"]) for g in wave_growth(base, rule.metric, None) if g["waves"] >= 2]
    if not peaks:
        return f"no baseline memory start at count {inp.count} to compare with" + (
            "" if inp.baseline_reason else " (memory.baseline_comparison is not declared)"
        )
    t = judge_trend(peaks, rule.last_k_waves, "wave")
    return trend_text(t, f"baseline build at count {inp.count}, {rule.metric} per-wave peak") + (
        ": its growth stopped" if t["stopped"] else ": it has not stopped either"
    )


# --- M5.sampled, M5.peaks, M5.baseline and the assessment --------------------------


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f} MiB"


def _missing_groups(summary: StartSummary, kind: str) -> list[str]:
    present = {phase_group(p) for p in summary["phases_sampled"][kind]}
    return [g for g in REQUIRED_GROUPS if g not in present]


def _per_ms(seconds: JsonValue) -> str:
    """A recorded interval (s) in whole milliseconds."""
    if isinstance(seconds, int | float):
        return f"{seconds * 1000:.0f}"
    raise TypeError(f"unsupported operand type(s) for *: '{type(seconds).__name__}' and 'int'")


def _interval_text(sums: list[StartSummary]) -> str:
    iv = sums[0]["interval"]
    parts = []
    for kind in ("host", "gpu"):
        conf = iv.get(f"{kind}_interval_s", iv.get(kind))
        got = [a["median_s"] for s in sums if (a := s["achieved_interval_s"][kind])]
        text = f"{kind} every {_per_ms(conf)} ms" if conf is not None else f"{kind} interval not recorded"
        if got:
            text += f" (achieved median {statistics.median(got) * 1000:.1f} ms)"
        parts.append(text)
    return ", ".join(parts)


@shape.judge(
    "M5.sampled",
    _m5(
        (MEMORY + ": samples in every phase group (idle, cold, warm, unload, reload)", PLAN + ": memory.gpu_required"),
        notes=(
            "PENDING when a start lacks host samples in a phase group, or GPU samples where the plan requires them",
        ),
    ),
)
def m5_sampled(inp: CountInputs) -> Result:
    """Every start sampled host (and, where required, GPU) memory in every phase group."""
    sums, gpu_required = inp.sums, inp.gpu_required
    if len(sums) < inp.expected_starts:
        return shape.pending("M5.sampled", f"{len(sums)} start(s) with memory samples, {inp.expected_starts} needed")
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
    evidence = {"interval": sums[0]["interval"], "required_phase_groups": list(REQUIRED_GROUPS), "starts": per_start}
    limitations: list[str] = []
    unavailable = gpu_unavailable(sums)
    host_text = (
        f"host memory sampled in every start ({len(sums)}) across {'/'.join(REQUIRED_GROUPS)}"
        if not host_gaps
        else "host memory incomplete: " + "; ".join(host_gaps)
    )
    if not gpu_required:
        limitations.append("GPU memory not applicable for this backend (plan: gpu_required = false)")
        gpu_text = "GPU memory not applicable"
    elif unavailable:
        limitations.append("GPU memory PENDING: " + "; ".join(unavailable))
        gpu_text = "GPU memory PENDING (" + "; ".join(unavailable) + ")"
    elif gpu_gaps:
        gpu_text = "GPU memory incomplete: " + "; ".join(gpu_gaps)
    else:
        gpu_text = f"GPU memory sampled in every start ({sums[0]['gpu_info']})"
    unrecorded = [s["start_index"] for s in sums if not s.get("sampler_recorded", True)]
    if unrecorded:
        host_gaps.append(f"start(s) {unrecorded}: the sampler's record (intervals) is missing")
        host_text = "host memory incomplete: " + "; ".join(host_gaps)
    reason = f"{host_text}; {gpu_text}; {_interval_text(sums)}"
    ok = not host_gaps and (not gpu_required or (not unavailable and not gpu_gaps))
    result = (
        shape.passed(
            "M5.sampled",
            reason,
            {"starts with host samples in every phase group": [s["start_index"] for s in sums if s["samples"]["host"]]},
            **evidence,
        )
        if ok and sums
        else shape.pending("M5.sampled", reason, **evidence)
    )
    return replace(result, limitations=limitations)


class PeakFigures(TypedDict):
    """One metric's first-request figures of one start (M5.peaks), in MiB."""

    first_request_peak_mib: float | None
    idle_baseline_mib: float | None
    first_request_over_idle_mib: float | None
    retained_after_unload_mib: object
    residue_mib: object


@shape.judge("M5.peaks", _m5((MEMORY + ": first-request peak (cold_load / cold_wave samples) over the idle baseline",)))
def m5_peaks(inp: CountInputs) -> Result:
    """The first-request peak is reported for every required metric, with what it includes."""
    sums, gpu_required = inp.sums, inp.gpu_required
    if len(sums) < inp.expected_starts:
        return shape.pending("M5.peaks", f"{len(sums)} start(s) with memory samples, {inp.expected_starts} needed")
    wanted = ["host_rss", "host_pss"] + (["gpu_device", "gpu_process"] if gpu_required else [])
    per_start: list[dict[str, object]] = []
    start_figures: list[dict[str, PeakFigures]] = []  # per start: metric -> its figures
    for s in sums:
        found: dict[str, PeakFigures] = {}
        for m in wanted:
            ms = s["metrics"][m]
            if ms is not None:
                retained: Mapping[str, object] = ms["retained_after_unload"] or {}
                found[m] = {
                    "first_request_peak_mib": ms["first_request_peak_mib"],
                    "idle_baseline_mib": ms["idle_baseline_mib"],
                    "first_request_over_idle_mib": ms["first_request_over_idle_mib"],
                    "retained_after_unload_mib": retained.get("value_mib"),
                    "residue_mib": retained.get("residue_mib"),
                }
        start_figures.append(found)
        per_start.append({"start_index": s["start_index"], **found})

    def peaks(metric: str) -> list[float | None]:
        return [f[metric]["first_request_peak_mib"] if metric in f else None for f in start_figures]

    summary = {m: max(v for v in peaks(m) if v is not None) for m in wanted if any(v is not None for v in peaks(m))}
    evidence = {
        "includes": {m: INCLUDES[m] for m in wanted},
        "max_first_request_peak_mib": summary,
        "starts": per_start,
        "note": "retained-after-unload is reported, not judged: a logical unload is not freed memory",
    }
    missing = []
    if unrecorded := [s["start_index"] for s in sums if not s.get("sampler_recorded", True)]:
        missing.append(f"the sampler's record of start(s) {unrecorded} is missing")
    if any(v is None for v in peaks("host_rss")):
        missing.append("host first-request peak missing (no cold_load/cold_wave host samples) in some start")
    unavailable = gpu_unavailable(sums)
    if gpu_required and unavailable:
        missing.append("GPU first-request peak not sampled: " + "; ".join(unavailable))
    elif gpu_required and any(v is None for v in peaks("gpu_device")):
        missing.append("GPU first-request peak missing (no cold GPU samples) in some start")
    figures = ", ".join(f"{m} {_fmt(v)}" for m, v in summary.items())
    reason = f"first-request peak (max over {len(sums)} starts): {figures or 'none'}"
    if missing or not summary:
        return shape.pending("M5.peaks", reason + "; " + "; ".join(missing or ["no peak measured"]), **evidence)
    return shape.passed(
        "M5.peaks", reason + f"; includes {INCLUDES['host_rss']}", {"first-request peaks": summary}, **evidence
    )


HeadlineKey = Literal["idle_baseline_mib", "first_request_peak_mib", "warm_steady_state_mib"]
_HEADLINE: tuple[HeadlineKey, ...] = ("idle_baseline_mib", "first_request_peak_mib", "warm_steady_state_mib")


def _aggregate(sums: list[StartSummary]) -> dict[str, dict[str, float | None]]:
    """Median over starts of the headline figures of each metric."""
    agg: dict[str, dict[str, float | None]] = {}
    for m in METRICS:
        rows = [ms for s in sums if (ms := s["metrics"][m])]
        if not rows:
            continue
        fig: dict[str, float | None] = {}
        for key in _HEADLINE:
            vals = [v for r in rows if (v := r[key]) is not None]
            fig[key] = round3(statistics.median(vals)) if vals else None
        res = [ret["residue_mib"] for r in rows if (ret := r["retained_after_unload"])]
        measured = [v for v in res if v is not None]
        fig["residue_mib"] = round3(statistics.median(measured)) if measured else None
        agg[m] = fig
    return agg


@shape.judge(
    "M5.baseline",
    _m5(
        (
            MEMORY + " of the membase-<N> start (the baseline build, same model settings and waves) at the "
            "same count (medians over starts)",
            PLAN + ": memory.baseline_comparison (reason)",
        ),
        notes=(
            "NOT_APPLICABLE unless the plan declares memory.baseline_comparison (a retention investigation or "
            "memory change): then the campaign runs one baseline-build start per count and M5.baseline compares "
            "them; PENDING when that start is missing",
        ),
    ),
)
def m5_baseline(inp: CountInputs) -> Result:
    """Candidate against the baseline build at the same count and settings (medians over
    starts), when the plan declares a retention investigation or memory change
    (`memory.baseline_comparison`): then the campaign runs baseline memory starts."""
    count, sums, baseline = inp.count, inp.sums, inp.baseline
    if inp.baseline_reason is None:
        return shape.not_applicable(
            "M5.baseline",
            "the plan declares no retention investigation or memory change (memory.baseline_comparison), so the "
            "candidate's memory is not compared with the baseline build's",
        )
    base = [summarise_start(b) for b in baseline or [] if b.count == count]
    if not base:
        return shape.pending(
            "M5.baseline",
            f"a baseline comparison is declared ({inp.baseline_reason}), but no baseline memory start at count "
            f"{count} was recorded; comparison not made",
        )
    empty_starts = [
        s["start_index"] for s in [*sums, *base] if not s["samples"]["host"] or not s.get("sampler_recorded", True)
    ]
    if len(sums) < inp.expected_starts:
        return shape.pending(
            "M5.baseline",
            f"{len(sums)} candidate start(s) with memory samples at count {count}, {inp.expected_starts} needed",
        )
    if empty_starts:
        return shape.pending("M5.baseline", f"start(s) {empty_starts} recorded no host memory samples at count {count}")
    cand, ref = _aggregate(sums), _aggregate(base)
    compare: dict[str, dict[str, dict[str, float | None]]] = {}
    for m in cand.keys() & ref.keys():
        compare[m] = {
            key: {
                "baseline": ref[m][key],
                "candidate": cand[m][key],
                "delta": None
                if ref[m][key] is None or cand[m][key] is None
                else round3(float(cand[m][key] or 0) - float(ref[m][key] or 0)),
            }
            for key in cand[m]
        }
    host = compare.get("host_rss", {})
    if not host:
        return shape.pending("M5.baseline", f"no host memory figure measured on both builds at count {count}")
    text = ", ".join(
        f"{key} {_fmt(v['baseline'])} -> {_fmt(v['candidate'])}"
        for key, v in host.items()
        if key in ("first_request_peak_mib", "warm_steady_state_mib", "residue_mib")
    )
    return shape.passed(
        "M5.baseline",
        f"compared with the baseline build at count {count} ({len(base)} baseline / {len(sums)} candidate "
        f"starts; medians over starts; declared: {inp.baseline_reason}): host_rss {text or 'n/a'}",
        {"baseline starts": base, "candidate starts": sums, "host_rss comparison": host},
        comparison=compare,
        baseline_starts=len(base),
        candidate_starts=len(sums),
    )


# Assertion ID -> judge, in the order the results are reported.
JUDGES: dict[str, Callable[[CountInputs], Result]] = {
    "M5.sampled": m5_sampled,
    "M5.peaks": m5_peaks,
    "M5.stable": m5_stable,
    "M5.baseline": m5_baseline,
}

# The registry entries the judges above declare, in the table's order.
ENTRIES: tuple[Entry, ...] = shape.entries_of(JUDGES)


def assess_m5(
    starts: list[StartMemory],
    rule: StabilisationRule | None,
    *,
    baseline: list[StartMemory] | None = None,
    gpu_required: bool = True,
    baseline_reason: str | None = None,
    expected_starts: int = 0,
) -> list[Result]:
    """M5.sampled/peaks/stable/baseline for every count present in `starts`, in count order.

    `gpu_required=False` is for CPU backends: GPU memory is then not applicable rather
    than pending.
    """
    results: list[Result] = []
    for count in sorted({s.count for s in starts}):
        group = sorted((s for s in starts if s.count == count), key=lambda s: s.start_index)
        inp = CountInputs(
            count, [summarise_start(s) for s in group], rule, gpu_required, baseline, baseline_reason, expected_starts
        )
        for judge in JUDGES.values():
            results.append(replace(judge(inp), count=count))
    return results


# --- loading each start's samples from the run directory ---------------------------


def _start_memory(rec: Records, run_dir: Path, run: str, n: int, i: int) -> StartMemory | None:
    """One start's memory samples as the M5 judges read them (None before its end)."""
    end = rec.ends.get(run)
    start = rec.runs[run]
    if end is None:
        return None
    directory = run_dir / "servers" / f"{run}-{start['attempt']}"
    path = directory / "memory.jsonl"
    samples: list[JsonObject] = (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )
    info = end.get("memory") or {}
    gpu = str(info.get("gpu", "unavailable: not sampled"))
    return StartMemory(
        n,
        i,
        samples,
        gpu,
        {"gpu_interval_s": info.get("gpu_interval_s", 0.0), "host_interval_s": info.get("host_interval_s", 0.0)},
        guard_stop=_guard_stop(info.get("guard_stop")),
        sampler_recorded=bool(info),
    )


def _guard_stop(value: JsonValue) -> JsonObject | None:
    """The recorded sample that tripped the memory guard (None when none did); the judges
    read it as an object (`.get`)."""
    if isinstance(value, dict):
        return value
    if value:
        raise AttributeError(f"'{type(value).__name__}' object has no attribute 'get'")
    return None


def memory_results(
    rec: Records, run_dir: Path, plan: JudgedPlan | Mapping[str, object], counts: list[int]
) -> list[Result]:
    judged = as_judged(plan)
    mem = judged.memory
    declared = mem.baseline_reason is not None
    baseline = [
        m
        for n in counts
        for run, start in rec.runs.items()
        if declared
        and start["role"] == "membase"
        and start["count"] == n
        and (m := _start_memory(rec, run_dir, run, n, 1)) is not None
    ]
    starts = [
        m
        for n in counts
        # the soak's starts are sampled and judged as the count's own (parval.runners.soak)
        for i, run in enumerate([*rec.count_runs(n), *rec.soak_runs(n)], start=1)
        if (m := _start_memory(rec, run_dir, run, n, i)) is not None
    ]
    stab = mem.stabilisation
    rule = StabilisationRule(stab["last_k_waves"], stab["max_growth_mib"], stab["metric"]) if stab else None
    results = assess_m5(
        starts,
        rule,
        gpu_required=mem.gpu_required,
        baseline=baseline if declared else None,
        baseline_reason=mem.baseline_reason,
        expected_starts=judged.required_starts,
    )
    have = {r.count for r in results}
    for n in counts:
        if n not in have:
            for id_ in ("M5.sampled", "M5.peaks", "M5.stable", "M5.baseline"):
                results.append(
                    replace(pending_result(id_, f"no complete start with memory samples at count {n}"), count=n)
                )
    return results
