"""`parval framework`: collect the shared framework record (F1-F6) for one candidate build."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def framework_command(
    plan: Annotated[Path, typer.Argument(help="The YAML run plan (same format as `parval run`).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Record directory (default: ./runs/<time>-<plan>-framework).")
    ] = None,
    source_commit: Annotated[
        str | None,
        typer.Option("--source-commit", help="Source commit of the candidate build, stored in the identity."),
    ] = None,
    probes: Annotated[
        Path | None,
        typer.Option(
            "--probes", help="Optional YAML with framework-only settings (distinct session options, stress job, skips)."
        ),
    ] = None,
    only: Annotated[
        str | None,
        typer.Option(
            "--only",
            help="Run only these F assertions or groups, comma separated (e.g. F1,F5.no_convoy); "
            "the others stay PENDING.",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the verdict.")] = False,
) -> None:
    """Collect the shared framework record (F1-F6) for the plan's candidate build.

    Launches fresh candidate servers (flagged and legacy), forces scheduling, load, \
reconfiguration, disconnect, shutdown and multi-model orders through the HTTP API, runs the plan's \
CTest/sanitizer builds, and writes record.json (`parval schema framework`) with events.jsonl and \
every server log.

    Point a model plan's framework.record at the record: a missing record, or one for another \
executable or backend, keeps that model's framework_checks PENDING.

    Example: parval framework plans/framework-demo.yaml --out runs/fw-demo

    Exit codes: 0 every applicable F assertion PASS · 1 an F assertion FAILED · 2 usage or plan \
error · 3 evidence incomplete (PENDING/BLOCKED).
    """
    from parval.framework.collect import run_framework
    from parval.framework.record import RECORD

    argv = ["parval", "framework", str(plan)]
    for flag, value in (("--out", out), ("--source-commit", source_commit), ("--probes", probes), ("--only", only)):
        if value is not None:
            argv += [flag, str(value)]
    run_dir, record = run_framework(plan, out=out, source_commit=source_commit, probes=probes, only=only, argv=argv)
    if not quiet:
        for aid_result in record["assertions"]:
            typer.echo(f"{aid_result['status']:<14} {aid_result['id']:<24} {aid_result['reason'][:160]}")
        for group in record["groups"].values():
            typer.echo(group["summary"])
        typer.echo(f"record: {run_dir / RECORD}")
    typer.echo(f"{record['record_id']}: {record['verdict']['line']}")
    raise typer.Exit(record["verdict"]["exit_code"])
