"""M3, per count N: mixed warm waves of different requests stay exact. Each declared
variation must really change the output content, request pairs must be seen admitted in
both orders, there are ten such waves per start, and slot history is respected."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from parval.gates import shape
from parval.gates.context import Context, exact_result
from parval.gates.count_starts import complete_starts, schedule_missing, starts_missing
from parval.gates.m3_variation import VariationEffect, content_digest, m3_variation, mixed_outputs, variation_effects
from parval.gates.slot_counters import NO_COUNTERS, counters_seen
from parval.plan.waves import TEN_WAVES, mixed_waves
from parval.status import Result, Status

__all__ = ["JUDGES", "content_digest", "judge_m3", "m3_variation", "variation_effects"]


def _mixed(ctx: Context, n: int) -> list[dict[str, Any]]:
    return mixed_outputs(ctx, n)


def _mixed_waves(ctx: Context, n: int) -> list[dict[str, Any]]:
    return [w for r in ctx.rec.count_runs(n) for w in ctx.rec.waves(r) if w["phase"] == "mixed_wave"]


def _order_observed(w: dict[str, Any]) -> bool:
    """Was this wave's admission order observed: the poller saw each request take its slot
    before the next was sent and none finished early, or an observer trace confirmed it."""
    if not isinstance(w.get("order"), list) or w.get("trace_confirmed") is False:
        return False
    adm = w.get("admission") or {}
    return w.get("trace_confirmed") is True or (adm.get("ordered_ok") is True and not adm.get("finished_early"))


@shape.judge("M3.reversed")
def m3_reversed(ctx: Context, n: int, effects: list[VariationEffect]) -> Result:
    """M3.reversed: some request pair was observed admitted in both orders, and the
    outputs of those waves are exact."""
    id_ = "M3.reversed"
    if n == 1:
        return shape.not_applicable(id_, "one slot: admission order cannot be reversed")
    waves = _mixed_waves(ctx, n)
    if not waves:
        return shape.pending(id_, f"no mixed wave recorded at count {n}")
    observed = [w for w in waves if _order_observed(w)]
    if not observed:
        if all(counters_seen([w]) == "absent" for w in waves) and not any(w.get("trace_confirmed") for w in waves):
            return shape.pending(
                id_,
                f"{NO_COUNTERS} and no observer trace confirmed the "
                "slots: the admission order cannot be observed "
                f"({len(waves)} mixed wave(s))",
            )
        return shape.pending(
            id_,
            f"admission order not observed in any of {len(waves)} mixed "
            "wave(s) (a request was not seen taking its slot before the next was sent, "
            "or one finished before the last was admitted)",
        )
    before: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for w in observed:
        order = [str(x) for x in w["order"]]
        for i, a in enumerate(order):
            for b in order[i + 1 :]:
                if a != b:
                    before.setdefault((a, b), []).append(w)
    both = sorted({tuple(sorted(p)) for p in before if (p[1], p[0]) in before})
    one_way = sorted(f"{a} before {b}" for (a, b) in before if (b, a) not in before)
    if not both:
        return shape.pending(
            id_,
            "no request pair was observed admitted in both orders in "
            f"{len(observed)} observed wave(s); seen in one order only: "
            f"{', '.join(one_way[:10])}",
            one_order_pairs=one_way,
        )
    keys = {(w["run"], w["wave"], int(w.get("retry", 0))) for a, b in both for w in before[(a, b)] + before[(b, a)]}
    reqs = [e for e in _mixed(ctx, n) if (e["run"], e["wave"], int(e.get("retry", 0))) in keys]
    pairs = ", ".join(f"{a}/{b}" for a, b in both)
    r = exact_result(
        id_,
        ctx.judge(reqs),
        f"{len(both)} request pair(s) observed admitted in both orders ({pairs}); outputs of those {len(keys)} wave(s)",
        ctx,
    )
    evidence = {
        **r.evidence,
        "reversed_pairs": [list(p) for p in both],
        "one_order_pairs": one_way,
        "observed_waves": len(observed),
        "mixed_waves": len(waves),
    }
    if r.status is Status.PASS:
        evidence["rests_on"] = {**evidence["rests_on"], "reversed pairs": len(both)}
    r = replace(r, evidence=evidence)
    if r.status is Status.PASS:
        if len(reqs) < len(keys) * n:
            return shape.pending(id_, f"{len(keys) * n - len(reqs)} output(s) of the reversed waves not recorded")
        for gap in (starts_missing(ctx, n, id_), schedule_missing(ctx, n, id_, ("mixed_wave",))):
            if gap is not None:
                return gap
    return r


def mixed_wave_counts(ctx: Context, n: int) -> dict[str, int]:
    """Start → distinct mixed warm waves it recorded at count n."""
    return {r: len({e["wave"] for e in ctx.rec.waves(r) if e["phase"] == "mixed_wave"}) for r in ctx.rec.count_runs(n)}


@shape.judge("M3.ten_waves")
def m3_ten_waves(ctx: Context, n: int, effects: list[VariationEffect]) -> Result:
    """M3.ten_waves: ten or more mixed warm waves in each of three starts at the largest
    admitted count. Judged at every count: where each start ran ten, the count can be the
    largest admitted; where it did not, it can be admitted only below a larger admitted
    count that did (admission applies this, `parval.gates.admission`). Too few waves is the
    plan's shortfall, not the server's: never a FAIL."""
    id_ = "M3.ten_waves"
    per = mixed_wave_counts(ctx, n)
    largest = max(ctx.counts)
    planned = mixed_waves(ctx.plan, n)
    short = {r: k for r, k in per.items() if k < TEN_WAVES}
    if planned < TEN_WAVES and n != largest:
        return Result(
            id_,
            Status.NOT_APPLICABLE,
            f"count {n} runs {planned} mixed warm wave(s) per start (waves.mixed): it can be admitted only "
            f"below a larger admitted count that ran {TEN_WAVES}",
            {"short": True, "planned": planned, "mixed_waves": per},
        )
    if (missing := starts_missing(ctx, n, id_)) is not None:
        return replace(missing, evidence={**missing.evidence, "mixed_waves": per})
    if short:
        why = (
            f"the plan runs {planned} (waves.{'mixed_at_largest' if n == largest else 'mixed'})"
            if planned < TEN_WAVES
            else f"{planned} were planned"
        )
        return shape.pending(
            id_, f"fewer than {TEN_WAVES} mixed warm waves recorded in {short}: {why}", mixed_waves=per
        )
    if (gaps := schedule_missing(ctx, n, id_, ("mixed_wave",))) is not None:
        return gaps
    return shape.passed(
        id_,
        f"{min(per.values())}+ mixed warm waves in each of {len(per)} starts",
        {"starts with ten mixed waves": complete_starts(ctx, n)},
        mixed_waves=per,
    )


@shape.judge("M3.history")
def m3_history(ctx: Context, n: int, effects: list[VariationEffect]) -> Result:
    """M3.history: for a cache-sensitive model, mixed-wave outputs equal same-history
    single-slot replays, with the slot histories known from ordered admission."""
    id_ = "M3.history"
    if not ctx.cache_sensitive:
        return shape.not_applicable(
            id_, "model declared stateless (model.cache_sensitive: false): outputs do not depend on session history"
        )
    waves = _mixed_waves(ctx, n)
    disagree = [w for w in waves if w.get("trace_confirmed") is False]
    # without an admission record the slot each request took (so its history) is unknown
    unordered = [
        w
        for w in waves
        if not (w.get("admission") or {}).get("ordered_ok", False) or (w.get("admission") or {}).get("finished_early")
    ]
    t = ctx.judge(_mixed(ctx, n))
    traced = sum(1 for w in waves if w.get("trace_confirmed"))
    r = exact_result(id_, t, "mixed-wave outputs vs same-history single-slot replays", ctx)
    r = replace(r, evidence={**r.evidence, "trace_confirmed_waves": traced, "waves": len(waves)})
    if r.status is Status.PASS and disagree:
        r = shape.pending(
            id_,
            f"observer trace disagrees with ordered admission in {len(disagree)} wave(s)",
            waves=[(w["run"], w["wave"]) for w in disagree],
        )
    elif r.status is Status.PASS and unordered:
        r = shape.pending(id_, f"ordered admission not observed in {len(unordered)} wave(s): slot histories unknown")
    elif r.status is Status.PASS and (missing := starts_missing(ctx, n, id_)) is not None:
        r = missing
    elif r.status is Status.PASS and (gaps := schedule_missing(ctx, n, id_, ("mixed_wave",))) is not None:
        r = gaps
    if not traced:
        note = "no [SLOT_VALIDATION] observer trace: slot mapping from ordered admission only"
        r = replace(r, limitations=[*r.limitations, note])
    return r


JUDGES: dict[str, Callable[[Context, int, list[VariationEffect]], Result]] = {
    "M3.variation": m3_variation,
    "M3.reversed": m3_reversed,
    "M3.ten_waves": m3_ten_waves,
    "M3.history": m3_history,
}


def judge_m3(ctx: Context, n: int, effects: list[VariationEffect]) -> list[Result]:
    """Every M3 assertion at count n, given the run's `variation_effects`."""
    return [replace(judge(ctx, n, effects), count=n) for judge in JUDGES.values()]
