"""`parval explain ID`: what the procedure asks of one assertion, which evidence parval
records for it, which function judges it and how to reproduce it (from the registry)."""

from __future__ import annotations

from typing import Annotated

import typer

from parval.errors import UsageError


def explain_command(
    assertion: Annotated[str, typer.Argument(help="An assertion ID, e.g. M2.observed_active, F1.fifo, Q5.")],
) -> None:
    """Explain one assertion ID: what it asks, its evidence, its judge, how to reproduce it.

    Prints the procedure's text, the scope it is judged in, the evidence parval records for
    it, the function that judges it (from the registry), the stand-in faults that make it
    fail, and the commands that reproduce it.

    Example: parval explain M2.observed_active
    """
    from parval.procedure.explain import describe
    from parval.procedure.registry import entry

    try:
        found = entry(assertion)
    except KeyError as exc:
        raise UsageError(
            str(exc.args[0]),
            hint="IDs look like X1, M2.exact, F1.fifo, Q5 (groups X1-X4, M1-M6, F1-F6, Q1-Q6); the README lists them",
        ) from None
    typer.echo(describe(found))
