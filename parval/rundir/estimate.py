"""How long a plan's campaign takes (`parval validate`): bounded by the plan's timeouts, and
estimated from an earlier run of the same server and model (`--like RUN`) whose measured
cost per start and per request is scaled to this plan's schedule."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from parval.errors import UsageError
from parval.jsonread import as_float
from parval.plan.load import Plan
from parval.plan.schedule import schedule_rows


def planned(plan: Plan) -> tuple[int, int]:
    """(fresh starts, requests) of the plan's schedule, as `parval validate` prints them."""
    rows = schedule_rows(plan)
    return sum(r[1] for r in rows), sum(r[3] for r in rows)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def bound_line(plan: Plan) -> str:
    """The worst case the plan's timeouts allow: every start running to timeouts.start_s,
    the whole campaign capped by timeouts.campaign_s."""
    starts, _ = planned(plan)
    start_s, campaign_s = float(plan.timeouts["start_s"]), float(plan.timeouts["campaign_s"])
    if starts * start_s <= campaign_s:
        cap = f"{starts} starts x timeouts.start_s {start_s:g} s"
    else:
        cap = f"timeouts.campaign_s {campaign_s:g} s"
    return f"time: at most {_duration(min(starts * start_s, campaign_s))} ({cap})"


@dataclass(frozen=True)
class Measured:
    """What an earlier campaign cost: its wall time split into the time requests were in
    flight and the rest (starts: launch to ready, stops, parval's own work)."""

    wall_s: float
    busy_s: float  # wall time with at least one request in flight
    ready_per_start_s: float  # launch to /health, over the starts that got there
    starts: int
    requests: int

    @property
    def per_start_s(self) -> float:
        return max(0.0, self.wall_s - self.busy_s) / self.starts

    @property
    def per_request_s(self) -> float:
        return self.busy_s / self.requests


def busy_time(intervals: Iterable[tuple[float, float]]) -> float:
    """The length of the union of the intervals: concurrent requests count once."""
    total, end = 0.0, float("-inf")
    for t0, t1 in sorted(intervals):
        if t1 > end:
            total += t1 - max(t0, end)
            end = t1
    return total


def measure(events: Iterable[Mapping[str, object]]) -> Measured | None:
    """The cost of the campaign these events record; None when no campaign ended, or it
    made no start or request to scale from."""
    intervals: list[tuple[float, float]] = []
    readiness, starts, wall = 0.0, 0, 0.0
    ended = False
    for e in events:
        kind = e.get("kind")
        if kind == "request":
            t0, t1 = e.get("t_send"), e.get("t_done")
            if isinstance(t0, int | float) and isinstance(t1, int | float) and t1 >= t0:
                intervals.append((float(t0), float(t1)))
        elif kind == "server_ready":
            readiness += as_float(e.get("ready_s") or 0.0)
            starts += 1
        elif kind == "campaign_end":
            wall += as_float(e.get("elapsed_s") or 0.0)  # a resumed run: every session's time
            ended = True
    if not ended or not starts or not intervals:
        return None
    return Measured(wall, busy_time(intervals), readiness / starts, starts, len(intervals))


def _as_scheduled(measured: Measured, run: Path, events: list[dict[str, object]]) -> Measured:
    """`measured` counted as `parval validate` counts a schedule (its probe starts included),
    from the plan the run keeps, so that a plan estimated from its own run gets that run's
    time; as measured where the run was one shard, or its plan no longer loads."""
    from parval.errors import ParvalError
    from parval.rundir.events import campaign_shard
    from parval.rundir.resume import resume_plan

    if campaign_shard(events) is not None:
        return measured
    try:
        starts, requests = planned(resume_plan(run, None))
    except ParvalError:
        return measured
    return replace(measured, starts=starts, requests=requests)


