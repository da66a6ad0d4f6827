"""`parval schema`: print one of the JSON Schemas parval ships."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from parval.errors import UsageError


def _schema_names() -> list[str]:
    from importlib import resources

    files = resources.files("parval.schemas").iterdir()
    shipped = {f.name.removesuffix(".schema.json") for f in files if f.name.endswith(".schema.json")}
    return sorted(shipped | {"events"})


def schema_command(
    which: Annotated[
        str,
        typer.Argument(
            help="plan, evidence, events, catalogue, or another schema parval ships (framework, protected, ctest)."
        ),
    ],
) -> None:
    """Print one of parval's JSON Schemas (plan: the run plan; evidence: evidence.json;
    events: a line of events.jsonl).

    Example: parval schema plan > plan.schema.json

    Example: parval schema evidence
    """
    from parval.plan.schemas import load_schema

    names = _schema_names()
    if which not in names:
        raise UsageError(f"no schema named {which!r}; use one of: {', '.join(names)}")
    if which == "events":
        from parval.rundir.event_schema import events_schema_text

        # generated from the table of event kinds (schemas/events.schema.json is its copy)
        typer.echo(events_schema_text(), nl=False)
        return
    typer.echo(json.dumps(load_schema(which), indent=2))
