"""The JSON Schema of one events.jsonl line, generated from the table of event kinds
(parval.rundir.event_fields, itself derived from the TypedDicts of
parval.rundir.event_types), so that the two never disagree.

`parval schema events` prints it; schemas/events.schema.json is the checked-in copy
(tests/rundir/test_event_schema.py fails when it differs: regenerate it with
`parval schema events > schemas/events.schema.json`). A kind's schema requires the fields
its kind declares and allows others (kinds carry more fields than a judge reads)."""

from __future__ import annotations

import json

from parval.jsontypes import JsonObject
from parval.rundir.event_fields import EVENT_FIELDS, EVENTS_FORMAT, FORMAT_FIELD, Fields, Shape


def _object(kind: str, fields: Fields) -> JsonObject:
    return {
        "type": "object",
        "properties": {"kind": {"const": kind}, **{name: ftype.json_schema() for name, ftype in fields.items()}},
        "required": ["kind", *fields],
    }


def _kind_schema(kind: str, shape: Shape) -> JsonObject:
    declared: JsonObject = {"description": f"declared since events format {shape.since_format}"}
    if shape.skipped is None:
        return {**declared, **_object(kind, shape.fields)}
    # a probe that recorded `skipped` carries only the skipped shape's fields
    return {
        **declared,
        "if": {"required": ["skipped"]},
        "then": _object(kind, shape.skipped),
        "else": _object(kind, shape.fields),
    }


def events_schema() -> JsonObject:
    """The schema of a line of an events.jsonl written in EVENTS_FORMAT."""
    kinds = sorted(EVENT_FIELDS)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://parval.invalid/schemas/events.schema.json",
        "title": f"parval events.jsonl line (events format {EVENTS_FORMAT})",
        "description": (
            "One JSON object per line: `seq` (0, 1, ...), `t` (wall clock, seconds), `kind` and the "
            f"fields its kind declares (more are allowed). The first event of a log carries `{FORMAT_FIELD}`; "
            "a log without it is format 1 (older runs, read with the fields they lack filled in). "
            "Generated from the event types of parval/rundir/event_types.py."
        ),
        "type": "object",
        "required": ["seq", "t", "kind"],
        "properties": {
            "seq": {"type": "integer", "minimum": 0},
            "t": {"type": "number"},
            "kind": {"enum": [*kinds]},
            FORMAT_FIELD: {"const": EVENTS_FORMAT, "description": "the events format, on a log's first event only"},
        },
        "allOf": [
            {"if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]}, "then": {"$ref": f"#/$defs/{kind}"}}
            for kind in kinds
        ],
        "$defs": {kind: _kind_schema(kind, EVENT_FIELDS[kind]) for kind in kinds},
    }


def events_schema_text() -> str:
    """The schema as `parval schema events` prints it and schemas/events.schema.json holds it."""
    return json.dumps(events_schema(), indent=2) + "\n"
