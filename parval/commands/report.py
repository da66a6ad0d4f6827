"""`parval report`: render, merge or catalogue evidence (md, json, junit)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from parval.errors import UsageError


def report_command(
    runs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Run directories. Several runs of the same model "
            "(shards, counts split over boxes) are merged into one verdict."
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format", "-f", help="md (PR comment), json (the evidence record) or junit (one test case per assertion)."
        ),
    ] = "md",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to FILE instead of stdout.")] = None,
    catalogue: Annotated[
        Path | None,
        typer.Option("--catalogue", help="Summarise every run under DIR (each directory holding an evidence.json)."),
    ] = None,
    claims: Annotated[
        Path | None,
        typer.Option(
            "--claims",
            help="With --catalogue DIR: disclose every combination and count the catalogue file CAT claims "
            "(ADMITTED, NOT ADMITTED, BLOCKED, PENDING, NOT RUN, STALE, HISTORICAL), then the comparison table.",
        ),
    ] = None,
    redact_paths: Annotated[bool, typer.Option("--redact-paths", help="Replace absolute paths with hashes.")] = False,
    rejudge: Annotated[bool, typer.Option("--rejudge", help="Judge the recorded events again first.")] = False,
) -> None:
    """Render evidence as markdown (PR comment), JSON or JUnit XML; merge runs; catalogue runs.

    Merging refuses (exit 2) runs whose manifests disagree on the executables, model files, \
fixtures, model id, backend or provenance (local/CI), or whose plans disagree on what changes \
outputs (model options, quantization, requests, volatile fields, tolerance, threads, the servers' args \
and env), and names \
the field. The exit code is the verdict's: 0 admitted, 1 a required assertion FAILED (or the run \
directory was modified after judging), 3 evidence incomplete. With --catalogue (every run of one \
model/backend/mode and build merged into one verdict): 0 every verdict \
admitted, 1 any verdict failed, 3 otherwise. With --catalogue and --claims: 0 only when every claimed \
combination and count is ADMITTED, 1 when any is NOT ADMITTED, 3 otherwise (BLOCKED, PENDING, \
NOT RUN, STALE, HISTORICAL), 2 a catalogue that does not validate.

    Example: parval report runs/demo --format md --output report.md

    Example: parval report runs/shard1 runs/shard2 --format junit -o parval.xml

    Example: parval report --catalogue runs/

    Example: parval report --catalogue runs/demo --claims plans/catalogue.yaml -o claims.md
    """
    from parval.report.write import FORMATS, render_report

    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: use md, json or junit")
    text, code = render_report(
        runs or [], fmt=fmt, catalogue=catalogue, redact=redact_paths, rejudge=rejudge, output=output, claims=claims
    )
    if output is not None:
        from parval.rundir.files import atomic_write

        atomic_write(output, text)
    else:
        typer.echo(text, nl=not text.endswith("\n"))
    raise typer.Exit(code)
