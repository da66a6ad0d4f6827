"""`parval init`: write a starter plan from an existing audiocpp_server config."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from parval.errors import ParvalError, UsageError
from parval.jsontypes import JsonObject

if TYPE_CHECKING:
    from parval.plan.derived_fixtures import Fixture


def starter_warnings(text: str) -> list[str]:
    """What keeps the written plan's counts from being admitted (`parval validate` says the
    same): a skipped count means nothing above it can ever be admitted."""
    import yaml

    from parval.plan.waves import skipped_counts_warning

    counts = [int(c) for c in (yaml.safe_load(text) or {}).get("counts") or []]
    warning = skipped_counts_warning(counts)
    return [warning] if warning else []


def _plan_stem(target: Path) -> str:
    """`plans/silero.plan.yaml` -> `silero`: the name the plan's fixture folder takes."""
    name = target.name
    for suffix in (".yaml", ".yml", ".plan"):
        name = name.removesuffix(suffix)
    return name or "plan"


def init_command(
    server_config: Annotated[Path, typer.Option("--server-config", help="An existing audiocpp_server config JSON.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where to write the plan (default: <model id>.plan.yaml; '-' for stdout)."),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="The model entry to validate (required when the config has several).")
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option("--baseline", help="The upstream legacy audiocpp_server (else an EDIT-ME placeholder)."),
    ] = None,
    candidate: Annotated[
        Path | None,
        typer.Option("--candidate", help="The audiocpp_server build under test (else an EDIT-ME placeholder)."),
    ] = None,
    speech: Annotated[
        Path | None,
        typer.Option(
            "--speech",
            help="One PCM WAV of speech with pauses (audio-input tasks): the plan's inputs are derived from it "
            "and written beside the plan, with how each was made and its sha256.",
        ),
    ] = None,
    measure: Annotated[
        bool,
        typer.Option(
            "--measure",
            help="Start the candidate once and set the plan's timeouts from its load and request times "
            "(needs --candidate, --baseline and, for audio input, --speech).",
        ),
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
) -> None:
    """Write a starter plan from an existing audiocpp_server config.

    Counts run from 1 up to the model's advertised `slots`. What is not given stays an
    EDIT-ME placeholder that `parval validate` names: the two executables (--baseline,
    --candidate) and, for audio-input tasks, the input recordings (--speech derives all three
    from one). Timeouts are defaults to check, or measured with --measure.

    Example: parval init --server-config server.json --baseline up/audiocpp_server
    --candidate cand/audiocpp_server --speech speech.wav --measure --output plans/silero.yaml
    """
    from parval.plan.derived_fixtures import derive_fixtures
    from parval.plan.starter import (
        PLACEHOLDER,
        TEXT_TASKS,
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
    if to_stdout and (speech is not None or measure):
        raise UsageError("--speech and --measure write files beside the plan", hint="give --output FILE")
    if speech is not None and str(entry.get("task", "tts")) in TEXT_TASKS:
        raise UsageError(f"model {entry['id']!r} takes text, not audio: --speech is for audio-input tasks")
    if measure and (baseline is None or candidate is None):
        raise UsageError("--measure starts the candidate: give --baseline and --candidate")
    if measure and speech is None and str(entry.get("task", "tts")) not in TEXT_TASKS:
        raise UsageError("--measure sends the plan's requests: give --speech for this audio-input model")
    if not to_stdout and target.exists() and not force:
        raise UsageError(f"{target}: already exists", hint="choose another --output, or pass --force")
    fixture_dir = plan_dir / f"{_plan_stem(target)}-fixtures"
    if speech is not None and fixture_dir.exists() and not force:
        raise UsageError(f"{fixture_dir}: already exists", hint="choose another --output, or pass --force")
    executables = {role: exe for role, exe in (("baseline", baseline), ("candidate", candidate)) if exe is not None}
    fixtures = derive_fixtures(speech, fixture_dir) if speech is not None else []
    text = starter_plan(config, entry, server_config, plan_dir, executables=executables, fixtures=fixtures)
    slots = missing_slots_warning(entry, server_config)
    warnings = [*([slots] if slots else []), *starter_warnings(text)]
    if to_stdout:
        sys.stdout.write(text)
        for warning in warnings:
            typer.echo(warning, err=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, "utf-8")
    for f in fixtures:
        typer.echo(f"wrote {f.path}: {f.made} ({f.seconds:.2f} s)", err=True)
    if measure:
        text = _measured_plan(target, config, entry, server_config, executables, fixtures)
        target.write_text(text, "utf-8")
    typer.echo(f"wrote {target}: counts 1..{advertised_counts(entry)[-1]} for model {entry['id']!r}", err=True)
    for warning in warnings:
        typer.echo(warning, err=True)
    if PLACEHOLDER in text:
        typer.echo(f"next: replace the {PLACEHOLDER} placeholders, then run: parval validate {target}", err=True)
    else:
        run = f"parval run {target} --out runs/{_plan_stem(target)}"
        typer.echo(f"next: parval validate {target}, then: {run}", err=True)


def _measured_plan(
    target: Path,
    config: JsonObject,
    entry: JsonObject,
    server_config: Path,
    executables: dict[str, Path],
    fixtures: list[Fixture],
) -> str:
    """The plan at `target` written again with timeouts from one timed start of its
    candidate. A start that fails leaves the plan as written (default timeouts) and says so."""
    from parval.plan.load import load_plan
    from parval.plan.schedule import schedule_rows
    from parval.plan.starter import measured_timeouts, starter_plan
    from parval.server.start_times import time_one_start

    plan = load_plan(target)
    typer.echo(f"measuring: one start of {plan.candidate.executable} with model {plan.model_id!r} ...", err=True)
    try:
        times = time_one_start(plan)
    except ParvalError as exc:
        exc.message += f" ({target} was written with default timeouts: check them)"
        raise
    timeouts = measured_timeouts(times, schedule_rows(plan), max(plan.counts))
    typer.echo(
        f"measured: ready in {times.ready_s:.2f} s, first request {times.first_request_s:.3f} s, "
        f"slowest later request {times.request_s:.3f} s: "
        + ", ".join(f"timeouts.{k} {v}" for k, v in timeouts.items()),
        err=True,
    )
    return starter_plan(
        config,
        entry,
        server_config,
        target.parent,
        executables=executables,
        fixtures=fixtures,
        timeouts=timeouts,
        times=times,
    )
