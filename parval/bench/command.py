"""`parval bench`: parval's own speed against the stand-in on 127.0.0.1. It prints figures
next to their targets (PASS/MISS is informational: it never fails the command).

JSON format history: v1 = {schema_version, environment, skew, campaign, poll, targets}.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from parval.errors import UsageError

SCHEMA_VERSION = 1
FULL: dict[str, Any] = {"ns": [2, 4, 8, 16], "waves": 20, "skew_service_ms": 150.0, "requests": 2000,
        "starts": 5, "wave_service_ms": 20.0, "poll_blocks": 6, "poll_per_block": 15,
        "poll_service_ms": 60.0}
QUICK: dict[str, Any] = {"ns": [2, 16], "waves": 4, "skew_service_ms": 100.0, "requests": 160,
         "starts": 2, "wave_service_ms": 20.0, "poll_blocks": 2, "poll_per_block": 5,
         "poll_service_ms": 60.0}
CAMPAIGN_N = 16


def _parse_ns(text: str) -> list[int]:
    try:
        ns = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UsageError(f"--n {text!r}: expected counts like 2,4,8,16") from None
    if not ns or any(not 2 <= n <= 16 for n in ns):
        raise UsageError(f"--n {text!r}: each count must be between 2 and 16")
    return ns


def _environment() -> dict[str, Any]:
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    return {"cpus": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "loadavg_start": [round(x, 2) for x in load],
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


async def _run_all(cfg: dict[str, Any], workdir: Path, log: Any) -> dict[str, Any]:
    from parval.bench_campaign import run_campaign
    from parval.bench_poll import run_poll
    from parval.bench_skew import run_skew
    from parval.bench_util import write_model

    model = write_model(workdir)
    log("campaign-like loop: gap between waves, per-start overhead, RSS, evidence writing")
    campaign = await run_campaign(workdir / "campaign", total_requests=cfg["requests"],
                                  n=CAMPAIGN_N, starts=cfg["starts"],
                                  service_ms=cfg["wave_service_ms"])
    log(f"release skew: N = {cfg['ns']}, {cfg['waves']} waves per method")
    skew = await run_skew(workdir / "skew", model, cfg["ns"], cfg["waves"],
                          cfg["skew_service_ms"])
    log("status poller: rate and effect on serial request latency")
    poll = await run_poll(workdir / "poll", model, blocks=cfg["poll_blocks"],
                          per_block=cfg["poll_per_block"], service_ms=cfg["poll_service_ms"])
    return {"skew": skew, "campaign": campaign, "poll": poll}


def bench_command(
    quick: Annotated[bool, typer.Option("--quick", help="Few waves and counts (tests, CI).")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every figure as JSON to FILE.")] = None,
    ns: Annotated[str | None, typer.Option("--n", help="Wave sizes for the skew test, e.g. 2,4,8,16.")] = None,
    waves: Annotated[int | None, typer.Option("--waves", min=1, max=500, help="Waves per method and N (R; default 20, quick 4).")] = None,
    requests: Annotated[int | None, typer.Option("--requests", min=32, max=100000, help="Requests in the campaign-like loop (default 2000).")] = None,
) -> None:
    """Measure parval's own speed against the stand-in (figures, not a verdict).

    Release skew of waves (parval vs a thread-per-request Barrier baseline).

    Gap between waves, per-start overhead, status-poll rate and its cost.

    Peak RSS and evidence-writing speed over a campaign-like loop.

    PASS/MISS is informational: the command exits 0 whenever the benchmark ran.

    Example: parval bench --quick --json bench.json
    """
    from parval.bench_report import render, targets

    cfg: dict[str, Any] = dict(QUICK if quick else FULL)
    if ns is not None:
        cfg["ns"] = _parse_ns(ns)
    if waves is not None:
        cfg["waves"] = waves
    if requests is not None:
        cfg["requests"] = requests
        cfg["starts"] = max(1, min(cfg["starts"], requests // (CAMPAIGN_N * 2)))
    env = _environment()

    def log(msg: str) -> None:
        typer.echo(f"parval bench: {msg}", err=True)

    with tempfile.TemporaryDirectory(prefix="parval-bench-") as tmp:
        results = anyio.run(_run_all, cfg, Path(tmp), log)
    try:
        env["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        env["loadavg_end"] = []
    data: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "quick": quick, "config": cfg,
                            "environment": env, **results}
    data["targets"] = targets(data)
    typer.echo(render(data))
    if json_out is not None:
        from parval.evidence import atomic_write

        atomic_write(json_out, json.dumps(data, indent=2, sort_keys=True) + "\n")
        typer.echo(f"figures: {json_out}", err=True)
    sys.stdout.flush()
