"""`parval run`: a whole validation campaign, or the continuation of an interrupted one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from parval.errors import UsageError


def parse_shard(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        i, n = (int(x) for x in value.split("/", 1))
    except ValueError:
        raise UsageError(f"--shard {value!r}: expected i/n, e.g. 1/4") from None
    if not 1 <= i <= n:
        raise UsageError(f"--shard {value!r}: need 1 <= i <= n")
    return i, n


def run_command(
    plan: Annotated[
        Path | None,
        typer.Argument(help="The YAML run plan (not needed with --resume: the run directory keeps its plan)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Run directory (default: ./runs/<time>-<plan name>).")
    ] = None,
    resume: Annotated[
        Path | None, typer.Option("--resume", help="Continue an interrupted run directory with the plan it keeps.")
    ] = None,
    shard: Annotated[str | None, typer.Option("--shard", help="Run shard i/n of the plan's counts (e.g. 2/4).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress; print only the verdict.")] = False,
    events_json: Annotated[
        bool,
        typer.Option(
            "--events-json",
            help="Stream progress events as JSON lines on stdout, one object per line (docs/running.md).",
        ),
    ] = False,
    fail_fast: Annotated[
        bool,
        typer.Option(
            "--fail-fast",
            help="Once a count has a FAIL, do not run the counts "
            "above it (they cannot be admitted); the report lists them as not run.",
        ),
    ] = False,
    soak: Annotated[
        str | None,
        typer.Option(
            "--soak",
            help="After the required starts, soak this long (60m, 1.5h) at the largest count: more mixed "
            "warm waves in added fresh starts, for a tighter bound on the mismatch rate (the plan's `soak` "
            "section, replaced).",
        ),
    ] = None,
    without_gpu: Annotated[
        bool,
        typer.Option(
            "--without-gpu",
            help="Run a plan with memory.gpu_required on a machine where NVML cannot read GPU memory "
            "(refused otherwise, before anything starts); its memory checks (M5) then stay PENDING.",
        ),
    ] = False,
) -> None:
    """Run a whole validation campaign and write the evidence.

    Ctrl-C (or SIGTERM, or SIGHUP: the SSH session went away) stops the servers within the plan's \
shutdown grace period, writes the partial evidence marked interrupted and exits 130 (143, 129); a \
second Ctrl-C kills at once. Under `nohup` a hangup is ignored and the campaign goes on. `parval \
run --resume RUN` continues an interrupted run with the plan it keeps: completed starts are kept, \
the interrupted one is redone on a fresh process (a PLAN named as well must be that plan, or the \
resume is refused naming what differs).

    Progress goes to stderr: a live display on a terminal, one line per finished step otherwise. \
Exit code: 0 admitted, 1 a required assertion FAILED, 2 usage or plan error, 3 evidence \
incomplete, 4 internal error.

    Example: parval run plans/demo.yaml --out runs/demo

    Example: parval run plans/my-model.yaml --shard 2/3 --events-json > events.jsonl

    Example: parval run --resume runs/20261201-101500-my-model

    Example: parval run plans/my-model.yaml --soak 60m
    """
    from parval import api
    from parval.plan.load import load_plan
    from parval.rundir.resume import resume_plan
    from parval.signals import handle_signals

    if resume is not None and out is not None:
        raise UsageError("--out and --resume cannot be combined: a resumed run continues in RUN")
    if resume is not None:
        loaded = resume_plan(resume, plan)
    elif plan is not None:
        loaded = load_plan(plan)
    else:
        raise UsageError("name the plan (parval run PLAN) or the run to continue (parval run --resume RUN)")
    plan_text: str | None = None
    if soak is not None:
        from parval.plan.load import parse_duration_minutes, with_soak

        if resume is not None:
            raise UsageError("--soak and --resume cannot be combined: a resumed run continues the soak it has")
        try:
            minutes = parse_duration_minutes(soak)
        except ValueError as exc:
            raise UsageError(f"--soak {exc}") from None
        loaded, plan_text = with_soak(loaded, minutes)
    shard_t = parse_shard(shard)
    from parval.framework.record_identity import refuse_modified_record
    from parval.server.preflight import gpu_refusal, machine_warnings

    if not without_gpu and (refusal := gpu_refusal(loaded)) is not None:
        raise refusal
    for line in machine_warnings(loaded):
        typer.echo(line, err=True)

    refuse_modified_record(loaded.framework.get("record"), loaded.base_dir)
    with handle_signals(grace_s=loaded.timeouts["shutdown_grace_s"]) as sigs:
        from parval.rundir.events import campaign_shard, read_events
        from parval.rundir.layout import EVENTS
        from parval.rundir.resume import prepare_resume
        from parval.ui.listener import make_listener

        run_dir: Path | None = None
        skip: set[str] | None = None
        if resume is not None:
            run_dir, skip = prepare_resume(loaded, resume, shard_t)
            shard_t = campaign_shard(read_events(run_dir / EVENTS))
        else:
            run_dir = api.prepare_run_dir(loaded, out, plan_text=plan_text)
        listener, finish = make_listener(quiet=quiet, events_json=events_json, plan=loaded)
        run_dir, evidence = api.run_plan(
            loaded, run_dir=run_dir, listeners=[listener], shard=shard_t, skip_runs=skip, fail_fast=fail_fast
        )
        finish(evidence)
        api.finalize(run_dir, evidence)
        code = int(evidence["verdict"]["exit_code"])
        if not events_json:
            # the verdict of what ran before the signal: said to be of an interrupted run
            line = evidence["verdict"]["line"]
            typer.echo(f"(interrupted) {line}" if sigs.exit_code is not None else line)
            if not quiet:
                typer.echo(f"evidence: {run_dir / 'evidence.json'}")
                typer.echo(f"report:   {run_dir / 'report.md'}")
        if sigs.exit_code is not None:
            typer.echo(
                f"parval: error: interrupted by {sigs.name}; partial evidence written to "
                f"{run_dir} (continue with: parval run --resume {run_dir})",
                err=True,
            )
            code = sigs.exit_code
    raise typer.Exit(code)
