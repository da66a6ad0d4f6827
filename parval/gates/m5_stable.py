"""M5.stable: memory settles under repeated use and across unload/reload cycles.

FAIL needs growth on every wave (or cycle) in every start beyond the declared bound; any
other growth stays PENDING for investigation, because allocator caching alone is not a leak.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from parval.gates import shape
from parval.gates.m5_rules import CountInputs, Retention, retention, retention_metrics, tested_range, wave_growth
from parval.gates.m5_samples import METRICS, gpu_unavailable
from parval.gates.shape import blocked, pending
from parval.status import Result, Status

LIMITATIONS = [
    "retained-after-unload: the idle level after each unload is compared with the one before "
    "the first load; a constant residue is reported, a residue growing from cycle to cycle is "
    "judged",
    "FAIL only when the per-wave peak rises on every wave in every start and exceeds the "
    "declared bound in every start; any other growth stays PENDING for investigation "
    "(allocator caching alone is not a leak)",
]


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


def _evidence(inp: CountInputs, diagnostics: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
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


@shape.judge("M5.stable")
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
    over = [g for g in growth if g["window_growth_mib"] >= bound]
    if not over:
        worst = max(g["window_growth_mib"] for g in growth)
        return out(
            shape.passed(
                "M5.stable",
                f"{rule.metric} per-wave peak grew at most {worst:+.1f} MiB over the last "
                f"{rule.last_k_waves} waves in every start (declared bound < {bound:g} MiB); "
                f"{tested}",
                {"per-wave growth of each start": growth, "declared bound": bound},
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
            shape.failed(
                "M5.stable",
                f"continuing growth in every start, on every wave: {diag}; {tested}",
                violation=over,
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
