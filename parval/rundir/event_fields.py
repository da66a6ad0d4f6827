"""The fields each event kind carries, as parval checks them: derived from the kind's
TypedDict (parval/rundir/event_types.py, the one declaration), enforced where events are
written (`EventLog.write`) and where they are judged (the gates' record loader, the
framework's `--rejudge`), so that a judge never meets an event without a field it reads;
schemas/events.schema.json is generated from the same table.

Each kind has one shape, or two where a probe records that it was skipped (the TypedDict
that requires `skipped`: only its fields are required then). Types are checked where
cheap: a field declared `float` must be an int or float (not a bool), `str` a str, and so
on; `X | None` marks a field that must be present but may be null.

Events formats (`EVENTS_FORMAT`, named on the first event of a log: see events.py): in
format 1 only the kinds the model gates read were declared (`Format1Event`), so a
format-1 log is checked on read for those kinds only (`Shape.since_format`); every kind is
checked in format 2 logs. Fields added after runs were recorded are upgraded on read in
format-1 logs (`UPGRADES`, from the fields annotated `Upgrade`): an older event gets a
value that says it is older, never one that could make a verdict PASS."""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, NotRequired, Required, Union, get_args, get_origin
from typing import is_typeddict as _is_typeddict

from parval.errors import RunDirError
from parval.jsontypes import JsonObject, JsonValue
from parval.rundir.event_types import Format1Event, Format2Event, NonEmpty, Upgrade

# The events format this parval writes (and the newest it reads): 1 = kinds the model gates
# read declared, no marker; 2 = every kind declared, marked on a log's first event.
EVENTS_FORMAT: Final = 2
# The field of a log's first event that names its events format (absent: format 1).
FORMAT_FIELD: Final = "events_format"


@dataclass(frozen=True)
class FieldType:
    name: str
    types: tuple[type, ...]
    nullable: bool = False

    def accepts(self, value: object) -> bool:
        if value is None:
            return self.nullable
        if isinstance(value, bool) and not {bool, object} & set(self.types):
            return False
        return isinstance(value, self.types)

    @property
    def or_null(self) -> FieldType:
        return FieldType(f"{self.name} or null", self.types, True)

    def json_schema(self) -> JsonObject:
        """The JSON Schema of a value of this type (for schemas/events.schema.json)."""
        if object in self.types:
            return {}
        names: list[JsonValue] = [_JSON_TYPES[t] for t in self.types if not (t is int and float in self.types)]
        if self.nullable:
            names.append("null")
        return {"type": names[0] if len(names) == 1 else names}


_JSON_TYPES: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    dict: "object",
    list: "array",
}


TEXT = FieldType("a string", (str,))
INT = FieldType("an integer", (int,))
NUMBER = FieldType("a number", (int, float))
FLAG = FieldType("a boolean", (bool,))
OBJECT = FieldType("an object", (dict,))
LIST = FieldType("a list", (list,))
ANY = FieldType("any value", (object,), True)


@dataclass(frozen=True)
class OneOf(FieldType):
    """A string from a fixed set."""

    values: tuple[str, ...] = ()

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and value in self.values

    def json_schema(self) -> JsonObject:
        return {"enum": list(self.values)}


@dataclass(frozen=True)
class Name(FieldType):
    """A non-empty string: a phase, a run or a request name that decides how an event is
    judged (an empty one is no name)."""

    def accepts(self, value: object) -> bool:
        return (value is None and self.nullable) or (isinstance(value, str) and value != "")

    def json_schema(self) -> JsonObject:
        return {"type": "string", "minLength": 1}


NAME = Name("a non-empty string", (str,))

WAVE_MODE = OneOf("together, ordered, reversed or serial", (str,), values=("together", "ordered", "reversed", "serial"))

Fields = Mapping[str, FieldType]


@dataclass(frozen=True)
class Shape:
    fields: Fields
    skipped: Fields | None = None  # the shape of a probe that recorded `skipped`
    # The first events format that declares this kind: older logs are not checked for it
    # on read (they were written before it was declared).
    since_format: int = 1

    def required(self, event: Mapping[str, object]) -> Fields:
        return self.skipped if self.skipped is not None and "skipped" in event else self.fields


def field_type(hint: object) -> FieldType:
    """The check of a field annotated `hint` in an event's TypedDict."""
    marks: tuple[object, ...] = ()
    if get_origin(hint) is Annotated:
        marks = hint.__metadata__  # type: ignore[attr-defined]
        hint = get_args(hint)[0]
    if hint == JsonValue:
        return ANY
    if get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint):
        rest = [a for a in get_args(hint) if a is not type(None)]
        assert len(rest) == 1, f"{hint}: one type or null"
        return field_type(Annotated[(rest[0], *marks)] if marks else rest[0]).or_null
    if get_origin(hint) is Literal:
        values = tuple(str(v) for v in get_args(hint))
        return OneOf(f"{', '.join(values[:-1])} or {values[-1]}", (str,), values=values)
    if any(isinstance(m, NonEmpty) for m in marks):
        assert hint is str, f"{hint}: only a string is non-empty"
        return NAME
    if _is_typeddict(hint) or get_origin(hint) is dict:
        return OBJECT
    if get_origin(hint) is list:
        return LIST
    scalars: dict[object, FieldType] = {str: TEXT, int: INT, float: NUMBER, bool: FLAG}
    scalar = scalars.get(hint)
    assert scalar is not None, f"{hint}: no check for this type"
    return scalar


def _hints(cls: type) -> dict[str, object]:
    """A TypedDict's annotations (its bases' first) as written, without `NotRequired`
    (event_types.py evaluates them; get_type_hints would expand JsonValue)."""
    hints: dict[str, object] = cls.__annotations__
    return {name: get_args(h)[0] if get_origin(h) in (NotRequired, Required) else h for name, h in hints.items()}


