"""`parval init`: write a starter plan from an existing audiocpp_server config."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from parval.errors import UsageError


def starter_warnings(text: str) -> list[str]:
    """What keeps the written plan's counts from being admitted (`parval validate` says the
    same): a skipped count means nothing above it can ever be admitted."""
    import yaml

    from parval.plan.waves import skipped_counts_warning

    counts = [int(c) for c in (yaml.safe_load(text) or {}).get("counts") or []]
    warning = skipped_counts_warning(counts)
    return [warning] if warning else []


def init_command(
    server_config: Annotated[Path, typer.Option("--server-config", help="An existing audiocpp_server config JSON.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where to write the plan (default: <model id>.plan.yaml; '-' for stdout)."),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="The model entry to validate (required when the config has several).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
) -> None:
    """Write a starter plan from an existing audiocpp_server config.

    Counts run from 1 up to the model's advertised `slots`; the two executables and the
    fixtures are EDIT-ME placeholders until you replace them. `parval validate` names every
    placeholder left.

    Example: parval init --server-config server.json --model my-tts --output plans/my-tts.yaml
    """
    from parval.plan.starter import (
        PLACEHOLDER,
        advertised_counts,
        missing_slots_warning,
        pick_model,
        read_server_config,
        starter_plan,
    )

    config = read_server_config(server_config)
    entry = pick_model(config, model, server_config)
    to_stdout = output is not None and str(output) == "-"
    target = output if output is not None else Path(f"{str(entry['id']).replace(':', '-')}.plan.yaml")
    plan_dir = Path.cwd() if to_stdout else target.parent
    text = starter_plan(config, entry, server_config, plan_dir)
    slots = missing_slots_warning(entry, server_config)
    warnings = [*([slots] if slots else []), *starter_warnings(text)]
    if to_stdout:
        sys.stdout.write(text)
        for warning in warnings:
            typer.echo(warning, err=True)
        return
    if target.exists() and not force:
        raise UsageError(f"{target}: already exists", hint="choose another --output, or pass --force")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, "utf-8")
    typer.echo(f"wrote {target}: counts 1..{advertised_counts(entry)[-1]} for model {entry['id']!r}", err=True)
    for warning in warnings:
        typer.echo(warning, err=True)
    typer.echo(f"next: replace the {PLACEHOLDER} placeholders, then run: parval validate {target}", err=True)
