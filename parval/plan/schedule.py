"""The schedule a plan implies: fresh starts, waves and request counts (`parval validate`)."""

from __future__ import annotations

from parval.plan.load import Plan
from parval.plan.waves import TEN_WAVES, UNLOAD_CYCLES, WAVE_ATTEMPTS, mixed_waves, skipped_counts_warning


def schedule_rows(plan: Plan) -> list[tuple[str, int, int, int]]:
    """(unit, fresh starts, waves, requests) per unit of the campaign."""
    reqs = len(plan.requests())
    rows: list[tuple[str, int, int, int]] = []
    perf = plan.performance
    perf_reqs = sum(plan.counts) * perf["warm_repeats"] if perf["enabled"] else 0
    for name in ("ref-baseline-a", "ref-baseline-b", "ref-candidate-legacy", "ref-candidate-cap1"):
        extra = perf_reqs if name in ("ref-baseline-a", "ref-candidate-cap1") else 0
        rows.append((name, 1, 0, reqs * 3 + extra))
    rows.append(("x1-config-slots", 2, 0, 0))
    w = plan.waves
    for n in plan.counts:
        mixed = mixed_waves(plan.raw, n)
        waves = 1 + w["warm"] + mixed + UNLOAD_CYCLES
        requests = n * waves + w["serial_reuse"]
        rows.append(
            (
                f"count {n} (x{plan.starts_per_count} starts)",
                plan.starts_per_count,
                waves * plan.starts_per_count,
                requests * plan.starts_per_count,
            )
        )
    largest = max(plan.counts)
    rows.append((f"recovery at {largest}", 1, 6, largest * 6 + 6))
    return rows


def describe_schedule(plan: Plan) -> str:
    rows = schedule_rows(plan)
    reqs = len(plan.requests())
    w = plan.waves
    lines = [
        f"plan {plan.name} (sha256 {plan.sha256[:12]}) is valid",
        f"model {plan.model_id} "
        f"({plan.model['family']}, {plan.model['task']}, {plan.model['mode']}), "
        f"counts {plan.counts}, {plan.starts_per_count} fresh starts per count, "
        f"{'cache-sensitive' if plan.cache_sensitive else 'stateless'}",
        "",
        f"{'unit':<34} {'starts':>6} {'waves':>6} {'requests':>9}",
    ]
    for name, starts, waves, requests in rows:
        lines.append(f"{name:<34} {starts:>6} {waves:>6} {requests:>9}")
    total = [sum(int(r[i]) for r in rows) for i in (1, 2, 3)]
    lines.append(f"{'total':<34} {total[0]:>6} {total[1]:>6} {total[2]:>9}")
    if plan.cache_sensitive:
        lines.append("plus one single-slot history replay per distinct slot history")
    repeatable = sum(n * (w["warm"] + mixed_waves(plan.raw, n)) * plan.starts_per_count for n in plan.counts if n > 1)
    if repeatable:
        lines.append(
            f"plus up to {repeatable * (WAVE_ATTEMPTS - 1)} requests of repeated waves: a warm "
            f"or mixed wave is repeated (at most {WAVE_ATTEMPTS - 1} times) only when the server "
            "publishes slot counters and the client's overlap was too short to show N leases"
        )
    for n in plan.counts:
        mixed = mixed_waves(plan.raw, n)
        mixes = mixed if n == 1 else (mixed + 1) // 2  # n>1: each mix also runs reversed
        if mixes * n < reqs:
            lines.append(
                f"warning: at count {n}, {mixed} mixed wave(s) x {n} slot(s) cannot use all {reqs} "
                "requests; M3.variation will stay PENDING there (raise waves.mixed)"
            )
    lines += plan_warnings(plan)
    return "\n".join(lines)


def plan_warnings(plan: Plan) -> list[str]:
    """What keeps this plan's counts from being admitted whatever the server does: a skipped
    count (admission is consecutive from one and never enables an untested count) and too
    few mixed waves where a count may end up the largest admitted (M3.ten_waves)."""
    out = [w] if (w := skipped_counts_warning(plan.counts)) else []
    largest = max(plan.counts)
    if mixed_waves(plan.raw, largest) < TEN_WAVES:
        out.append(
            f"warning: fewer than {TEN_WAVES} mixed waves at the largest count ({largest}): M3.ten_waves stays "
            "PENDING there"
        )
    short = [n for n in plan.counts if n != largest and mixed_waves(plan.raw, n) < TEN_WAVES]
    if short:
        out.append(
            f"warning: counts {', '.join(map(str, short))} run {mixed_waves(plan.raw, short[0])} mixed wave(s) per "
            f"start (waves.mixed): fewer than {TEN_WAVES}, so none of them can be the largest admitted count "
            "(M3.ten_waves); if a larger count fails, they are not admitted either"
        )
    return out
