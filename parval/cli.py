"""parval command line. Thin: parses arguments, calls parval.api, maps errors to exit codes.

Exit codes: 0 admitted · 1 a required assertion FAILED · 2 usage or plan error ·
3 evidence incomplete (PENDING/BLOCKED or interrupted) · 4 internal error ·
130/143/129 interrupted by SIGINT/SIGTERM/SIGHUP (partial evidence written).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from parval import __version__
from parval.errors import EXIT_INTERNAL, EXIT_USAGE, ParvalError, RunDirError, UsageError

EXIT_HELP = (
    "Exit codes: 0 admitted (every required assertion PASS) · 1 a required assertion FAILED · "
    "2 usage or plan error · 3 evidence incomplete (PENDING/BLOCKED, or interrupted) · "
    "4 internal error · 130/143/129 interrupted by SIGINT/SIGTERM/SIGHUP."
)

app = typer.Typer(
    name="parval",
    help="Collect and judge the evidence needed to admit an audio.cpp model "
    "at N parallel slots.\n\n" + EXIT_HELP + "\n\nExample: parval run plans/demo.yaml --out runs/demo "
    "&& parval report runs/demo -o report.md" + "\n\nEvery command has --help with an example; "
    "`parval --install-completion` adds shell completion.",
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
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """parval: evidence orchestrator for audiocpp_server parallel-slot admission."""


def _err(msg: str) -> None:
    typer.echo(f"parval: error: {msg}", err=True)


def _register() -> None:
    from parval.commands import (
        bench,
        catalogue,
        explain,
        framework,
        import_history,
        init,
        report,
        run,
        schema,
        validate,
        verify,
        verify_protected,
    )

    app.command("run")(run.run_command)
    app.command("validate")(validate.validate_command)
    app.command("report")(report.report_command)
    app.command("schema")(schema.schema_command)
    app.command("explain")(explain.explain_command)
    app.command("framework")(framework.framework_command)
    app.command("verify")(verify.verify_command)
    app.command("verify-protected")(verify_protected.verify_protected_command)
    app.command("init")(init.init_command)
    app.command("bench")(bench.bench_command)
    app.command("import")(import_history.import_command)
    app.add_typer(catalogue.app, name="catalogue")


_register()


def main(argv: list[str] | None = None) -> object:
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
