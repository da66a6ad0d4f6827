"""Release skew of a concurrent wave: parval's `release_together` against the approach
audio.cpp's scripts use today (a thread per request released by `threading.Barrier`,
`urllib.request`, a new connection per request), side by side on the same stand-in.

Per wave: the spread (max - min) of the N client send times, and of the server-observed
`accept_ns` (connection accepted) and `start_ns` (execution started) from the trace.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from parval.bench.figures import SkewFigures, SkewSummary, Spread
from parval.bench.util import (
    MODEL_ID,
    TraceReader,
    counter_delta,
    median,
    model_entry,
    percentile,
    rnd,
    running_standin,
    spread_ms,
    tcp_listen_counters,
)
from parval.jsonread import as_int
from parval.jsontypes import JsonObject
from parval.server.client import OK, Client
from parval.server.status_poller import StatusPoller
from parval.server.waves import release_together

ROUTE = "/v1/tasks/run"
METHODS = ("parval", "baseline")
# a connection that waited ~1 s for the server is a SYN retransmit (backlog overflow)
RETRANSMIT_S = 0.9


@dataclass
class WaveSample:
    n: int
    ok: int
    send_ms: float | None
    accept_ms: float | None
    start_ms: float | None
    max_send_to_start_ms: float | None
    slow_connects: int
    lead_ms: float | None = None  # from the call to the first send (staging, threads)


@dataclass
class SkewSeries:
    method: str
    n: int
    waves: list[WaveSample] = field(default_factory=list)

    def summary(self) -> SkewSummary:
        def col(figure: Callable[[WaveSample], float | None]) -> list[float]:
            return [v for w in self.waves if (v := figure(w)) is not None]

        def spread(figure: Callable[[WaveSample], float | None]) -> Spread:
            vals = col(figure)
            return {
                "median": rnd(median(vals)),
                "p95": rnd(percentile(vals, 95)),
                "max": rnd(max(vals) if vals else None),
            }

        return {
            "method": self.method,
            "n": self.n,
            "waves": len(self.waves),
            "send_ms": spread(lambda w: w.send_ms),
            "accept_ms": spread(lambda w: w.accept_ms),
            "start_ms": spread(lambda w: w.start_ms),
            "lead_ms": spread(lambda w: w.lead_ms),
            "requests_ok": sum(w.ok for w in self.waves),
            "requests": sum(w.n for w in self.waves),
            "slow_connects": sum(w.slow_connects for w in self.waves),
            "max_send_to_start_ms": rnd(max(col(lambda w: w.max_send_to_start_ms), default=None)),
        }


def bodies_for(tag: str, n: int) -> list[JsonObject]:
    return [{"model": MODEL_ID, "request": {"text": f"{tag} r{i}", "seed": 7}} for i in range(n)]


def baseline_wave(base_url: str, bodies: list[JsonObject], timeout_s: float) -> tuple[list[float], int]:
    """Today's scripts: one thread per request, a Barrier, urllib, a new connection each."""
    n = len(bodies)
    barrier = threading.Barrier(n)
    sends: list[float] = [0.0] * n
    ok = [False] * n

    def worker(i: int) -> None:
        barrier.wait()
        sends[i] = time.monotonic()
        req = urllib.request.Request(
            base_url + ROUTE,
            data=json.dumps(bodies[i]).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                resp.read()
                ok[i] = resp.status == 200
        except (urllib.error.URLError, OSError):
            ok[i] = False

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s + 5.0)
    return sends, sum(ok)


