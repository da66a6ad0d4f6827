"""parval writes every event through its kind's TypedDict (`EventLog.write`), so mypy checks
each writer's fields against the one declaration (parval/rundir/event_types.py); the source
is scanned for the kinds it builds, so that no declared kind is stale and no event is
written around the types (`EventLog.append`, a kind and loose fields, is for tests and
replays of recorded events)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from parval.rundir.event_fields import EVENT_FIELDS

PARVAL = Path(__file__).resolve().parents[2] / "parval"
# The stand-in server is not parval's evidence writer.
SKIPPED = PARVAL / "standin"


@cache
def _parsed() -> tuple[tuple[str, ast.Module], ...]:
    return tuple(
        (path.relative_to(PARVAL).as_posix(), ast.parse(path.read_text("utf-8"), str(path)))
        for path in sorted(PARVAL.rglob("*.py"))
        if not path.is_relative_to(SKIPPED)
    )


def _calls() -> Iterator[tuple[str, ast.Call]]:
    for rel, tree in _parsed():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                yield rel, node


def _literals(node: ast.expr) -> list[str]:
    """The kinds a `kind=` value can be: a literal, or either side of a conditional."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _literals(node.body) + _literals(node.orelse)
    return []


def built_kinds() -> dict[str, list[str]]:
    """Kind -> where an event of it is built (file:line): `SomeEvent(kind="...", ...)`."""
    out: dict[str, list[str]] = {}
    for rel, call in _calls():
        name = call.func.id if isinstance(call.func, ast.Name) else None
        if name is None or not name.endswith("Event"):
            continue
        for keyword in call.keywords:
            if keyword.arg == "kind":
                for kind in _literals(keyword.value):
                    out.setdefault(kind, []).append(f"{rel}:{call.lineno}")
    return out


def untyped_writes() -> list[str]:
    """`log.append("kind", field=...)`: an event written around its type (a list's append
    takes one argument and no keywords)."""
    return [
        f"{rel}:{call.lineno}"
        for rel, call in _calls()
        if isinstance(call.func, ast.Attribute)
        and call.func.attr == "append"
        and call.args
        and (call.keywords or len(call.args) > 1)
    ]


def test_parval_builds_an_event_of_every_declared_kind() -> None:
    """No stale declaration: a kind parval no longer writes leaves event_types.py."""
    built = built_kinds()
    assert len(built) >= 60, sorted(built)  # the scan finds the writers (67 kinds today)
    stale = sorted(set(EVENT_FIELDS) - set(built))
    assert not stale, f"declared in parval/rundir/event_types.py but built nowhere in parval/: {stale}"
    unknown = sorted(set(built) - set(EVENT_FIELDS))
    assert not unknown, f"built but not declared: {unknown}"


def test_no_event_is_written_around_its_type() -> None:
    found = untyped_writes()
    assert not found, f"events written as a kind and loose fields (use EventLog.write(SomeEvent(...))): {found}"
