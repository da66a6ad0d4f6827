"""parval command line. Thin: parses arguments, calls parval.api, maps errors to exit codes.

Exit codes: 0 admitted · 1 a required assertion FAILED · 2 usage or plan error ·
3 evidence incomplete (PENDING/BLOCKED or interrupted) · 4 internal error ·
130/143 interrupted by SIGINT/SIGTERM (partial evidence written).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from parval import __version__
from parval.errors import EXIT_INTERNAL, EXIT_USAGE, ParvalError, RunDirError, UsageError

EXIT_HELP = (
    "Exit codes: 0 admitted (every required assertion PASS) · 1 a required assertion FAILED · "
    "2 usage or plan error · 3 evidence incomplete (PENDING/BLOCKED, or interrupted) · "
    "4 internal error · 130/143 interrupted by SIGINT/SIGTERM."
)

app = typer.Typer(
    name="parval",
    help="Collect and judge the evidence needed to admit an audio.cpp model at N parallel slots.\n\n"
    + EXIT_HELP
    + "\n\nExample: parval run plans/demo.yaml --out runs/demo && parval report runs/demo -o report.md"
    + "\n\nEvery command has --help with an example; `parval --install-completion` adds shell completion.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"parval {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """parval: evidence orchestrator for audiocpp_server parallel-slot admission."""


def _err(msg: str) -> None:
    typer.echo(f"parval: error: {msg}", err=True)


def _parse_shard(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        i, n = (int(x) for x in value.split("/", 1))
    except ValueError:
        raise UsageError(f"--shard {value!r}: expected i/n, e.g. 1/4") from None
    if not 1 <= i <= n:
        raise UsageError(f"--shard {value!r}: need 1 <= i <= n")
    return i, n


@app.command()
def run(
    plan: Annotated[Path, typer.Argument(help="The YAML run plan.")],
    out: Annotated[Path | None, typer.Option("--out", help="Run directory (default: ./runs/<time>-<plan name>).")] = None,
    resume: Annotated[Path | None, typer.Option("--resume", help="Continue an interrupted run directory.")] = None,
    shard: Annotated[str | None, typer.Option("--shard", help="Run shard i/n of the plan's counts (e.g. 2/4).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress; print only the verdict.")] = False,
    events_json: Annotated[bool, typer.Option("--events-json", help="Stream progress events as JSON lines on "
                                              "stdout (one object per line; README: Progress output).")] = False,
    fail_fast: Annotated[bool, typer.Option("--fail-fast", help="Once a count has a FAIL, do not run the counts "
                                            "above it (they cannot be admitted); the report lists them as not run.")] = False,
) -> None:
    """Run a whole validation campaign and write the evidence.

    Ctrl-C (or SIGTERM) stops the servers within the plan's shutdown grace period, writes the partial evidence marked interrupted and exits 130 (143); a second Ctrl-C kills at once. `--resume RUN` continues an interrupted run: completed starts are kept, the interrupted one is redone on a fresh process.

    Progress goes to stderr: a live display on a terminal, one line per finished step otherwise. Exit code: 0 admitted, 1 a required assertion FAILED, 2 usage or plan error, 3 evidence incomplete, 4 internal error.

    Example: parval run plans/demo.yaml --out runs/demo

    Example: parval run plans/my-model.yaml --shard 2/3 --events-json > events.jsonl
    """
    from parval import api
    from parval.plan import load_plan
    from parval.signals import handle_signals

    loaded = load_plan(plan)
    shard_t = _parse_shard(shard)
    if resume is not None and out is not None:
        raise UsageError("--out and --resume cannot be combined: a resumed run continues in RUN")
    with handle_signals(grace_s=loaded.timeouts["shutdown_grace_s"]) as sigs:
        from parval.integrity import seal_run
        from parval.progress import make_listener
        from parval.report.write import write_reports
        from parval.resume import prepare_resume

        run_dir: Path | None = None
        skip: set[str] | None = None
        if resume is not None:
            run_dir, skip = prepare_resume(loaded, resume, shard_t)
            shard_t = _shard_of(run_dir)
        else:
            run_dir = api.prepare_run_dir(loaded, out)
        listener, finish = make_listener(quiet=quiet, events_json=events_json)
        run_dir, evidence = api.run_plan(loaded, run_dir=run_dir, listeners=[listener],
                                         shard=shard_t, skip_runs=skip, fail_fast=fail_fast)
        finish(evidence)
        write_reports(run_dir, evidence)
        seal_run(run_dir)
        code = int(evidence["verdict"]["exit_code"])
        if not events_json:
            typer.echo(evidence["verdict"]["line"])
            if not quiet:
                typer.echo(f"evidence: {run_dir / 'evidence.json'}")
                typer.echo(f"report:   {run_dir / 'report.md'}")
        if sigs.exit_code is not None:
            _err(f"interrupted by {sigs.name}; partial evidence written to {run_dir} "
                 f"(continue with: parval run {plan} --resume {run_dir})")
            code = sigs.exit_code
    raise typer.Exit(code)


def _shard_of(run_dir: Path) -> tuple[int, int] | None:
    from parval.evidence import read_events

    for e in read_events(run_dir / "events.jsonl"):
        if e.get("kind") == "campaign_start" and e.get("shard"):
            return int(e["shard"][0]), int(e["shard"][1])
    return None


@app.command()
def validate(
    plan: Annotated[Path, typer.Argument(help="The YAML run plan.")],
) -> None:
    """Check a plan against the schema and named files; print the schedule it would run.

    Example: parval validate plans/demo.yaml
    """
    from parval.plan import load_plan
    from parval.schedule import describe_schedule

    loaded = load_plan(plan)
    typer.echo(describe_schedule(loaded))


@app.command()
def report(
    runs: Annotated[list[Path] | None, typer.Argument(
        help="Run directories. Several runs of the same model (shards, counts split over boxes) "
             "are merged into one verdict.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="md (PR comment), json (the evidence "
                                     "record) or junit (one test case per assertion).")] = "md",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to FILE instead of stdout.")] = None,
    catalogue: Annotated[Path | None, typer.Option("--catalogue", help="Summarise every run under DIR "
                                                   "(each directory holding an evidence.json).")] = None,
    redact_paths: Annotated[bool, typer.Option("--redact-paths", help="Replace absolute paths with hashes.")] = False,
    rejudge: Annotated[bool, typer.Option("--rejudge", help="Judge the recorded events again first.")] = False,
) -> None:
    """Render evidence as markdown (PR comment), JSON or JUnit XML; merge runs; catalogue runs.

    Merging refuses (exit 2) runs whose manifests disagree on the executables, model files, fixtures, model id, backend or provenance (local/CI), or whose plans disagree on what changes outputs (model options, quantization, requests, volatile fields, tolerance, threads), and names the field. The exit code is the verdict's: 0 admitted, 1 a required assertion FAILED (or the run directory was modified after judging), 3 evidence incomplete. With --catalogue: 0 every run admitted, 1 any run failed, 3 otherwise.

    Example: parval report runs/demo --format md --output report.md

    Example: parval report runs/shard1 runs/shard2 --format junit -o parval.xml

    Example: parval report --catalogue runs/
    """
    from parval.report.write import FORMATS, render_report

    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: use md, json or junit")
    text, code = render_report(runs or [], fmt=fmt, catalogue=catalogue, redact=redact_paths,
                               rejudge=rejudge, output=output)
    if output is not None:
        from parval.evidence import atomic_write

        atomic_write(output, text)
    else:
        typer.echo(text, nl=not text.endswith("\n"))
    raise typer.Exit(code)


def _schema_names() -> list[str]:
    from importlib import resources

    files = resources.files("parval.schemas").iterdir()
    return sorted(f.name.removesuffix(".schema.json") for f in files if f.name.endswith(".schema.json"))


@app.command("schema")
def schema_cmd(
    which: Annotated[str, typer.Argument(help="plan, evidence, or another schema parval ships "
                                         "(framework, protected, ctest).")],
) -> None:
    """Print one of parval's JSON Schemas (plan: the run plan; evidence: evidence.json).

    Example: parval schema plan > plan.schema.json

    Example: parval schema evidence
    """
    from parval.schemas_io import load_schema

    names = _schema_names()
    if which not in names:
        raise UsageError(f"no schema named {which!r}; use one of: {', '.join(names)}")
    typer.echo(json.dumps(load_schema(which), indent=2))


def _register_optional() -> None:
    import importlib

    from parval.protected import verify_protected_command

    app.command("verify-protected")(verify_protected_command)
    # Commands that live in their own modules: (command name, module, function).
    for name, module, func in (
        ("framework", "parval.framework.command", "framework_command"),
        ("verify", "parval.verify_cmd", "verify_command"),
        ("init", "parval.init_cmd", "init_command"),
        ("bench", "parval.bench", "bench_command"),
        ("import", "parval.report.history", "import_command"),
    ):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise
            continue
        app.command(name)(getattr(mod, func))


_register_optional()


def main(argv: list[str] | None = None) -> Any:
    """Console entry point: ParvalError → message + its exit code, bugs → exit 4."""
    try:
        return app(args=argv, standalone_mode=True)
    except ParvalError as exc:
        _err(str(exc))
        if isinstance(exc, RunDirError | UsageError):
            sys.exit(exc.exit_code or EXIT_USAGE)
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # a bug in parval: say so, keep the traceback short
        import traceback

        traceback.print_exc()
        _err(f"internal error: {type(exc).__name__}: {exc} (please report this)")
        sys.exit(EXIT_INTERNAL)


if __name__ == "__main__":
    main()
