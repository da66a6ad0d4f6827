"""M5 sampler streams summarised per start (pure: no I/O).

Phases follow the campaign's PhaseTracker names: 'startup'/'idle', 'cold_load',
'cold_wave', '<kind>_wave:<k>' (repeated-use waves), 'unload', 'reload', 'serial'.
The judges read only these summaries, so every M5 figure comes from one place.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, TypedDict, overload

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
    interval: dict[str, float]
    achieved_interval_s: dict[str, dict[str, float] | None]
    samples: dict[str, int]
    phases_sampled: dict[str, list[str]]
    metrics: dict[str, MetricSummary | None]  # None: the metric was not sampled
    guard_stop: dict[str, Any] | None
    sampler_recorded: bool


@dataclass
class StartMemory:
    """One server start's memory samples, as the campaign recorded them."""

    count: int
    start_index: int
    samples: list[dict[str, Any]]  # as emitted by MemorySampler
    gpu_info: str  # sampler info()["gpu"]
    interval: dict[str, float]
    guard_stop: dict[str, Any] | None = None  # sample that tripped the guard
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
        value = _settled(src_values)
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


def _achieved_interval(samples: list[dict[str, Any]], kind: str) -> dict[str, float] | None:
    ts = sorted(float(s["t"]) for s in samples if s.get("kind") == kind)
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
