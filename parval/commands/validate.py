"""`parval validate`: check a plan and print the schedule it would run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def validate_command(
    plan: Annotated[Path, typer.Argument(help="The YAML run plan.")],
    like: Annotated[
        Path | None,
        typer.Option(
            "--like",
            help="An earlier run directory of the same server and model: its measured time per start and per "
            "request, scaled to this plan's schedule, gives the campaign's expected duration.",
        ),
    ] = None,
) -> None:
    """Check a plan against the schema and named files; print the schedule it would run and
    how long it can take (at most, from the plan's timeouts; about, with --like RUN).

    Example: parval validate plans/demo.yaml

    Example: parval validate plans/my-model.yaml --like runs/my-model-first
    """
    from parval.errors import PlanError
    from parval.plan.load import load_plan, parse_plan_text
    from parval.plan.schedule import describe_schedule

    try:
        kind = parse_plan_text(plan.read_text("utf-8"), str(plan)).get("kind")
    except (OSError, UnicodeDecodeError, PlanError):
        kind = None  # load_plan says what is wrong with it
    if kind == "parval-catalogue":
        raise PlanError(f"{plan}: a catalogue, not a plan", hint=f"parval catalogue validate {plan}")
    loaded = load_plan(plan)
    typer.echo(describe_schedule(loaded))
    from parval.rundir.estimate import bound_line, like_line

    typer.echo(bound_line(loaded))
    if like is None:
        typer.echo(
            f"time: for an estimate, name an earlier run of this server and model: parval validate {plan} --like RUN"
        )
    else:
        line, warnings = like_line(loaded, like)
        typer.echo(line)
        for warning in warnings:
            typer.echo(warning, err=True)
    from parval.rundir.estimate import soak_line

    if (soak := soak_line(loaded, like)) is not None:
        typer.echo(soak)
    from parval.server.preflight import gpu_refusal, machine_warnings

    # The plan is valid; it may be run on another machine than the one checking it.
    if (refusal := gpu_refusal(loaded)) is not None:
        typer.echo(f"warning: on this machine `parval run` refuses this plan (exit 2): {refusal}", err=True)
    for line in machine_warnings(loaded):
        typer.echo(line, err=True)