def wave_sample(n: int, ok: int, sends: list[float], trace: list[JsonObject], tag: str) -> WaveSample:
    mine = {str(t.get("text")): t for t in trace if str(t.get("text", "")).startswith(tag + " ")}
    accepts = [as_int(t["accept_ns"]) / 1e9 for t in mine.values()]
    starts = [as_int(t["start_ns"]) / 1e9 for t in mine.values()]
    delays: list[float] = []
    for i, sent in enumerate(sends):
        t = mine.get(f"{tag} r{i}")
        if t is not None and sent > 0:
            delays.append(as_int(t["start_ns"]) / 1e9 - sent)
    return WaveSample(
        n=n,
        ok=ok,
        send_ms=spread_ms([s for s in sends if s > 0]),
        accept_ms=spread_ms(accepts) if len(accepts) == n else None,
        start_ms=spread_ms(starts) if len(starts) == n else None,
        max_send_to_start_ms=max(delays) * 1000.0 if delays else None,
        slow_connects=sum(1 for d in delays if d > RETRANSMIT_S),
    )


async def measure_n(
    workdir: Path,
    model_path: Path,
    n: int,
    waves: int,
    service_ms: float,
    *,
    with_poller: bool,
    timeout_s: float = 30.0,
) -> dict[str, SkewSeries]:
    """One fresh stand-in (capacity 16, slots n); R waves of each method, interleaved."""
    trace_path = workdir / f"trace-n{n}{'-poll' if with_poller else ''}.jsonl"
    trace = TraceReader(trace_path)
    entry = model_entry(model_path, slots=n, service_ms=service_ms)
    series = {m: SkewSeries(m, n) for m in METHODS}
    if with_poller:
        series = {"parval+poll": SkewSeries("parval+poll", n)}
    name = f"skew-n{n}{'-poll' if with_poller else ''}"
    async with running_standin(workdir, name, entry, trace=trace_path) as server:
        client = Client(server.base_url, max_connections=n + 4, request_timeout_s=timeout_s, max_body_bytes=64 << 20)
        try:
            async with anyio.create_task_group() as tg:
                if with_poller:
                    poller = StatusPoller(server.base_url, MODEL_ID, 0.005)
                    tg.start_soon(poller.run)
                # warm-up (not counted): the first of each method after the load
                await release_together(client, ROUTE, bodies_for("warm-p", n), timeout_s)
                await anyio.to_thread.run_sync(baseline_wave, server.base_url, bodies_for("warm-b", n), timeout_s)
                trace.new_lines()
                for w in range(waves):
                    for method in series:
                        tag = f"{method} n{n} w{w}"
                        t_call = time.monotonic()
                        if method == "baseline":
                            sends, ok = await anyio.to_thread.run_sync(
                                baseline_wave, server.base_url, bodies_for(tag, n), timeout_s
                            )
                        else:
                            replies = await release_together(client, ROUTE, bodies_for(tag, n), timeout_s)
                            sends = [r.t_send for r in replies]
                            ok = sum(1 for r in replies if r.outcome == OK)
                        await anyio.sleep(0.02)  # let the handler threads finish closing
                        sample = wave_sample(n, ok, sends, trace.new_lines(), tag)
                        live = [x for x in sends if x > 0]
                        sample.lead_ms = (min(live) - t_call) * 1000.0 if live else None
                        if sample.lead_ms is not None and sample.lead_ms > RETRANSMIT_S * 1000:
                            sample.slow_connects += 1  # a staged connect waited ~1 s
                        series[method].waves.append(sample)
                tg.cancel_scope.cancel()
        finally:
            await client.aclose()
    return series


async def run_skew(workdir: Path, model_path: Path, ns: list[int], waves: int, service_ms: float) -> SkewFigures:
    before = tcp_listen_counters()
    results: list[SkewSummary] = []
    for n in ns:
        for s in (await measure_n(workdir, model_path, n, waves, service_ms, with_poller=False)).values():
            results.append(s.summary())
    largest = max(ns)
    poll_before = tcp_listen_counters()
    polled = await measure_n(workdir, model_path, largest, waves, service_ms, with_poller=True)
    poll_delta = counter_delta(poll_before, tcp_listen_counters())
    for s in polled.values():
        summary = s.summary()
        summary["tcp_counters"] = poll_delta
        results.append(summary)
    return {
        "service_ms": service_ms,
        "waves": waves,
        "ns": ns,
        "series": results,
        "tcp_counters": counter_delta(before, tcp_listen_counters()),
    }
