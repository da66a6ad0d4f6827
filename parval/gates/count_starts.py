"""The fresh starts of one advertised count as the M2/M3 judges read them: which starts
ran to their end, and whether each planned wave of a start was recorded whole (its wave
summary and one reply per request). A judge that PASSes rests on every planned start and
wave; a missing one leaves it PENDING (BLOCKED when a start was stopped), never PASS."""

from __future__ import annotations

from collections import Counter

from parval.gates.context import Context
from parval.plan.waves import serial_requests, wave_numbers
from parval.rundir.event_types import RequestEvent, WaveEvent
from parval.status import Result, Status

# The procedure's minimum of fresh starts per advertised count.
MIN_STARTS = 3


def required_starts(ctx: Context) -> int:
    return max(MIN_STARTS, int(ctx.plan.get("starts_per_count", MIN_STARTS)))


def complete_starts(ctx: Context, n: int) -> list[str]:
    """The starts at count n that ran to their end (no crash, not stopped early)."""
    return [r for r in ctx.rec.count_runs(n) if ctx.rec.complete(r)]


def starts_missing(ctx: Context, n: int, id_: str) -> Result | None:
    """PENDING/BLOCKED naming what is missing when count n lacks the complete starts a PASS
    rests on (every recorded start complete, and at least the required number); None when
    it has them. A crashed or stopped start makes it BLOCKED (M2.starts judges the crash)."""
    rec = ctx.rec
    runs = rec.count_runs(n)
    complete = complete_starts(ctx, n)
    need = required_starts(ctx)
    if len(complete) >= need and len(complete) == len(runs):
        return None
    bad = {r: rec.outcome(r) for r in runs if r not in complete}
    text = f"{len(complete)} complete start(s) at count {n}, {need} needed"
    if bad:
        text += ": " + "; ".join(f"{r} {why}" for r, why in sorted(bad.items()))
    stopped = any(rec.crash_of(r) or rec.stop_of(r) for r in bad)
    status = Status.BLOCKED if stopped else Status.PENDING
    return Result(id_, status, text, {"starts": runs, "complete": complete}, count=n)


def _key(e: RequestEvent | WaveEvent) -> tuple[str, int, int]:
    # A serial wave's requests are numbered 0..k-1 but belong to its one wave summary.
    wave = 0 if e["phase"] == "serial_reuse" else int(e["wave"])
    return str(e["phase"]), wave, int(e.get("retry", 0))


def wave_gaps(ctx: Context, run: str, n: int, phases: tuple[str, ...]) -> list[str]:
    """What is missing from a start's recorded waves of these phases: a planned wave with no
    summary, a wave summary without one reply per request, replies without a summary."""
    rec = ctx.rec
    waves = [w for w in rec.waves(run) if w["phase"] in phases]
    replies = Counter(_key(e) for e in rec.requests(run, phases))
    summaries = {_key(w) for w in waves}
    gaps = []
    for phase in phases:
        recorded = {int(w["wave"]) for w in waves if w["phase"] == phase}
        missing = [k for k in wave_numbers(ctx.plan, n, phase) if k not in recorded]
        if missing:
            gaps.append(f"{run}: no {phase} {', '.join(map(str, missing[:6]))} recorded")
    for w in waves:
        want = serial_requests(ctx.plan) if w["mode"] == "serial" else int(w["n"])
        got = replies.get(_key(w), 0)
        if got != want:
            gaps.append(f"{run}: {w['phase']} {w['wave']} recorded {got} of {want} replies")
    orphans = sorted(k for k in replies if k not in summaries)
    if orphans:
        gaps.append(f"{run}: replies without a wave summary ({', '.join(f'{p} {w}' for p, w, _ in orphans[:4])})")
    return gaps


def schedule_missing(ctx: Context, n: int, id_: str, phases: tuple[str, ...]) -> Result | None:
    """PENDING naming the first gaps when a complete start at count n lacks part of its
    planned waves of `phases` (None when every one was recorded whole)."""
    gaps = [g for run in complete_starts(ctx, n) for g in wave_gaps(ctx, run, n, phases)]
    if not gaps:
        return None
    more = f" (+{len(gaps) - 5} more)" if len(gaps) > 5 else ""
    return Result(
        id_, Status.PENDING, f"evidence incomplete at count {n}: {'; '.join(gaps[:5])}{more}", {"gaps": gaps}, count=n
    )
