"""`parval verify`: re-hash a run directory and name every file changed since the run; or
reseal one explicitly (`--reseal --reason TEXT`, recorded in its chain)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from parval.errors import EXIT_ADMITTED, EXIT_FAILED, UsageError


def verify_command(
    run: Annotated[Path, typer.Argument(help="The run directory to check.")],
    reseal: Annotated[
        bool,
        typer.Option(
            "--reseal",
            help="Seal the directory as it stands now (new listing and chain link), naming what differed; "
            "recorded in the chain and stated by every later report. Needs --reason.",
        ),
    ] = False,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why the directory may be trusted as it stands.")
    ] = None,
) -> None:
    """Re-hash every artifact, events.jsonl, manifest.json, evidence and reports; list any
    file modified, missing or added since the run. A file parval neither wrote nor reads (a
    report redirected into the run directory) is named as not part of the run and changes
    nothing.

    Exit codes: 0 unchanged · 1 something was modified, missing or added · 2 not a run
    directory (or never judged), or --reseal without --reason.

    Example: parval verify runs/demo

    Example: parval verify runs/demo --reseal --reason "restored from backup after a disk failure"
    """
    from parval.rundir.integrity import not_part_of_run, read_chain, verify_run
    from parval.rundir.verified import reseal_run, reseals

    if reseal:
        if not reason:
            raise UsageError("--reseal needs --reason TEXT: why this directory may be trusted as it stands")
        found = reseal_run(run, reason)
        for p in found:
            typer.echo(f"sealed over: {p}")
        typer.echo(f"RESEALED — {run}: {len(found)} difference(s) sealed over, reason recorded: {reason}")
        raise typer.Exit(EXIT_ADMITTED)
    if reason is not None:
        raise UsageError("--reason goes with --reseal")
    problems, info = verify_run(run)
    for name in not_part_of_run(run):
        typer.echo(f"not part of the run: {name} (parval neither wrote nor reads it)")
    if problems:
        for p in problems:
            typer.echo(p)
        typer.echo(f"TAMPERED — {len(problems)} difference(s) from what was recorded in {run}")
        raise typer.Exit(EXIT_FAILED)
    sealed = (
        "evidence and reports sealed"
        if info.get("sealed")
        else "evidence.json was re-judged after the last seal (its own bytes are not sealed)"
    )
    links, _ = read_chain(run)
    resealed = reseals(links)
    note = ("; resealed explicitly: " + "; ".join(resealed)) if resealed else ""
    typer.echo(
        f"OK — {info.get('files')} recorded file(s), events.jsonl, manifest.json and a "
        f"chain of {info.get('links')} link(s) match; {sealed}{note}"
    )
    raise typer.Exit(EXIT_ADMITTED)
