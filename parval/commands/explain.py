"""`parval explain ID`: what the procedure asks of one assertion, which evidence parval
records for it, which function judges it and how to reproduce it (generated from the
registry, so it cannot drift)."""

from __future__ import annotations

import inspect
import textwrap
from typing import Annotated

import typer

from parval.errors import UsageError
from parval.procedure.entry import SCOPES, Entry

WIDTH = 100


def _first_line(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line."""
    text = inspect.cleandoc(doc or "").split("\n\n", 1)[0]
    return " ".join(text.split())


def _wrap(text: str, indent: str = "", first: str | None = None) -> list[str]:
    """`text` wrapped to WIDTH columns; `first` prefixes the first line (default `indent`)."""
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=False,
    ) or [indent.rstrip()]


def _bullets(items: tuple[str, ...] | list[str]) -> list[str]:
    return [line for x in items for line in _wrap(x, "    ", "  - ")]


def describe(e: Entry) -> str:
    fn = e.judge_function()
    lines = [f"{e.id} (group {e.group})"]
    lines += _wrap(f"Judged {SCOPES[e.scope]}.")
    lines.append("")
    lines += _wrap(f"The procedure asks: {e.asks}")
    lines += ["", f"Judged by: {e.judge}"]
    doc = _first_line(fn.__doc__)
    if doc:
        lines += _wrap(doc, "  ")
    if e.parts:
        from parval.framework.judges import JUDGES

        lines.append("  combining the sub-checks of these observation judges:")
        for key in e.parts:
            lines += _wrap(f"{key}: {_first_line(JUDGES[key].__doc__)}", "      ", "    ")
    lines += ["", "Evidence parval records for it:"]
    lines += _bullets(e.evidence)
    if e.group.startswith("F"):
        from parval.framework import contract

        cells = contract.coverage_json(e.id).get("cells") or []
        if cells:
            lines += ["", "Behaviour-contract cells its probes reach (parval's label / the contract's):"]
            lines += _bullets([f"{c['id']}: {c.get('parval_label', '?')} / {c.get('label', '?')}" for c in cells])
    if e.faults:
        lines += [""] + _wrap("Stand-in faults that make it FAIL (--fault NAME): " + ", ".join(e.faults), "  ", "")
    lines += [""] + _wrap(f"Reproduce: {e.reproduce}", "  ", "")
    if e.notes:
        lines += ["", "Notes:"] + _bullets(e.notes)
    return "\n".join(lines)


def explain_command(
    assertion: Annotated[str, typer.Argument(help="An assertion ID, e.g. M2.observed_active, F1.fifo, Q5.")],
) -> None:
    """Explain one assertion ID: what it asks, its evidence, its judge, how to reproduce it.

    Prints the procedure's text, the scope it is judged in, the evidence parval records for
    it, the function that judges it (from the registry), the stand-in faults that make it
    fail, and the commands that reproduce it.

    Example: parval explain M2.observed_active
    """
    from parval.registry import entry

    try:
        found = entry(assertion)
    except KeyError as exc:
        raise UsageError(
            str(exc.args[0]), hint="IDs look like X1, M2.exact, F1.fifo, Q5 (groups X1-X4, M1-M6, F1-F6, Q1-Q6)"
        ) from None
    typer.echo(describe(found))
