"""The command reference (docs/commands.md), generated from the Typer app so that it cannot
drift from it: every command and subcommand, its usage, its help text and its arguments and
options. tests/ux/test_docs.py checks the checked-in page equals this; regenerate it with

    .venv/bin/python -m tests.ux.command_reference > docs/commands.md
"""

from __future__ import annotations

import html
import inspect
from typing import Any

import typer

from parval.cli import app

REGENERATE = ".venv/bin/python -m tests.ux.command_reference > docs/commands.md"


def _cell(text: str) -> str:
    """One markdown table cell: one line, no pipe or tag breaking the table."""
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")


def _param_row(param: Any, ctx: Any) -> str:
    """One argument or option (Typer's own parameter classes: duck-typed, they are not click's)."""
    help_text = getattr(param, "help", None) or ""
    kind = param.display_type(ctx).strip("<>")
    if param.param_type_name == "option":
        names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
        if param.multiple:
            kind += ", repeatable"
        default = None if param.is_flag else param.default
    else:
        names = f"`{param.name.upper()}`"
        kind = "argument " + kind
        default = None
    if default not in (None, (), []) and not callable(default):
        help_text += f" (default: {default})"
    return f"| {names} | {_cell(kind)} | {_cell(help_text)} |"


def _section(cmd: Any, path: list[str], parent: Any) -> list[str]:
    ctx = cmd.context_class(cmd, info_name=path[-1], parent=parent)
    title = " ".join(path)
    out = [f"## {title}", ""]
    usage = " ".join([title, *cmd.collect_usage_pieces(ctx)])
    body = inspect.cleandoc(cmd.help or "").replace("\b\n", "")
    out += ["```text", f"Usage: {usage}", "", body, "```", ""]
    params = [p for p in cmd.get_params(ctx) if p.name != "help" and not getattr(p, "hidden", False)]
    if params:
        out += ["| argument or option | kind | what it does |", "|---|---|---|"]
        out += [_param_row(p, ctx) for p in params]
        out.append("")
    for name in getattr(cmd, "commands", {}):
        sub = cmd.get_command(ctx, name)
        if sub is not None and not sub.hidden:
            out += _section(sub, [*path, name], ctx)
    return out


def commands() -> list[str]:
    """Every command's full name, `parval run` ... `parval catalogue slurm`, in the page's order."""
    return [line[3:] for line in render().splitlines() if line.startswith("## parval")]


def render() -> str:
    group = typer.main.get_command(app)
    head = [
        "# Commands",
        "",
        "Every parval command with its help, generated from the app itself",
        f"(`{REGENERATE}`; `tests/ux/test_docs.py` checks it is current).",
        "The same text is what `parval COMMAND --help` prints.",
        "",
    ]
    return "\n".join(head + _section(group, ["parval"], None)).rstrip("\n") + "\n"


if __name__ == "__main__":
    print(render(), end="")
