"""Campaign overhead: the campaign's wall time against the time the server spent working.

The server's time is the sum of the service times of every request (client-side, send to
reply) plus each start's readiness (launch to /health). Requests served concurrently each
count in full, so the figure is conservative for parallel waves; what is left of the wall
time is parval's own cost (waits, polls, writing evidence) plus process start and stop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from parval.jsonread import as_float, as_int


def campaign_overhead(events: Iterable[Mapping[str, object]], wall_s: float | None = None) -> dict[str, object] | None:
    """{wall_s, server_s, service_s, readiness_s, starts, requests, repeated_waves,
    overhead_s, ratio, per_start_s}; None when the campaign did not end. The wall time is
    the campaign_end's unless `wall_s` is given (loops that are not whole campaigns)."""
    service = readiness = 0.0
    requests = starts = repeats = 0
    wall: float | None = None
    for e in events:
        kind = e.get("kind")
        if kind == "request":
            t0, t1 = e.get("t_send"), e.get("t_done")
            if isinstance(t0, (int, float)) and isinstance(t1, (int, float)):
                service += max(0.0, float(t1) - float(t0))
                requests += 1
        elif kind == "server_ready":
            readiness += as_float(e.get("ready_s") or 0.0)
            starts += 1
        elif kind == "wave_repeat" and e.get("repeat"):
            repeats += 1
        elif kind == "campaign_end":
            wall = as_float(e.get("elapsed_s") or 0.0)
    if wall_s is not None:
        wall = wall_s
    if wall is None:
        return None
    server = service + readiness
    overhead = max(0.0, wall - server)
    return {
        "wall_s": round(wall, 3),
        "server_s": round(server, 3),
        "service_s": round(service, 3),
        "readiness_s": round(readiness, 3),
        "starts": starts,
        "requests": requests,
        "repeated_waves": repeats,
        "overhead_s": round(overhead, 3),
        "ratio": round(wall / server, 2) if server > 0 else None,
        "per_start_s": round(overhead / starts, 3) if starts else None,
    }


def overhead_beyond_starts_pct(o: Mapping[str, object], per_start_fixed_s: float | None) -> float | None:
    """What is left of the overhead once each start's fixed cost (launch, first poll, stop)
    is taken out, as a percentage of the server's time."""
    server = as_float(o.get("server_s") or 0.0)
    if per_start_fixed_s is None or server <= 0:
        return None
    rest = max(0.0, as_float(o["overhead_s"]) - as_int(o["starts"]) * per_start_fixed_s)
    return round(100.0 * rest / server, 2)


def describe_overhead(o: Mapping[str, object] | None) -> str:
    if not o:
        return "campaign overhead: not available (the campaign did not end)"
    ratio = f"{o['ratio']}x" if o["ratio"] is not None else "n/a"
    return (
        f"campaign wall {o['wall_s']:.1f} s for {o['requests']} requests "
        f"over {o['starts']} starts; "
        f"server time {o['server_s']:.1f} s (service {o['service_s']:.1f} s + readiness "
        f"{o['readiness_s']:.1f} s); overhead {o['overhead_s']:.1f} s "
        f"({o['per_start_s']} s per start), wall/server {ratio}"
    )
