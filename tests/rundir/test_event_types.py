"""The TypedDicts the gates read events through (parval/rundir/event_types.py) say what the
table of parval/rundir/event_fields.py declares: every kind the model gates read has one,
its required keys are the kind's fields (and `kind`), and each field's type is the one the
table checks on read."""

from __future__ import annotations

from typing import Literal, get_args, get_origin, is_typeddict

import pytest

from parval.jsontypes import JsonObject, JsonValue
from parval.rundir.event_fields import ANY, EVENT_FIELDS, FLAG, INT, LIST, NUMBER, OBJECT, TEXT, FieldType, OneOf
from parval.rundir.event_types import EVENT_TYPES

# A table type's Python type, by the value types it accepts.
PYTHON_TYPE: dict[tuple[type, ...], object] = {
    TEXT.types: str,
    INT.types: int,
    NUMBER.types: float,
    FLAG.types: bool,
    OBJECT.types: JsonObject,
    LIST.types: list[JsonValue],
    ANY.types: JsonValue,
}


def expected(ftype: FieldType) -> object:
    if isinstance(ftype, OneOf):
        return Literal[ftype.values]
    base = PYTHON_TYPE[ftype.types]
    return base | None if ftype.nullable and ftype.types != ANY.types else base


def nested(hint: object, nullable: bool) -> bool:
    """A TypedDict (or None where the table allows null) for an object field."""
    if nullable:
        args = set(get_args(hint))
        return type(None) in args and len(args) == 2 and all(is_typeddict(a) for a in args - {type(None)})
    return is_typeddict(hint)


def shapes(kind: str) -> list[dict[str, FieldType]]:
    shape = EVENT_FIELDS[kind]
    return [dict(shape.fields)] + ([dict(shape.skipped)] if shape.skipped is not None else [])


def test_every_kind_of_the_first_events_format_has_its_typed_dict() -> None:
    """The kinds the model gates read are the ones declared since format 1."""
    assert set(EVENT_TYPES) == {k for k, s in EVENT_FIELDS.items() if s.since_format == 1}


@pytest.mark.parametrize("kind", sorted(EVENT_TYPES))
def test_required_keys_and_types_follow_the_table(kind: str) -> None:
    typed = EVENT_TYPES[kind]
    assert len(typed) == len(shapes(kind)), kind
    for cls, fields in zip(typed, shapes(kind), strict=True):
        assert cls.__required_keys__ == {"kind", *fields}, cls  # type: ignore[attr-defined]
        hints = cls.__annotations__  # evaluated: event_types.py does not postpone them
        assert kind in hints["kind"].__args__, cls
        for name, ftype in fields.items():
            if ftype.types == OBJECT.types and nested(hints[name], ftype.nullable):
                continue  # an object the gates read: its keys are optional (see event_types.py)
            if (
                ftype.types == LIST.types
                and get_origin(hints[name]) is list
                and nested(get_args(hints[name])[0], False)
            ):
                continue  # a list of objects the gates read, the same
            assert hints[name] == expected(ftype), (cls, name, hints[name], expected(ftype))


def test_a_nested_object_type_requires_no_key() -> None:
    """The table checks only that a nested object is an object: a TypedDict for one may not
    promise a key."""
    for typed in EVENT_TYPES.values():
        for cls in typed:
            for hint in cls.__annotations__.values():
                for inner in (hint, *get_args(hint), *(a for arg in get_args(hint) for a in get_args(arg))):
                    if is_typeddict(inner):
                        assert not inner.__required_keys__, (cls, inner)


def test_optional_keys_are_not_declared_fields() -> None:
    """A NotRequired key is one the table does not require: a judge reads it with `.get`."""
    for kind, typed in EVENT_TYPES.items():
        declared = {name for fields in shapes(kind) for name in fields}
        for cls in typed:
            assert not (cls.__optional_keys__ & declared), cls  # type: ignore[attr-defined]
