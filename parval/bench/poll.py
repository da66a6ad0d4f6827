"""Status-poll rate achieved by parval's StatusPoller and its effect on request latency:
the same serial requests with the poller off and on (at 10 ms and at the plan default
5 ms), in interleaved blocks so that drift on a noisy machine hits every mode alike."""

from __future__ import annotations

from pathlib import Path

import anyio

from parval.bench.figures import PollFigures, PollMode
from parval.bench.util import MODEL_ID, median, model_entry, percentile, rnd, running_standin
from parval.server.client import OK, Client
from parval.server.status_poller import StatusPoller

ROUTE = "/v1/tasks/run"
MODES: dict[str, float | None] = {"off": None, "10ms": 0.010, "5ms": 0.005}


async def run_poll(workdir: Path, model_path: Path, *, blocks: int, per_block: int, service_ms: float) -> PollFigures:
    entry = model_entry(model_path, slots=1, service_ms=service_ms)
    latencies: dict[str, list[float]] = {m: [] for m in MODES}
    rates: dict[str, list[float]] = {m: [] for m in MODES if MODES[m] is not None}
    errors: dict[str, int] = {m: 0 for m in MODES}
    failed = 0
    body = {"model": MODEL_ID, "request": {"text": "parval bench poll", "seed": 3}}
    async with running_standin(workdir, "poll", entry) as server:
        client = Client(server.base_url, max_connections=4, request_timeout_s=30.0, max_body_bytes=64 << 20)
        try:
            for _ in range(2):  # warm-up: load, first connections
                await client.post(ROUTE, body)
            for b in range(blocks):
                order = list(MODES) if b % 2 == 0 else list(reversed(MODES))
                for mode in order:
                    interval = MODES[mode]
                    async with anyio.create_task_group() as tg:
                        poller = None
                        if interval is not None:
                            poller = StatusPoller(server.base_url, MODEL_ID, interval)
                            tg.start_soon(poller.run)
                            await poller.wait_for(lambda s: True, 5.0)
                            first = len(poller.samples)
                            t0 = poller.samples[-1].t if poller.samples else 0.0
                        for _ in range(per_block):
                            reply = await client.post(ROUTE, body)
                            if reply.outcome != OK:
                                failed += 1
                            latencies[mode].append(reply.elapsed_s * 1000.0)
                        if poller is not None:
                            window = poller.samples[first:]
                            if window and window[-1].t > t0:
                                rates[mode].append(len(window) / (window[-1].t - t0))
                            errors[mode] += poller.errors
                        tg.cancel_scope.cancel()
        finally:
            await client.aclose()
    off = median(latencies["off"])
    modes: dict[str, PollMode] = {}
    for mode, lat in latencies.items():
        med = median(lat)
        modes[mode] = {
            "interval_ms": None if MODES[mode] is None else round(float(MODES[mode] or 0) * 1000, 1),
            "requests": len(lat),
            "latency_median_ms": rnd(med),
            "latency_p95_ms": rnd(percentile(lat, 95)),
            "effect_pct": rnd((med - off) / off * 100.0 if med is not None and off else None, 2)
            if mode != "off"
            else None,
            "poll_hz": rnd(median(rates[mode]), 1) if mode in rates and rates[mode] else None,
            "poll_errors": errors[mode],
        }
    return {
        "service_ms": service_ms,
        "blocks": blocks,
        "per_block": per_block,
        "failed_requests": failed,
        "modes": modes,
    }
