"""The fields each event kind carries: one table, kind → required fields with their types,
enforced where events are written (`EventLog.append`) and where they are judged (the gates'
record loader, the framework's `--rejudge`), so that a judge never meets an event without a
field it reads. Every kind parval writes is declared (tests/rundir/test_event_kinds.py
scans the source for them); schemas/events.schema.json is generated from this table.

Each kind has one shape, or two where a probe records that it was skipped (`skipped`
present: only the skipped shape's fields are required). Types are checked where cheap: a
field declared `NUMBER` must be an int or float (not a bool), `TEXT` a str, and so on;
`or_null` marks a field that must be present but may be null.

Events formats (`EVENTS_FORMAT`, named on the first event of a log: see events.py): in
format 1 only the kinds the model gates read were declared, so a format-1 log is checked on
read for those kinds only (`Shape.since_format`); every kind is checked in format 2 logs.
Fields added after runs were recorded are upgraded on read in format-1 logs (`UPGRADES`):
an older event gets a value that says it is older, never one that could make a verdict
PASS."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from parval.errors import RunDirError
from parval.jsontypes import JsonObject, JsonValue

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
            "phase": NAME,
            "wave": INT,
            "req": NAME,
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

# The kinds declared in events format 2 (the rest of what parval writes): the fields every
# writer of the kind passes. Campaigns and model runs:
_CAMPAIGN_FIELDS: dict[str, Fields] = {
    "campaign_start": {
        "plan": TEXT,
        "plan_sha256": TEXT,
        "shard": LIST.or_null,
        "counts": LIST,
        "resumed": FLAG,
        "fail_fast": FLAG,
    },
    "campaign_stopped": {"reason": TEXT},
    "executable_cannot_start": {
        "role": TEXT,
        "executable": TEXT,
        "run": TEXT,
        "exit_code": INT,
        "last_lines": LIST,
        "stream": TEXT,
        "reason": TEXT,
    },
    "campaign_interrupted": {"signal": TEXT, "unit": TEXT.or_null, "reason": TEXT},
    "campaign_timeout": {"after_s": NUMBER, "reason": TEXT},
    "recovery_count": {"count": INT, "reason": TEXT},
    "unit_begin": {"unit": TEXT},
    "unit_end": {"unit": TEXT, "ok": FLAG},
    "unit_skipped": {"unit": TEXT, "reason": TEXT},
    "server_leftover": {"unit": TEXT, "server": TEXT, "stop": OBJECT, "log_tail": TEXT},
    "server_unresponsive": {
        **START,
        "where": TEXT,
        "requests": INT,
        "outcomes": LIST,
        "request_timeout_s": NUMBER,
        "log_tail": TEXT,
    },
    "wave_repeat": {
        **START,
        "count": INT.or_null,
        "phase": TEXT,
        "wave": INT,
        "n": INT,
        "retry": INT,
        "repeat": FLAG,
        "reason": TEXT,
    },
    "torn_tail_discarded": {"bytes": INT, "sha256": TEXT, "reason": TEXT},
}
# Framework records (`parval framework`): what `--rejudge` reads first.
RIG = {"rig": TEXT}
RIG_TIMELINE = {**RIG, "timeline": LIST}
FORCED = {**RIG_TIMELINE, "model": TEXT, "count": INT}
_FRAMEWORK_FIELDS: dict[str, Fields] = {
    "framework_start": {"plan": TEXT, "plan_sha256": TEXT, "only": TEXT.or_null, "selection": LIST},
    "framework_end": {"record_id": TEXT, "verdict": OBJECT},
    "observation": {"assertion": TEXT, "name": TEXT, "judge": TEXT, "facts": OBJECT, "evidence": OBJECT},
    "check": {"assertion": TEXT, "name": TEXT, "status": TEXT, "detail": TEXT, "evidence": OBJECT},
    "ctest_run": {"run": OBJECT},
    "ctest": {"label": TEXT, "summary": TEXT, "status": TEXT},
    "judge_inputs": {
        "selected": LIST,
        "only": TEXT.or_null,
        "plan_path": TEXT,
        "required_tests": LIST,
        "default_transport_unchanged": TEXT.or_null,
        "sanitizers": LIST,
        "sanitizers_unavailable": OBJECT,
    },
    "record_inputs": {
        "procedure_version": TEXT,
        "parval_version": TEXT,
        "created_at": TEXT,
        "elapsed_s": NUMBER,
        "identity": OBJECT,
        "scope": OBJECT,
        "contract": OBJECT,
        "probes": LIST,
        "reproduction": TEXT,
    },
    "probe_begin": {"probe": TEXT},
    "probe_end": {"probe": TEXT, "ok": FLAG, "elapsed_s": NUMBER},
    "probe_error": {"probe": TEXT, "error": TEXT},
    "probe_skipped": {"probe": TEXT, "status": TEXT, "reason": TEXT},
    "rig_start": {**RIG, "flagged": FLAG, "config": OBJECT, "ui_management": FLAG},
    "rig_ready": {**RIG, "ready_s": NUMBER, "argv": LIST},
    "rig_end": {**RIG, "stop": OBJECT, "polls": INT, "poll_errors": INT, "log_tail": TEXT},
    "flight": {
        **RIG,
        "label": TEXT,
        "path": TEXT,
        "t_send": NUMBER,
        "t_done": NUMBER.or_null,
        "cancelled": FLAG,
        "reply": OBJECT.or_null,
    },
    "calibration": {**RIG, "timing": OBJECT, "statuses": LIST},
    "capabilities": {
        **RIG,
        "counters": FLAG.or_null,
        "loaded": FLAG.or_null,
        "bulk_unload": FLAG.or_null,
        "bulk_status": INT.or_null,
        "management": FLAG.or_null,
        "management_status": INT.or_null,
        "plan_ui_management": FLAG,
    },
    "first_wave": {**FORCED, "capacity": LIST, "sessions": LIST},
    "forced_order": FORCED,
    "request_only_queue": FORCED,
    "healthy_plus_overdue": {**RIG, "count": INT, "probe_ms": INT},
    "overlapping_managers": RIG_TIMELINE,
    "reconfigure_queued": RIG_TIMELINE,
    "unload_not_undone": RIG_TIMELINE,
}
EVENT_FIELDS.update(
    {kind: Shape(fields, since_format=2) for kind, fields in {**_CAMPAIGN_FIELDS, **_FRAMEWORK_FIELDS}.items()}
)

# Fields a kind gained after runs were recorded with it: the value an older event gets on
# read, worded so that it names its age (and never a value a PASS could rest on).
_UNOBSERVED: JsonObject = {"unloaded_seen": False, "unload_check": {}, "later_order": "unobserved", "tries": 1}
UPGRADES: dict[str, JsonObject] = {
    "wave_timeout": {"reason": "the wave did not complete within timeouts.wave_s (recorded without a reason)"},
    # recorded before /v1/models was checked after an unload, or before the later request's
    # place in the queue was observed: not shown
    "m4_targeted_unload": _UNOBSERVED,
    "m4_all_unload": _UNOBSERVED,
    "m4_unload_during_first_load": {"unload_check": {}},
}


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
