"""`parval framework PLAN`: collect the shared F1-F6 record for one candidate build.

Library entry point `run_framework` (no printing) and the Typer command the CLI registers.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from parval.errors import RunDirError
from parval.evidence import EVENTS, MANIFEST, EventLog, write_json
from parval.framework.context import Context
from parval.framework.record import RECORD, assemble, record_inputs, write_record
from parval.framework.runner import check_skips, judge, judge_inputs, parse_selection, run_probes
from parval.framework.settings import load_options
from parval.integrity import write_listing
from parval.manifest import build_manifest
from parval.plan import load_plan


def framework_run_dir(out: Path | None, plan_name: str) -> Path:
    """A fresh directory: `--out DIR` (never one holding a record) or runs/<time>-<plan>-framework."""
    if out is not None:
        if (out / RECORD).exists() or (out / EVENTS).exists():
            raise RunDirError(f"{out}: already holds a framework run; parval never overwrites evidence",
                              hint="choose another --out")
        out.mkdir(parents=True, exist_ok=True)
        return out.resolve()
    root = Path.cwd() / "runs"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(1000):
        candidate = root / (f"{stamp}-{plan_name}-framework" + (f"-{i}" if i else ""))
        try:
            candidate.mkdir(parents=True)
            return candidate.resolve()
        except FileExistsError:
            continue
    raise RunDirError("could not create a run directory under ./runs")


def run_framework(plan_path: Path, *, out: Path | None = None, source_commit: str | None = None,
                  probes: Path | None = None, only: str | None = None,
                  argv: list[str] | None = None) -> tuple[Path, dict[str, Any]]:
    """Run the probes and CTest, write record.json; returns (run dir, record)."""
    plan = load_plan(plan_path)
    options = load_options(probes)
    selected = parse_selection(only)
    check_skips(options.skip)
    run_dir = framework_run_dir(out, plan.name)
    (run_dir / "plan.yaml").write_bytes(plan.path.read_bytes())
    if probes is not None:
        shutil.copyfile(probes, run_dir / "probes.yaml")
    log = EventLog(run_dir / EVENTS)
    started = time.time()
    try:
        ctx = Context(plan, run_dir, log, options)
        log.append("framework_start", plan=plan.name, plan_sha256=plan.sha256, only=only,
                   selection=sorted(selected))

        async def main() -> tuple[list[dict[str, Any]], Any]:
            return await run_probes(ctx, selected)

        outcomes, runs = anyio.run(main)
        for r in runs:
            log.append("ctest_run", run=r.to_json())
        # Judging reads only recorded events from here on (the same path as --rejudge).
        inputs = judge_inputs(ctx, selected, only)
        log.append("judge_inputs", **inputs)
        rinputs = record_inputs(ctx, started=started, outcomes=outcomes, selection=sorted(selected),
                                source_commit=source_commit,
                                argv=argv or ["parval", "framework", str(plan_path)])
        log.append("record_inputs", **rinputs)
        record = assemble(rinputs, judge(ctx.findings.checks, runs, inputs), runs, ctx.findings.checks)
        write_record(run_dir, record)
        log.append("framework_end", record_id=record["record_id"], verdict=record["verdict"])
    finally:
        log.close()
    # Like a model run: a manifest, and the listing/chain that `parval verify` and model
    # runs referencing this record check it against.
    write_json(run_dir / MANIFEST, build_manifest(plan))
    write_listing(run_dir)
    return run_dir, record


def framework_command(
    plan: Annotated[Path, typer.Argument(help="The YAML run plan (same format as `parval run`).")],
    out: Annotated[Path | None, typer.Option(
        "--out", help="Record directory (default: ./runs/<time>-<plan>-framework).")] = None,
    source_commit: Annotated[str | None, typer.Option(
        "--source-commit", help="Source commit of the candidate build, stored in the identity.")] = None,
    probes: Annotated[Path | None, typer.Option(
        "--probes", help="Optional YAML with framework-only settings (distinct session options, "
                         "stress job, skips).")] = None,
    only: Annotated[str | None, typer.Option(
        "--only", help="Run only these F assertions or groups, comma separated (e.g. F1,F5.no_convoy); "
                       "the others stay PENDING.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the verdict.")] = False,
) -> None:
    """Collect the shared framework record (F1-F6) for the plan's candidate build.

    Launches fresh candidate servers (flagged and legacy), forces scheduling, load, reconfiguration, disconnect, shutdown and multi-model orders through the HTTP API, runs the plan's CTest/sanitizer builds, and writes record.json (`parval schema framework`) with events.jsonl and every server log.

    Point a model plan's framework.record at the record: a missing record, or one for another executable or backend, keeps that model's framework_checks PENDING.

    Example: parval framework plans/framework-demo.yaml --out runs/fw-demo

    Exit codes: 0 every applicable F assertion PASS · 1 an F assertion FAILED · 2 usage or plan error · 3 evidence incomplete (PENDING/BLOCKED).
    """

    argv = ["parval", "framework", str(plan)]
    for flag, value in (("--out", out), ("--source-commit", source_commit), ("--probes", probes),
                        ("--only", only)):
        if value is not None:
            argv += [flag, str(value)]
    run_dir, record = run_framework(plan, out=out, source_commit=source_commit, probes=probes,
                                    only=only, argv=argv)
    if not quiet:
        for aid_result in record["assertions"]:
            typer.echo(f"{aid_result['status']:<14} {aid_result['id']:<24} {aid_result['reason'][:160]}")
        for group in record["groups"].values():
            typer.echo(group["summary"])
        typer.echo(f"record: {run_dir / RECORD}")
    typer.echo(f"{record['record_id']}: {record['verdict']['line']}")
    raise typer.Exit(record["verdict"]["exit_code"])
