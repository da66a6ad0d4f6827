"""`parval validate`: check a plan and print the schedule it would run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def validate_command(plan: Annotated[Path, typer.Argument(help="The YAML run plan.")]) -> None:
    """Check a plan against the schema and named files; print the schedule it would run.

    Example: parval validate plans/demo.yaml
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
    from parval.plan.preflight import gpu_refusal

    # The plan is valid; it may be run on another machine than the one checking it.
    if (refusal := gpu_refusal(loaded)) is not None:
        typer.echo(f"warning: on this machine `parval run` refuses this plan (exit 2): {refusal}", err=True)
