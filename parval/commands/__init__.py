"""The typer commands, one module per command (parval/cli.py builds the app from them).

May import: every package below it (only cli sits above)."""
