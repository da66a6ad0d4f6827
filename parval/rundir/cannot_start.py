"""An executable that cannot start: its first start in a campaign exited by itself before
it was ready (a missing shared library, a bad build). That is the server's failure,
observed, and it will not start the next time either: the campaign records
`executable_cannot_start` and tries no other start of that executable (its units are
skipped, naming why). A first start that merely timed out (a busy machine) is not this.

For the candidate this is a FAIL (M2.starts at every count: a candidate that cannot start
cannot be admitted at any count); for the baseline nothing can be compared, so what needs
it stays unresolved. Either way the report's first line names the cause in plain words,
with the server's own last output right under it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

KIND = "executable_cannot_start"
# How many of the server's last output lines are kept (a few lines, not a dump).
LAST_LINES = 5
_QUOTE_CHARS = 240


def last_lines(text: str, n: int = LAST_LINES) -> list[str]:
    """The last `n` non-blank lines of `text`, each cut to a readable length."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    return [line if len(line) <= _QUOTE_CHARS else line[: _QUOTE_CHARS - 1] + "…" for line in lines[-n:]]


def quoted_line(lines: Sequence[str]) -> str | None:
    """The line that says why: the last one that speaks of an error, else the last one."""
    for line in reversed(lines):
        if "error" in line.lower() or "cannot" in line.lower():
            return line
    return lines[-1] if lines else None


def cause(event: Mapping[str, object]) -> str:
    """'the candidate executable exited with status 127 before it was ready: <its line>'."""
    lines = event.get("last_lines")
    quote = quoted_line([str(x) for x in lines]) if isinstance(lines, list) else None
    said = f": {quote}" if quote else " (it printed nothing)"
    return f"the {event.get('role')} executable exited with status {event.get('exit_code')} before it was ready{said}"


def cannot_start_events(events: Sequence[Mapping[str, object]]) -> dict[str, Mapping[str, object]]:
    """role -> its (first) executable_cannot_start event."""
    found: dict[str, Mapping[str, object]] = {}
    for e in events:
        if e.get("kind") == KIND:
            found.setdefault(str(e.get("role")), e)
    return found
