"""Every event kind parval writes is declared in the table (parval/rundir/event_fields.py):
the source is scanned for the kinds it writes, so a new kind cannot be written without a
declaration of its fields (and so without a place in schemas/events.schema.json)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from parval.rundir.event_fields import EVENT_FIELDS

PARVAL = Path(__file__).resolve().parents[2] / "parval"
# The stand-in server is not parval's evidence writer.
SKIPPED = PARVAL / "standin"
# Functions that append an event of a kind they are given: their callers' literal kinds are
# found through calls of the same method name (Start.event, TimedEventLog.append).
KIND_FORWARDERS = {("runners/start.py", "event"), ("bench/timing.py", "append")}
WRITE_METHODS = {"append", "event"}
# Kinds written from a formatted string: the pattern (as in the source) and every kind it
# makes (parval/runners/recovery.py: unload_in_flight(..., "targeted" | "all")).
FORMATTED_KINDS = {"m4_{which}_unload": ("m4_targeted_unload", "m4_all_unload")}


@cache
def _parsed() -> tuple[tuple[str, ast.Module], ...]:
    return tuple(
        (path.relative_to(PARVAL).as_posix(), ast.parse(path.read_text("utf-8"), str(path)))
        for path in sorted(PARVAL.rglob("*.py"))
        if not path.is_relative_to(SKIPPED)
    )


def _sources() -> Iterator[tuple[str, ast.Module]]:
    yield from _parsed()


def _is_event_write(call: ast.Call) -> bool:
    """`log.append(kind, field=...)` or `start.event(kind, ...)`: a list's append takes one
    argument and no keywords, so an `append` with keywords writes an event."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in WRITE_METHODS and call.args):
        return False
    return call.func.attr == "event" or bool(call.keywords) or len(call.args) > 1


def written_kinds() -> dict[str, list[str]]:
    """Kind -> where it is written (file:line), for every literal kind in the source."""
    out: dict[str, list[str]] = {}
    for rel, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _is_event_write(node):
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    out.setdefault(first.value, []).append(f"{rel}:{node.lineno}")
                elif isinstance(first, ast.JoinedStr):
                    pattern = _pattern(first)
                    assert pattern in FORMATTED_KINDS, f"{rel}:{node.lineno}: kind {pattern!r} not in FORMATTED_KINDS"
                    for kind in FORMATTED_KINDS[pattern]:
                        out.setdefault(kind, []).append(f"{rel}:{node.lineno}")
    return out


def _pattern(text: ast.JoinedStr) -> str:
    """An f-string as written: `f"m4_{which}_unload"` -> "m4_{which}_unload"."""
    return "".join(
        str(part.value) if isinstance(part, ast.Constant) else "{" + ast.unparse(part.value) + "}"
        for part in text.values
        if isinstance(part, ast.Constant | ast.FormattedValue)
    )


def forwarded_kinds() -> list[tuple[str, str]]:
    """(file, function) of every event write whose kind is not a literal."""
    out = []
    for rel, tree in _sources():
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                kind = node.args[0] if isinstance(node, ast.Call) and _is_event_write(node) else None
                if kind is not None and not isinstance(kind, ast.Constant | ast.JoinedStr):
                    out.append((rel, fn.name))
    return out


def test_every_kind_parval_writes_is_declared() -> None:
    written = written_kinds()
    assert len(written) >= 60, sorted(written)  # the scan finds the writers (66 kinds today)
    missing = {kind: where for kind, where in written.items() if kind not in EVENT_FIELDS}
    assert not missing, (
        f"event kinds written but not declared in parval/rundir/event_fields.py: {missing}; declare the "
        "fields every writer of the kind passes, then `parval schema events > schemas/events.schema.json`"
    )


def test_every_declared_kind_is_written() -> None:
    """No stale declaration: a kind parval no longer writes leaves the table."""
    stale = sorted(set(EVENT_FIELDS) - set(written_kinds()))
    assert not stale, f"declared in the table but written nowhere in parval/: {stale}"


def test_a_kind_given_by_a_variable_is_written_only_through_a_known_forwarder() -> None:
    """Writes whose kind is not a literal are the forwarders above, whose callers' kinds the
    scan sees; a new forwarder must be added there (and its callers' kinds declared)."""
    unknown = sorted(set(forwarded_kinds()) - KIND_FORWARDERS)
    assert not unknown, f"event writes with a non-literal kind, not followed by the scan: {unknown}"
    assert set(forwarded_kinds()) == KIND_FORWARDERS, "a forwarder listed here no longer exists"
