"""schemas/events.schema.json is generated from the table of event kinds and checked in:
it never drifts from the table, `parval schema events` prints it, and every line parval
writes (one event of every declared kind) validates against it. A reader that judges meets
an event without a declared field as an error naming kind and field, never a KeyError."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from parval.errors import RunDirError
from parval.framework.rejudge import rejudge_framework
from parval.rundir.event_fields import EVENT_FIELDS, FORMAT_FIELD, EventFieldError, Fields, FieldType, OneOf
from parval.rundir.event_index import load_records
from parval.rundir.event_schema import events_schema, events_schema_text
from parval.rundir.events import EventLog, read_events
from tests.ux.kit import invoke

CHECKED_IN = Path(__file__).resolve().parents[2] / "schemas" / "events.schema.json"
SAMPLES: dict[type, Any] = {str: "text", int: 3, float: 1.5, bool: True, dict: {"k": 1}, list: [1], object: {"any": 1}}


def sample(ftype: FieldType, *, null: bool = False) -> Any:
    """A value of the declared type (null where the type allows it and `null` is asked)."""
    if null and ftype.nullable:
        return None
    if isinstance(ftype, OneOf):
        return ftype.values[-1]
    return SAMPLES[ftype.types[0]]


def fields_of(declared: Fields, *, null: bool = False) -> dict[str, Any]:
    return {name: sample(ftype, null=null) for name, ftype in declared.items()}


def test_the_checked_in_schema_is_the_one_generated_from_the_table() -> None:
    assert CHECKED_IN.read_text("utf-8") == events_schema_text(), (
        "schemas/events.schema.json differs from the table: `parval schema events > schemas/events.schema.json`"
    )
    jsonschema.Draft202012Validator.check_schema(events_schema())
    assert sorted(events_schema()["$defs"]) == sorted(EVENT_FIELDS)


def test_parval_schema_events_prints_it() -> None:
    shown = invoke("schema", "events")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == events_schema_text()
    listed = invoke("schema", "nothing")
    assert listed.returncode != 0 and "events" in listed.stderr


def test_one_event_of_every_declared_kind_written_by_the_log_validates(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    try:
        for kind, shape in sorted(EVENT_FIELDS.items()):
            log.append(kind, **fields_of(shape.fields), extra_field="kinds carry more than they declare")
            log.append(kind, **fields_of(shape.fields, null=True))
            if shape.skipped is not None:
                log.append(kind, **fields_of(shape.skipped))  # a probe that recorded `skipped`
    finally:
        log.close()
    validator = jsonschema.Draft202012Validator(json.loads(CHECKED_IN.read_text("utf-8")))
    lines = path.read_text("utf-8").splitlines()
    assert len(lines) >= 2 * len(EVENT_FIELDS)
    for line in lines:
        errors = [e.message for e in validator.iter_errors(json.loads(line))]
        assert not errors, (line[:200], errors)
    assert FORMAT_FIELD in json.loads(lines[0]) and all(FORMAT_FIELD not in json.loads(x) for x in lines[1:])


@pytest.mark.parametrize(
    "line",
    [
        {"seq": 0, "t": 1.0, "kind": "unit_end", "unit": "count1-s1"},  # lacks `ok`
        {"seq": 0, "t": 1.0, "kind": "unit_end", "unit": "count1-s1", "ok": "yes"},  # not a boolean
        {"seq": 0, "t": 1.0, "kind": "wave", "run": "r"},  # a judged kind without its fields
        {"seq": 0, "t": 1.0, "kind": "no_such_kind"},
        {"t": 1.0, "kind": "unit_begin", "unit": "u"},  # no seq
    ],
)
def test_the_schema_refuses_a_line_without_its_declared_fields(line: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(events_schema())
    assert list(validator.iter_errors(line))


def _format_2_log(path: Path, *events: tuple[str, dict[str, Any]]) -> None:
    log = EventLog(path)
    try:
        for kind, fields in events:
            log.append(kind, **fields)
    finally:
        log.close()


def _drop(path: Path, kind: str, field: str) -> None:
    """Take `field` away from the first `kind` event of the log (as an edit would)."""
    events = read_events(path)
    victim = next(e for e in events if e["kind"] == kind)
    del victim[field]
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_the_gates_record_loader_names_the_kind_and_field_a_read_event_lacks(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    start = EVENT_FIELDS["campaign_start"].fields
    _format_2_log(path, ("campaign_start", fields_of(start)), ("unit_begin", {"unit": "count1-s1"}))
    load_records(tmp_path)  # complete: loads
    _drop(path, "unit_begin", "unit")
    with pytest.raises(EventFieldError, match=r"event 1: a `unit_begin` event lacks `unit`") as info:
        load_records(tmp_path)
    assert str(path) in str(info.value) and isinstance(info.value, RunDirError)


def test_the_framework_rejudge_names_the_kind_and_field_a_read_event_lacks(tmp_path: Path) -> None:
    """--rejudge reads `observation` facts: one without them is refused by name."""
    path = tmp_path / "events.jsonl"
    observation = {"assertion": "F1.fifo", "name": "n", "judge": "given", "facts": {}, "evidence": {}}
    start = fields_of(EVENT_FIELDS["framework_start"].fields)
    _format_2_log(path, ("framework_start", start), ("observation", observation))
    _drop(path, "observation", "facts")
    with pytest.raises(EventFieldError, match=r"a `observation` event lacks `facts`") as info:
        rejudge_framework(tmp_path)
    assert str(path) in str(info.value)


def test_a_format_1_log_is_not_refused_for_a_kind_declared_in_format_2(tmp_path: Path) -> None:
    """Runs recorded before every kind was declared (no format marker) are checked only for
    the kinds the model gates read then: an older `unit_begin` without `unit` still loads."""
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps({"seq": 0, "t": 1.0, "kind": "unit_begin"}) + "\n")
    assert load_records(tmp_path).events[0]["kind"] == "unit_begin"
