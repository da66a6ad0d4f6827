"""What a soak buys per minute (plan section `soak`): one fresh start at 4 slots running
the mixed warm waves a stateless model's soak runs (released together, recorded, drain
checked), timed on the stand-in. Overlapped outputs per minute is what plans an hour on a GPU box; parval's share
is the wall time in which no request was in flight (between waves: recording the replies,
the wave's checks, the next wave's setup)."""

from __future__ import annotations

import time
from pathlib import Path

from parval.bench.campaign import bench_plan
from parval.bench.figures import SoakFigures
from parval.bench.util import median, rnd
from parval.jsontypes import JsonObject
from parval.judge import MID_RUN
from parval.rundir.estimate import busy_time
from parval.rundir.events import EventLog
from parval.rundir.layout import EVENTS
from parval.rundir.mismatch_bound import overlapped_events

SOAK_N = 4
SOAK_SERVICE_MS = 100.0


async def run_soak(workdir: Path, *, waves: int, n: int = SOAK_N, service_ms: float = SOAK_SERVICE_MS) -> SoakFigures:
    from parval import api
    from parval.plan.load import load_plan
    from parval.runners.campaign import Campaign
    from parval.runners.phases import mixed_order, wave_together

    plan = load_plan(bench_plan(workdir, service_ms=service_ms, poll_ms=5.0))
    run_dir = api.prepare_run_dir(plan, workdir / "run")
    log = EventLog(run_dir / EVENTS, sync_behind=True)  # as a campaign's log (parval.api)
    campaign = Campaign(plan, run_dir, log, judging=MID_RUN)
    requests: list[JsonObject] = []
    log.listeners.append(lambda e: requests.append(e) if e["kind"] == "request" else None)
    spec = campaign.launch("candidate", flagged=True, slots=n)
    async with campaign.start("soak-bench", "soak", spec, n, start_index=1) as st:
        t0 = time.monotonic()
        for m in range(waves):
            await wave_together(campaign, st, "mixed_wave", m, mixed_order(campaign.requests, n, m))
        wall = time.monotonic() - t0
    log.close()
    spans = [(float(str(e["t_send"])), float(str(e["t_done"]))) for e in requests]
    busy = busy_time(spans)
    overlapped = len(overlapped_events(requests, {"soak-bench": n}))
    latencies_ms = [(t1 - t_send) * 1000 for t_send, t1 in spans]
    return {
        "n": n,
        "service_ms": service_ms,
        "waves": waves,
        "requests": len(requests),
        "wall_s": round(wall, 3),
        "overlapped": overlapped,
        "overlapped_per_min": rnd(overlapped / wall * 60 if wall else None, 1),
        "parval_share_pct": rnd((wall - busy) / wall * 100 if wall else None, 1),
        "request_ms_median": rnd(median(latencies_ms), 1),
    }