def _required(cls: type) -> Fields:
    """The fields a TypedDict requires (but `kind`), in the order it declares them."""
    required: frozenset[str] = cls.__required_keys__  # type: ignore[attr-defined]
    return {name: field_type(h) for name, h in _hints(cls).items() if name in required and name != "kind"}


def _kinds(cls: type) -> tuple[str, ...]:
    return tuple(str(k) for k in get_args(_hints(cls)["kind"]))


def _upgrades(cls: type) -> JsonObject:
    """The fields annotated `Upgrade`, with the value an older event lacking them gets."""
    out: JsonObject = {}
    for name, hint in _hints(cls).items():
        for mark in hint.__metadata__ if get_origin(hint) is Annotated else ():  # type: ignore[attr-defined]
            if isinstance(mark, Upgrade):
                out[name] = mark.value
    return out


def shapes_of(types: tuple[type, ...], since_format: int) -> tuple[dict[str, Shape], dict[str, JsonObject]]:
    """kind -> its shape, and kind -> the fields an older event of it gets on read, for the
    event TypedDicts `types` (a kind's skipped shape after its own)."""
    table: dict[str, Shape] = {}
    upgrades: dict[str, JsonObject] = {}
    for cls in types:
        fields = _required(cls)
        for kind in _kinds(cls):
            if "skipped" in fields:  # the shape of a probe that recorded why it did not run
                assert kind in table, f"{kind}: declare its shape before its skipped shape"
                table[kind] = Shape(table[kind].fields, fields, table[kind].since_format)
                continue
            assert kind not in table, f"{kind}: declared twice"
            table[kind] = Shape(fields, since_format=since_format)
            if extra := _upgrades(cls):
                upgrades[kind] = extra
    return table, upgrades


def _table() -> tuple[dict[str, Shape], dict[str, JsonObject]]:
    table, upgrades = shapes_of(get_args(Format1Event), 1)
    later, later_upgrades = shapes_of(get_args(Format2Event), 2)
    assert not set(table) & set(later), "a kind declared in both formats"
    # only format-1 logs are upgraded: a kind declared since format 2 has every field
    assert not later_upgrades, f"upgrades of kinds declared since format 2: {later_upgrades}"
    return {**table, **later}, upgrades


# kind -> its shape, and kind -> the fields an older (format-1) event of it gets on read.
EVENT_FIELDS, UPGRADES = _table()


class EventFieldError(RunDirError):
    """An event lacks a field its kind declares, or carries it with the wrong type."""


class NewerEventsFormat(RunDirError):
    """A log written in an events format newer than this parval reads."""


def events_format(first: Mapping[str, object] | None, where: str = "events.jsonl") -> int:
    """The events format of a log, named on its first event (no marker: format 1, the runs
    recorded before formats were marked). A newer format than this parval reads, or a
    marker that is not a format number, raises RunDirError naming `where`."""
    if first is None or FORMAT_FIELD not in first:
        return 1
    value = first[FORMAT_FIELD]
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise RunDirError(
            f"{where}: its first event names events format {value!r}, which is not a format number",
            hint="the run directory was edited: `parval verify RUN` names changed files",
        )
    if value > EVENTS_FORMAT:
        raise NewerEventsFormat(
            f"{where}: written in events format {value}, newer than this parval reads "
            f"(format {EVENTS_FORMAT} at most): upgrade parval to read it",
            hint="upgrade parval to the version that wrote the run (or newer)",
        )
    return value


def problems(kind: str, event: Mapping[str, object], log_format: int = EVENTS_FORMAT) -> list[str]:
    """What is wrong with one event of `kind` in a log of `log_format` (empty when it has
    every field its kind declares, or its kind is not declared in that format)."""
    shape = EVENT_FIELDS.get(kind)
    if shape is None or shape.since_format > log_format:
        return []
    out = []
    for name, ftype in shape.required(event).items():
        if name not in event:
            out.append(f"a `{kind}` event lacks `{name}`")
        elif not ftype.accepts(event[name]):
            out.append(f"a `{kind}` event has `{name}` = {event[name]!r}, which is not {ftype.name}")
    return out


def check_written(kind: str, fields: Mapping[str, object]) -> None:
    """Refuse to write an event without a declared field (a bug in parval's runner)."""
    found = problems(kind, fields)
    if found:
        raise EventFieldError(
            f"refusing to record it: {'; '.join(found)}", hint="this is a bug in parval: please report it"
        )


def upgraded(event: JsonObject) -> JsonObject:
    """The event with fields added since it was recorded filled in (see UPGRADES)."""
    extra = UPGRADES.get(str(event.get("kind")))
    if not extra or all(k in event for k in extra):
        return event
    return {**{k: v for k, v in extra.items() if k not in event}, **event}


def check_read(events: list[JsonObject], where: str = "events.jsonl") -> list[dict[str, Any]]:
    """Every event checked against the table (upgraded first in a format-1 log); the first
    bad one raises EventFieldError naming its line, kind and field."""
    log_format = events_format(events[0] if events else None, where)
    out = []
    for i, e in enumerate(events):
        if log_format == 1:
            e = upgraded(e)
        found = problems(str(e.get("kind")), e, log_format)
        if found:
            seq = e.get("seq", i)
            raise EventFieldError(
                f"{where}: event {seq}: {'; '.join(found)}: the run directory was not written by this "
                "parval's runner or was edited",
                hint="re-run the campaign, or restore the run directory (`parval verify RUN` names changed files)",
            )
        out.append(e)
    return out
