"""How long a plan's campaign takes (`parval validate`): bounded by the plan's timeouts, and
estimated from an earlier run of the same server and model (`--like RUN`) whose measured
cost per start and per request is scaled to this plan's schedule."""

from __future__ import annotations

import json
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


def _busy(intervals: Iterable[tuple[float, float]]) -> float:
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
    return Measured(wall, _busy(intervals), readiness / starts, starts, len(intervals))


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
