"""`parval report`: render, merge or catalogue evidence (md, json, junit)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from parval.errors import UsageError

if TYPE_CHECKING:
    from parval.report.run_table_row import SetAside


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
    set_aside: Annotated[
        list[Path] | None,
        typer.Option(
            "--set-aside",
            help="With --catalogue DIR: leave run RUN out of every verdict, by a decision that every format "
            "shows. Repeatable; each needs its own --reason.",
        ),
    ] = None,
    reasons: Annotated[
        list[str] | None,
        typer.Option("--reason", help="Why the matching --set-aside run leaves the verdict (in the same order)."),
    ] = None,
) -> None:
    """Render evidence as markdown (PR comment), JSON or JUnit XML; merge runs; catalogue runs.

    Merging refuses (exit 2) runs whose manifests disagree on the executables, model files, \
fixtures, model id, backend or provenance (local/CI), or whose plans disagree on what changes \
outputs (model options, quantization, requests, volatile fields, tolerance, threads, the servers' args \
and env), and names \
the field. The exit code is the verdict's: 0 admitted, 1 a required assertion FAILED (or the run \
directory was modified after judging), 3 evidence incomplete or HISTORICAL (made under another \
procedure version than this parval implements: never admitted; 1 when it recorded a FAIL). \
With --catalogue (every run of one model/backend/mode and build merged into one verdict): 0 every verdict \
admitted, 1 any verdict failed, 3 otherwise. With --catalogue and --claims: 0 only when every claimed \
combination and count is ADMITTED, 1 when any is NOT ADMITTED, 3 otherwise (BLOCKED, PENDING, \
NOT RUN, STALE, HISTORICAL), 2 a catalogue that does not validate. Every run under DIR counts \
(an older failure is never erased by a newer passing run); a run leaves the verdicts only by \
--set-aside RUN --reason TEXT, shown in md, json and junit.

    Example: parval report runs/demo --format md --output report.md

    Example: parval report runs/shard1 runs/shard2 --format junit -o parval.xml

    Example: parval report --catalogue runs/

    Example: parval report --catalogue runs/demo --claims plans/catalogue.yaml -o claims.md

    Example: parval report --catalogue runs/ --claims cat.yaml --set-aside runs/old --reason "fault switch left on"
    """
    from parval.report.write import FORMATS, render_report

    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: use md, json or junit")
    if output is not None:
        refuse_inside_a_run(output)
    decisions = set_aside_decisions(set_aside or [], reasons or [])
    if claims is not None:
        from parval.claims.render import render_claims_report

        text, code = render_claims_report(
            claims, catalogue, runs or [], fmt=fmt, redact=redact_paths, rejudge=rejudge, set_aside=decisions
        )
    else:
        text, code = render_report(
            runs or [],
            fmt=fmt,
            catalogue=catalogue,
            redact=redact_paths,
            rejudge=rejudge,
            output=output,
            set_aside=decisions,
        )
    if output is not None:
        from parval.rundir.files import atomic_write

        atomic_write(output, text)
    else:
        typer.echo(text, nl=not text.endswith("\n"))
    raise typer.Exit(code)


def refuse_inside_a_run(output: Path) -> None:
    """A report written over a file of a run directory, or where parval reads (a
    subdirectory, a name parval uses), would change what was sealed: `parval verify` would
    call the run modified and every later report of it would exit 2. Refused before anything
    is rendered (exit 2). Any other name beside the run's files is not part of the run."""
    from parval.rundir.integrity import part_of_run
    from parval.rundir.layout import enclosing_run_dir

    run = enclosing_run_dir(output)
    if run is not None and part_of_run(output.resolve().relative_to(run).as_posix()):
        raise UsageError(
            f"--output {output}: inside the run directory {run}, where parval writes or reads its own files; "
            "a file written there makes the run read as modified after it was judged (parval verify, every "
            "later report: exit 2)",
            hint=f"write it outside the run directory, e.g. --output {run.parent / output.name}",
        )


def set_aside_decisions(runs: list[Path], reasons: list[str]) -> list[SetAside]:
    """Pair each --set-aside RUN with its --reason TEXT: a run never leaves a verdict
    without a recorded reason (exit 2 otherwise)."""
    from parval.report.run_table_row import SetAside

    if len(reasons) != len(runs) or any(not r.strip() for r in reasons):
        raise UsageError(
            f"{len(runs)} --set-aside run(s) and {len(reasons)} --reason text(s): every --set-aside RUN "
            "needs its own, non-empty --reason TEXT (why it leaves the verdict)",
            hint='parval report --catalogue runs/ --set-aside runs/old --reason "built with the fault switch on"',
        )
    return [SetAside(run, reason.strip()) for run, reason in zip(runs, reasons, strict=True)]
