"""What `parval bench` runs: parval's own speed against the stand-in on 127.0.0.1. It prints figures
next to their targets (PASS/MISS is informational: it never fails the command).

JSON format history: v1 = {schema_version, environment, skew, campaign, poll, targets}.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from parval.bench.figures import BenchConfig, BenchResults, Environment
from parval.errors import UsageError
from parval.jsonread import as_int, iterate

SCHEMA_VERSION = 1
FULL: BenchConfig = {
    "ns": [2, 4, 8, 16],
    "waves": 20,
    "skew_service_ms": 150.0,
    "requests": 2000,
    "starts": 5,
    "wave_service_ms": 20.0,
    "poll_blocks": 6,
    "poll_per_block": 15,
    "poll_service_ms": 60.0,
}
QUICK: BenchConfig = {
    "ns": [2, 16],
    "waves": 4,
    "skew_service_ms": 100.0,
    "requests": 160,
    "starts": 2,
    "wave_service_ms": 20.0,
    "poll_blocks": 2,
    "poll_per_block": 5,
    "poll_service_ms": 60.0,
}
CAMPAIGN_N = 16


def parse_ns(text: str) -> list[int]:
    try:
        ns = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UsageError(f"--n {text!r}: expected counts like 2,4,8,16") from None
    if not ns or any(not 2 <= n <= 16 for n in ns):
        raise UsageError(f"--n {text!r}: each count must be between 2 and 16")
    return ns


def environment() -> Environment:
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_start": [round(x, 2) for x in load],
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _real(value: object) -> float:
    """A number of the configuration, as it is (TypeError for anything else)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise TypeError(f"expected a number, not '{type(value).__name__}'")


async def run_all(cfg: Mapping[str, object], workdir: Path, log: Callable[[str], None]) -> BenchResults:
    """Every measurement for `cfg` (a BenchConfig, adjusted by the command line)."""
    from parval.bench.campaign import run_campaign
    from parval.bench.poll import run_poll
    from parval.bench.skew import run_skew
    from parval.bench.util import write_model

    model = write_model(workdir)
    log("campaign-like loop: gap between waves, per-start overhead, RSS, evidence writing")
    campaign = await run_campaign(
        workdir / "campaign",
        total_requests=as_int(cfg["requests"]),
        n=CAMPAIGN_N,
        starts=as_int(cfg["starts"]),
        service_ms=_real(cfg["wave_service_ms"]),
    )
    log(f"release skew: N = {cfg['ns']}, {cfg['waves']} waves per method")
    ns = [as_int(n) for n in iterate(cfg["ns"])]
    skew = await run_skew(workdir / "skew", model, ns, as_int(cfg["waves"]), _real(cfg["skew_service_ms"]))
    log("status poller: rate and effect on serial request latency")
    poll = await run_poll(
        workdir / "poll",
        model,
        blocks=as_int(cfg["poll_blocks"]),
        per_block=as_int(cfg["poll_per_block"]),
        service_ms=_real(cfg["poll_service_ms"]),
    )
    from parval.bench.soak_throughput import SOAK_N, SOAK_SERVICE_MS, run_soak

    soak_waves = max(10, as_int(cfg["requests"]) // 20)
    log(f"soak: {soak_waves} mixed warm waves at {SOAK_N} slots, {SOAK_SERVICE_MS:g} ms requests")
    soak = await run_soak(workdir / "soak", waves=soak_waves)
    return {"skew": skew, "campaign": campaign, "poll": poll, "soak": soak}