def _manifest(run: Path) -> Mapping[str, object]:
    try:
        data = json.loads((run / "manifest.json").read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def like_line(plan: Plan, run: Path) -> tuple[str, list[str]]:
    """The estimate scaled from the run directory `run`, and a warning where that run tested
    another model or backend (its times then say little about this plan)."""
    from parval.rundir.events import read_events
    from parval.rundir.layout import EVENTS

    if not (run / EVENTS).is_file():
        raise UsageError(f"--like {run}: not a run directory (no {EVENTS})", hint="name a run parval run wrote")
    events = read_events(run / EVENTS)
    measured = measure(events)
    if measured is None:
        raise UsageError(
            f"--like {run}: its campaign has not ended (or made no request): nothing measured to scale from",
            hint=f"finish it first: parval run --resume {run}",
        )
    measured = _as_scheduled(measured, run, events)
    starts, requests = planned(plan)
    seconds = starts * measured.per_start_s + requests * measured.per_request_s
    line = (
        f"time: about {_duration(seconds)}, scaled from {run} ({measured.wall_s:.0f} s for {measured.starts} starts "
        f"and {measured.requests} requests): {starts} starts x {measured.per_start_s:.1f} s (of which "
        f"{measured.ready_per_start_s:.1f} s to ready) + {requests} requests x "
        f"{measured.per_request_s:.3f} s in flight"
    )
    warnings = []
    manifest = _manifest(run)
    model = manifest.get("model")
    platform = manifest.get("platform")
    theirs = (
        model.get("id") if isinstance(model, dict) else None,
        platform.get("backend") if isinstance(platform, dict) else None,
    )
    ours = (plan.model_id, plan.server["backend"])
    if theirs != ours:
        warnings.append(
            f"warning: {run} tested model {theirs[0]} on backend {theirs[1]}, this plan {ours[0]} on {ours[1]}: "
            "its times may say little about this plan"
        )
    return line, warnings


def soak_start_waves(plan: Plan, mixed: int) -> int:
    """Concurrent waves of one start at the largest count with `mixed` mixed warm waves:
    cold, warm, mixed and the three reloads (serial reuse runs one request at a time)."""
    from parval.plan.waves import UNLOAD_CYCLES

    return 1 + int(plan.waves["warm"]) + mixed + UNLOAD_CYCLES


def mixed_wave_s(events: Iterable[Mapping[str, object]], n: int) -> float | None:
    """The mean time from one mixed warm wave's start to the next one's in the same start at
    count n (the wave, its drain check and recording): what a soak wave costs."""
    starts: dict[tuple[object, object], list[float]] = {}
    for e in events:
        if e.get("kind") == "wave" and e.get("phase") == "mixed_wave" and e.get("n") == n:
            t = e.get("t_start")
            if isinstance(t, int | float):
                starts.setdefault((e.get("run"), e.get("attempt")), []).append(float(t))
    gaps = [b - a for ts in starts.values() for a, b in zip(sorted(ts), sorted(ts)[1:], strict=False)]
    return sum(gaps) / len(gaps) if gaps else None


def soak_line(plan: Plan, like: Path | None = None) -> str | None:
    """What the plan's soak will reach (None without one): overlapped outputs at the largest
    count, the required starts' included, and the 95 % bound that many clean outputs give.
    A soak in minutes or to a target needs the time per wave of an earlier run (`--like`)."""
    from parval.plan.waves import SOAK_WAVES_PER_START as WAVES_PER_START
    from parval.rundir.events import read_events
    from parval.rundir.layout import EVENTS
    from parval.rundir.mismatch_bound import percent, upper_bound

    soak = plan.soak
    if soak is None:
        return None
    n = max(plan.counts)
    if n < 2:
        return "soak: the largest count is 1: no output runs beside another, so a soak buys no bound"
    per_start = int(soak.get("waves_per_start") or WAVES_PER_START)
    required = plan.starts_per_count * soak_start_waves(plan, int(plan.waves["mixed_at_largest"])) * n
    wave_s = None
    if like is not None and (like / EVENTS).is_file():
        wave_s = mixed_wave_s(read_events(like / EVENTS), n)
    if "until_rate_below" in soak:
        target = float(soak["until_rate_below"])
        needed = math.ceil(math.log(0.05) / math.log1p(-target))
        text = f"soak: until the bound is below {percent(target)}: about {needed:,} overlapped outputs at count {n}"
        if wave_s is not None:
            soak_s = max(0, needed - required) / n * wave_s
            text += f", about {_duration(soak_s)} of soak (at {wave_s:.2f} s per wave, the earlier run's mixed waves)"
            if soak_s > plan.timeouts["campaign_s"]:
                text += " (more than timeouts.campaign_s allows: the soak will stop there, saying what it reached)"
        return text + f"; capped by timeouts.campaign_s {plan.timeouts['campaign_s']:g} s"
    if "waves" in soak:
        waves = int(soak["waves"])
    elif wave_s is None:
        return (
            f"soak: {float(soak['minutes']):g} min at count {n}; for what it will reach, name an earlier run: "
            "parval validate PLAN --like RUN"
        )
    else:
        waves = int(float(soak["minutes"]) * 60 / wave_s)
    starts = math.ceil(waves / per_start) if waves else 0
    total = required + n * (waves + starts * (soak_start_waves(plan, 0)))
    return (
        f"soak: about {total:,} overlapped outputs at count {n} ({waves:,} mixed warm waves in {starts} added "
        f"start(s), the required starts' included): rate < {percent(upper_bound(0, total))} (95 %) if none differs"
    )
