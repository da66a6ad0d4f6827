"""The fields each event kind carries that a judge reads: one table, kind → required fields
with their types, enforced where events are written (`EventLog.append`) and where they are
read (the gates' record loader), so that a judge never meets an event without a field it
reads. A kind not in the table is not read by a model-gate judge and is not checked.

Each kind has one shape, or two where a probe records that it was skipped (`skipped`
present: only the skipped shape's fields are required). Types are checked where cheap: a
field declared `NUMBER` must be an int or float (not a bool), `TEXT` a str, and so on;
`OPTIONAL` marks a field that must be present but may be null.

Fields added after runs were recorded are upgraded on read (`UPGRADES`): an older event gets
a value that says it is older, never one that could make a verdict PASS.

This table is meant to become one frozen type per kind (with a generated JSON Schema for
events.jsonl); until then it is the single place the kinds' fields are declared."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from parval.errors import RunDirError


@dataclass(frozen=True)
class FieldType:
    name: str
    types: tuple[type, ...]
    nullable: bool = False

    def accepts(self, value: Any) -> bool:
        if value is None:
            return self.nullable
        if isinstance(value, bool) and not {bool, object} & set(self.types):
            return False
        return isinstance(value, self.types)

    @property
    def or_null(self) -> FieldType:
        return FieldType(f"{self.name} or null", self.types, True)


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

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.values


WAVE_MODE = OneOf("together, ordered, reversed or serial", (str,), values=("together", "ordered", "reversed", "serial"))

Fields = Mapping[str, FieldType]


@dataclass(frozen=True)
class Shape:
    fields: Fields
    skipped: Fields | None = None  # the shape of a probe that recorded `skipped`

    def required(self, event: Mapping[str, Any]) -> Fields:
        return self.skipped if self.skipped is not None and "skipped" in event else self.fields


START = {"run": TEXT, "attempt": INT}
UNIT = {"unit": TEXT, "reason": TEXT}
DRAIN = {"drained": OBJECT}
IN_FLIGHT_UNLOAD = {
    "issued_while_active": FLAG,
    "busy": INT,
    "ended_unloaded": FLAG,
    "unloaded_seen": FLAG,
    "unload_check": OBJECT,
    "later_order": TEXT,
    "tries": INT,
}
UNLOAD_TIMES = {"unload": OBJECT, "unload_done": NUMBER, "requests_done": LIST, "requests_latency": LIST}

EVENT_FIELDS: dict[str, Shape] = {
    "campaign_end": Shape({"finished": FLAG}),
    "count_not_run": Shape({"count": INT, "reason": TEXT}),
    "run_start": Shape({**START, "role": TEXT, "count": INT.or_null}),
    "run_end": Shape(START),
    "run_abandoned": Shape(START),
    "server_ready": Shape({**START, "argv": LIST, "warning_marker": FLAG}),
    "server_crash": Shape({**START, "where": TEXT, "exit_code": INT}),
    "slot_counters": Shape({**START, "published": FLAG}),
    "start_failed": Shape(UNIT),
    "start_aborted": Shape(UNIT),
    "start_timeout": Shape(UNIT),
    # `attempt` is attributed on read for older runs (the start's latest attempt)
    "wave_timeout": Shape({"run": TEXT, "phase": TEXT, "wave": INT, "reason": TEXT}),
    "memory_guard": Shape({**START, "reason": TEXT, "sample": OBJECT}),
    "request": Shape(
        {
            **START,
            "phase": TEXT,
            "wave": INT,
            "req": TEXT,
            "ref": TEXT.or_null,
            "reply": OBJECT,
            "t_send": NUMBER,
            "t_done": NUMBER,
            "output": OBJECT.or_null,
        }
    ),
    "wave": Shape(
        {**START, "phase": TEXT, "wave": INT, "n": INT, "mode": WAVE_MODE, "batch_s": NUMBER, "status": OBJECT, **DRAIN}
    ),
    "probe": Shape({**START, "name": TEXT, "reply": OBJECT}),
    "m4_invalid_alongside": Shape(
        {**START, "invalid": OBJECT, "rejected": FLAG, **DRAIN}, skipped={"run": TEXT, "skipped": TEXT}
    ),
    "m4_load_failure": Shape(
        {**START, "failure": OBJECT, "failed": FLAG, "retry": OBJECT, "retried": FLAG},
        skipped={"run": TEXT, "skipped": TEXT},
    ),
    "m4_targeted_unload": Shape({**START, **UNLOAD_TIMES, **IN_FLIGHT_UNLOAD}),
    "m4_all_unload": Shape({**START, **UNLOAD_TIMES, **IN_FLIGHT_UNLOAD}),
    "m4_unload_during_first_load": Shape(
        {**START, **UNLOAD_TIMES, "issued_during_load": FLAG, "ended_unloaded": FLAG, "unload_check": OBJECT}
    ),
    "m6_streaming": Shape({**START, "count": INT, "streams": LIST, "counters_present": FLAG, **DRAIN}),
    "m6_batch": Shape({**START, "count": INT, "batches": INT, "expected_results": INT, "results": LIST, **DRAIN}),
    "negative_control": Shape({"caught": FLAG.or_null}),
    "perf": Shape({"series": TEXT, "count": INT, "batch_s": NUMBER, "latencies_s": LIST, "failures": INT}),
    "rejection_latency": Shape({"count": INT, "latencies_ms": LIST}),
    "x1_config_probe": Shape({"value": ANY, "rejected": FLAG}),
    "x1_registration_probe": Shape({"run": TEXT, "value": ANY, "reply": OBJECT, "ok": FLAG}),
    "x3_resize_probe": Shape({"run": TEXT, "steps": LIST}),
}

# Fields a kind gained after runs were recorded with it: the value an older event gets on
# read, worded so that it names its age (and never a value a PASS could rest on).
_UNOBSERVED: dict[str, Any] = {"unloaded_seen": False, "unload_check": {}, "later_order": "unobserved", "tries": 1}
UPGRADES: dict[str, dict[str, Any]] = {
    "wave_timeout": {"reason": "the wave did not complete within timeouts.wave_s (recorded without a reason)"},
    # recorded before /v1/models was checked after an unload, or before the later request's
    # place in the queue was observed: not shown
    "m4_targeted_unload": _UNOBSERVED,
    "m4_all_unload": _UNOBSERVED,
    "m4_unload_during_first_load": {"unload_check": {}},
}


class EventFieldError(RunDirError):
    """An event lacks a field its kind declares, or carries it with the wrong type."""


def problems(kind: str, event: Mapping[str, Any]) -> list[str]:
    """What is wrong with one event of `kind` (empty when it has every declared field)."""
    shape = EVENT_FIELDS.get(kind)
    if shape is None:
        return []
    out = []
    for name, ftype in shape.required(event).items():
        if name not in event:
            out.append(f"a `{kind}` event lacks `{name}`")
        elif not ftype.accepts(event[name]):
            out.append(f"a `{kind}` event has `{name}` = {event[name]!r}, which is not {ftype.name}")
    return out


def check_written(kind: str, fields: Mapping[str, Any]) -> None:
    """Refuse to write an event without a declared field (a bug in parval's runner)."""
    found = problems(kind, fields)
    if found:
        raise EventFieldError(
            f"refusing to record it: {'; '.join(found)}", hint="this is a bug in parval: please report it"
        )


def upgraded(event: dict[str, Any]) -> dict[str, Any]:
    """The event with fields added since it was recorded filled in (see UPGRADES)."""
    extra = UPGRADES.get(str(event.get("kind")))
    if not extra or all(k in event for k in extra):
        return event
    return {**{k: v for k, v in extra.items() if k not in event}, **event}


def check_read(events: list[dict[str, Any]], where: str = "events.jsonl") -> list[dict[str, Any]]:
    """Every event upgraded and checked against the table; the first bad one raises
    EventFieldError naming its line, kind and field."""
    out = []
    for i, e in enumerate(events):
        e = upgraded(e)
        found = problems(str(e.get("kind")), e)
        if found:
            seq = e.get("seq", i)
            raise EventFieldError(
                f"{where}: event {seq}: {'; '.join(found)}: the run directory was not written by this "
                "parval's runner or was edited",
                hint="re-run the campaign, or restore the run directory (`parval verify RUN` names changed files)",
            )
        out.append(e)
    return out
