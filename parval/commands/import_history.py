"""`parval import`: older evidence as a separate historical record (never admission evidence)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from parval.errors import InputFileError


def import_command(
    old: Annotated[
        Path,
        typer.Argument(
            help="An older parval evidence.json (or its run directory), or a mapping file for a hand-written report."
        ),
    ],
    procedure: Annotated[str, typer.Option("--procedure", help="The procedure version OLD was made under.")],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Directory for historical.json (default: history/<record id>); never overwritten."),
    ] = None,
    candidate: Annotated[
        Path | None,
        typer.Option(
            "--candidate", help="The current candidate executable: a different tested binary is listed as a limitation."
        ),
    ] = None,
) -> None:
    """Import older evidence as a separate historical record (never admission evidence).

    Each old finding is mapped to an M/F entry with its original procedure version and tested \
hashes; failures are kept; missing raw outputs, histories or metadata and a changed binary are \
listed as limitations. Exit 0 imported, 2 usage error.

    Example: parval import runs/2026-05-model/evidence.json --procedure 2026-05-01 --out \
history/model-may

    Example: parval import old-report.map.yaml --procedure 2026-03-01
    """
    from parval.report.history import build_historical, file_sha256, write_historical

    sha = file_sha256(candidate) if candidate is not None and candidate.is_file() else None
    if candidate is not None and sha is None:
        raise InputFileError(f"--candidate {candidate}: no such file")
    record = build_historical(old, procedure, candidate_sha256=sha)
    path = write_historical(record, out if out is not None else Path("history") / record["record_id"])
    typer.echo(record["verdict"]["line"])
    for lim in record["limitations"]:
        typer.echo(f"  limitation: {lim}")
    typer.echo(f"historical record: {path}")
