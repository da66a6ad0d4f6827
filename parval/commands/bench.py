"""`parval bench`: parval's own speed against the stand-in (figures, never a verdict)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import anyio
import typer


def bench_command(
    quick: Annotated[bool, typer.Option("--quick", help="Few waves and counts (tests, CI).")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every figure as JSON to FILE.")] = None,
    ns: Annotated[str | None, typer.Option("--n", help="Wave sizes for the skew test, e.g. 2,4,8,16.")] = None,
    waves: Annotated[
        int | None, typer.Option("--waves", min=1, max=500, help="Waves per method and N (R; default 20, quick 4).")
    ] = None,
    requests: Annotated[
        int | None,
        typer.Option("--requests", min=32, max=100000, help="Requests in the campaign-like loop (default 2000)."),
    ] = None,
) -> None:
    """Measure parval's own speed against the stand-in (figures, not a verdict).

    Release skew of waves (parval vs a thread-per-request Barrier baseline).

    Gap between waves, per-start overhead, status-poll rate and its cost.

    Peak RSS and evidence-writing speed over a campaign-like loop.

    PASS/MISS is informational: the command exits 0 whenever the benchmark ran.

    Example: parval bench --quick --json bench.json
    """
    from parval.bench.measure import CAMPAIGN_N, FULL, QUICK, SCHEMA_VERSION, environment, parse_ns, run_all
    from parval.bench.report import render, targets
    from parval.jsonread import as_int

    cfg: dict[str, object] = dict(QUICK if quick else FULL)
    if ns is not None:
        cfg["ns"] = parse_ns(ns)
    if waves is not None:
        cfg["waves"] = waves
    if requests is not None:
        cfg["requests"] = requests
        cfg["starts"] = max(1, min(as_int(cfg["starts"]), requests // (CAMPAIGN_N * 2)))
    env = environment()

    def log(msg: str) -> None:
        typer.echo(f"parval bench: {msg}", err=True)

    with tempfile.TemporaryDirectory(prefix="parval-bench-") as tmp:
        results = anyio.run(run_all, cfg, Path(tmp), log)
    try:
        env["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        env["loadavg_end"] = []
    data: dict[str, object] = {
        "schema_version": SCHEMA_VERSION,
        "quick": quick,
        "config": cfg,
        "environment": env,
        **results,
    }
    data["targets"] = targets(data)
    typer.echo(render(data))
    if json_out is not None:
        from parval.rundir.files import atomic_write

        atomic_write(json_out, json.dumps(data, indent=2, sort_keys=True) + "\n")
        typer.echo(f"figures: {json_out}", err=True)
    sys.stdout.flush()
