"""Each event kind is declared once, as its TypedDict (parval/rundir/event_types.py): the
fields parval checks on write and on read (parval/rundir/event_fields.py), the upgrades of
older logs and schemas/events.schema.json all follow from it, so a field added to a type
is checked, upgraded and published without a second declaration; and parval writes every
event through its type (`EventLog.write`)."""

from __future__ import annotations

import json
from pathlib import Path
from types import UnionType
from typing import Annotated, Literal, NotRequired, TypedDict, Union, get_args, get_origin, is_typeddict

import jsonschema
import pytest

from parval.jsontypes import JsonObject, JsonValue
from parval.rundir.event_fields import (
    ANY,
    EVENT_FIELDS,
    FLAG,
    INT,
    LIST,
    NAME,
    NUMBER,
    OBJECT,
    TEXT,
    UPGRADES,
    EventFieldError,
    OneOf,
    field_type,
    shapes_of,
)
from parval.rundir.event_types import Event, Format1Event, Format2Event, NonEmpty, Upgrade, WaveStatus
from parval.rundir.events import EventLog

SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "events.schema.json"
TYPES: tuple[type, ...] = get_args(Format1Event) + get_args(Format2Event)


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        (str, TEXT),
        (int, INT),
        (float, NUMBER),
        (bool, FLAG),
        (JsonObject, OBJECT),
        (WaveStatus, OBJECT),
        (list[str], LIST),
        (list[JsonValue], LIST),
        (JsonValue, ANY),
        (Annotated[str, NonEmpty()], NAME),
        (int | None, INT.or_null),
        (WaveStatus | None, OBJECT.or_null),
        (Annotated[bool, Upgrade(False)], FLAG),
    ],
)
def test_a_field_is_checked_by_its_annotated_type(hint: object, expected: object) -> None:
    assert field_type(hint) == expected


def test_a_literal_is_one_of_its_strings() -> None:
    checked = field_type(Literal["together", "ordered", "serial"])
    assert isinstance(checked, OneOf)
    assert checked.values == ("together", "ordered", "serial")
    assert checked.name == "together, ordered or serial"
    assert not checked.accepts("reversed") and checked.accepts("serial")


def test_a_type_without_a_check_is_refused() -> None:
    with pytest.raises(AssertionError, match="no check"):
        field_type(bytes)


# Built from evaluated annotations (as event_types.py declares its types): this module
# postpones its own.
_Probe = TypedDict(  # noqa: UP013 - the functional form evaluates its annotations
    "_Probe",
    {
        "kind": Literal["some_probe", "other_probe"],
        "run": Annotated[str, NonEmpty()],
        "took_s": float,
        "seen": Annotated[bool, Upgrade(False)],
        "note": NotRequired[str],
    },
)
_Skipped = TypedDict("_Skipped", {"kind": Literal["some_probe"], "run": str, "skipped": str})  # noqa: UP013


def test_the_shapes_of_a_type_are_its_required_keys_for_each_of_its_kinds() -> None:
    """A field added to a type is checked for every kind of it: the table is not written
    anywhere else. Optional keys are not checked; `Upgrade` names an older event's value."""
    shapes, upgrades = shapes_of((_Probe, _Skipped), since_format=1)
    assert set(shapes) == {"some_probe", "other_probe"}
    probe = shapes["other_probe"]
    assert dict(probe.fields) == {"run": NAME, "took_s": NUMBER, "seen": FLAG}
    assert probe.skipped is None and probe.since_format == 1
    # the type that requires `skipped` is the kind's other shape
    assert shapes["some_probe"].skipped == {"run": TEXT, "skipped": TEXT}
    assert upgrades == {"some_probe": {"seen": False}, "other_probe": {"seen": False}}


def test_a_kind_declared_twice_is_refused() -> None:
    with pytest.raises(AssertionError, match="declared twice"):
        shapes_of((_Probe, _Probe), since_format=1)


def test_every_kind_has_one_type_and_the_format_it_was_declared_in() -> None:
    kinds = [
        k for cls in TYPES if "skipped" not in cls.__required_keys__ for k in get_args(cls.__annotations__["kind"])
    ]
    assert len(kinds) == len(set(kinds)) == len(EVENT_FIELDS)
    assert EVENT_FIELDS["request"].since_format == 1 and EVENT_FIELDS["campaign_start"].since_format == 2
    assert EVENT_FIELDS["m4_load_failure"].skipped == {"run": TEXT, "skipped": TEXT}
    assert set(UPGRADES) == {"wave_timeout", "m4_targeted_unload", "m4_all_unload", "m4_unload_during_first_load"}


def test_a_nested_object_type_requires_no_key() -> None:
    """The check reads a nested object only as an object, and older runs may lack one of
    its keys: a TypedDict for one may not promise a key."""
    for cls in TYPES:
        for hint in cls.__annotations__.values():
            for inner in (hint, *get_args(hint), *(a for arg in get_args(hint) for a in get_args(arg))):
                if is_typeddict(inner):
                    assert not inner.__required_keys__, (cls, inner)


def example(hint: object) -> object:
    """A value of an annotated type: the first of a Literal, a non-null member of a union,
    an empty nested object (its keys are optional)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        return example(args[0])
    if hint == JsonValue:
        return None
    if origin is Literal:
        return args[0]
    if origin in (Union, UnionType):
        return example(next(a for a in args if a is not type(None)))
    if is_typeddict(hint) or origin is dict:
        return {}
    if origin is list:
        return []
    examples: dict[object, object] = {str: "text", int: 3, float: 1.5, bool: True}
    return examples[hint]


def test_one_event_of_every_type_is_written_through_it_and_validates(tmp_path: Path) -> None:
    """Each TypedDict, filled with a value of every required key's type, is an event the log
    writes (the check on write passes) and the events schema validates."""
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    built = 0
    try:
        for cls in TYPES:
            hints = cls.__annotations__
            for kind in get_args(hints["kind"]):
                values = {name: example(hints[name]) for name in cls.__required_keys__ - {"kind"}}
                event: Event = cls(kind=kind, **values)
                log.write(event)
                built += 1
    finally:
        log.close()
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text("utf-8")))
    lines = path.read_text("utf-8").splitlines()
    assert len(lines) == built > len(EVENT_FIELDS)
    for line in lines:
        errors = [e.message for e in validator.iter_errors(json.loads(line))]
        assert not errors, (line[:200], errors)


def test_the_check_on_write_stays(tmp_path: Path) -> None:
    """mypy checks every writer, but a value that arrives through `Any` is still refused."""
    log = EventLog(tmp_path / "events.jsonl")
    try:
        loose: dict[str, object] = {"kind": "unit_end", "unit": "count1-s0", "ok": None}
        with pytest.raises(EventFieldError, match="`ok`"):
            log.write(loose)  # type: ignore[arg-type]
    finally:
        log.close()
