"""M5 memory assessment: one judge per assertion, every count judged on its own starts.

Pure (no I/O): the judges read the per-start summaries of `m5_samples`, so a fix to a judge
applies to an old run on `parval report --rejudge`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Literal

from parval.gates import shape
from parval.gates.m5_rules import CountInputs, StabilisationRule
from parval.gates.m5_samples import (
    INCLUDES,
    METRICS,
    REQUIRED_GROUPS,
    StartMemory,
    StartSummary,
    gpu_unavailable,
    phase_group,
    round3,
    summarise_start,
)
from parval.gates.m5_stable import m5_stable
from parval.status import Result


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f} MiB"


def _missing_groups(summary: StartSummary, kind: str) -> list[str]:
    present = {phase_group(p) for p in summary["phases_sampled"][kind]}
    return [g for g in REQUIRED_GROUPS if g not in present]


def _interval_text(sums: list[StartSummary]) -> str:
    iv = sums[0]["interval"]
    parts = []
    for kind in ("host", "gpu"):
        conf = iv.get(f"{kind}_interval_s", iv.get(kind))
        got = [a["median_s"] for s in sums if (a := s["achieved_interval_s"][kind])]
        text = f"{kind} every {conf * 1000:.0f} ms" if conf is not None else f"{kind} interval not recorded"
        if got:
            text += f" (achieved median {statistics.median(got) * 1000:.1f} ms)"
        parts.append(text)
    return ", ".join(parts)


@shape.judge("M5.sampled")
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


@shape.judge("M5.peaks")
def m5_peaks(inp: CountInputs) -> Result:
    """The first-request peak is reported for every required metric, with what it includes."""
    sums, gpu_required = inp.sums, inp.gpu_required
    if len(sums) < inp.expected_starts:
        return shape.pending("M5.peaks", f"{len(sums)} start(s) with memory samples, {inp.expected_starts} needed")
    wanted = ["host_rss", "host_pss"] + (["gpu_device", "gpu_process"] if gpu_required else [])
    per_start = []
    for s in sums:
        row: dict[str, Any] = {"start_index": s["start_index"]}
        for m in wanted:
            ms = s["metrics"][m]
            if ms is not None:
                retained: Mapping[str, object] = ms["retained_after_unload"] or {}
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


@shape.judge("M5.baseline")
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
