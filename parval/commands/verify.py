"""`parval verify`: re-hash a run directory and name every file changed since the run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from parval.errors import EXIT_ADMITTED, EXIT_FAILED
from parval.rundir.integrity import verify_run


def verify_command(run: Annotated[Path, typer.Argument(help="The run directory to check.")]) -> None:
    """Re-hash every artifact, events.jsonl, manifest.json, evidence and reports; list any
    file modified, missing or added since the run.

    Exit codes: 0 unchanged · 1 something was modified, missing or added · 2 not a run
    directory (or never judged).

    Example: parval verify runs/demo
    """
    problems, info = verify_run(run)
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
    typer.echo(
        f"OK — {info.get('files')} recorded file(s), events.jsonl, manifest.json and a "
        f"chain of {info.get('links')} link(s) match; {sealed}"
    )
    raise typer.Exit(EXIT_ADMITTED)
