"""`parval verify-protected`: the X4 check as a command with exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from parval.errors import EXIT_ADMITTED, EXIT_FAILED, InputFileError, ParvalError


def verify_protected_command(
    upstream: Annotated[str, typer.Option("--upstream", help="Upstream commit (sha, tag or branch) to compare with.")],
    repo: Annotated[Path, typer.Option("--repo", help="Candidate checkout.")] = Path("."),
    config: Annotated[
        Path | None,
        typer.Option("--config", help="YAML/JSON overriding protected_paths, legacy_runtime, allowed_block(_file)."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    output: Annotated[Path | None, typer.Option("--output", help="Also write the JSON result to this file.")] = None,
) -> None:
    """Check protected sources against upstream (assertion X4).

    Protected files and directories must equal the upstream commit in the
    working tree (uncommitted and untracked files included).
    The legacy runtime may differ only by one registration-rejection block.
    Exit 0 pass, 1 fail, 2 usage or git error.

    Example:
      parval verify-protected --repo ../audio.cpp --upstream 612c5e9f --json
    """
    from parval.protected.check import verify_protected
    from parval.protected.config import ProtectedConfig
    from parval.rundir.files import write_json
    from parval.status import Status

    try:
        cfg = ProtectedConfig.load(config) if config is not None else None
        result = verify_protected(repo, upstream, cfg)
        if output is not None:
            try:
                write_json(output, result.to_json())
            except OSError as exc:
                raise InputFileError(f"cannot write {output}: {exc}") from exc
    except ParvalError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(exc.exit_code) from None
    if json_out:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        typer.echo(result.to_text())
    raise typer.Exit(EXIT_ADMITTED if result.status is Status.PASS else EXIT_FAILED)
