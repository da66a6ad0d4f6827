"""`parval validate`: check a plan and print the schedule it would run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def validate_command(plan: Annotated[Path, typer.Argument(help="The YAML run plan.")]) -> None:
    """Check a plan against the schema and named files; print the schedule it would run.

    Example: parval validate plans/demo.yaml
    """
    from parval.plan.load import load_plan
    from parval.plan.schedule import describe_schedule

    loaded = load_plan(plan)
    typer.echo(describe_schedule(loaded))
