"""The events the model gates read, one TypedDict per kind: the required keys are the
fields parval.rundir.event_fields declares for the kind (checked when a log is read, so a
judge can index them), `NotRequired` the optional ones parval's writers add and a judge
reads with `.get`, typed as those writers record them (they are not checked on read).
tests/rundir/test_event_types.py keeps the two tables in step.

The table declares a nested object (a reply, a wave's status) only as an object: the ones
the gates read have a TypedDict below with every key optional (`total=False`: older runs
may lack a key, so the gates read them with `.get`), typed as parval's writer records it;
the rest are JSON objects, narrowed where they are read."""

# No `from __future__ import annotations`: TypedDict reads `NotRequired` from evaluated
# annotations only (Python 3.11), and the test compares __required_keys__ with the table.
from typing import Literal, NotRequired, TypedDict

from parval.jsontypes import JsonObject, JsonValue

WaveMode = Literal["together", "ordered", "reversed", "serial"]


class ReplySummary(TypedDict, total=False):
    """A request's or a probe's `reply` (parval.server.client `Reply.summary`)."""

    status: int | None
    outcome: str
    ms: float
    error: str
    error_type: str | None


class RequestOutput(TypedDict, total=False):
    """A request's canonical `output` (parval.gates.canonical); the canonical form and
    audio digests are compared and reported, never computed with."""

    valid: bool
    canon: JsonValue
    audio: JsonValue
    problem: JsonValue


class WaveStatus(TypedDict, total=False):
    """What the status poller saw during one wave (parval.server.status `WindowSummary`)."""

    polls: int
    poll_errors: int
    poll_hz: float | None
    max_active: int | None
    max_active_loaded: int | None
    max_queued: int | None
    fields_present: bool
    expected: int


class DrainedState(TypedDict, total=False):
    """Whether the slots drained after a step (runners/start.py `Drained`)."""

    ok: bool
    active: int | None
    queued: int | None
    fields_present: bool
    waited: bool
    polls_ok: bool


class InFlightWindow(TypedDict, total=False):
    """The window with every request of a wave in flight (runners/start.py `AllInFlight`)."""

    ms: float
    polls: int
    max_active: int | None
    max_active_loaded: int | None


class CampaignEndEvent(TypedDict):
    kind: Literal["campaign_end"]
    finished: bool


class CountNotRunEvent(TypedDict):
    kind: Literal["count_not_run"]
    count: int
    reason: str


class ServerConfigRecord(TypedDict, total=False):
    """The server config file a start wrote (run_start's `config`): its model entries."""

    models: list[JsonObject]


class RunStartEvent(TypedDict):
    kind: Literal["run_start"]
    run: str
    attempt: int
    role: str
    count: int | None
    exe_role: NotRequired[str]
    config: NotRequired[ServerConfigRecord]


class RunEndEvent(TypedDict):
    kind: Literal["run_end"]
    run: str
    attempt: int
    memory: NotRequired[JsonObject | None]  # how the memory sampler ran
    status_fields: NotRequired[JsonObject]  # the /v1/models fields the start published


class RunAbandonedEvent(TypedDict):
    kind: Literal["run_abandoned"]
    run: str
    attempt: int


class ServerReadyEvent(TypedDict):
    kind: Literal["server_ready"]
    run: str
    attempt: int
    argv: list[JsonValue]
    warning_marker: bool


class ServerCrashEvent(TypedDict):
    kind: Literal["server_crash"]
    run: str
    attempt: int
    where: str
    exit_code: int
    signal: NotRequired[str | None]


class SlotCountersEvent(TypedDict):
    kind: Literal["slot_counters"]
    run: str
    attempt: int
    published: bool


class _UnitStopped(TypedDict):
    """A start parval ended early. The record loader names its start (`run`) and attempt
    (None when its server never started) on every one."""

    unit: str
    reason: str
    run: NotRequired[str]
    attempt: NotRequired[int | None]


class StartFailedEvent(_UnitStopped):
    kind: Literal["start_failed"]


class StartAbortedEvent(_UnitStopped):
    kind: Literal["start_aborted"]


class StartTimeoutEvent(_UnitStopped):
    kind: Literal["start_timeout"]


class WaveTimeoutEvent(TypedDict):
    kind: Literal["wave_timeout"]
    run: str
    phase: str
    wave: int
    reason: str
    attempt: NotRequired[int | None]


class MemoryGuardEvent(TypedDict):
    kind: Literal["memory_guard"]
    run: str
    attempt: int
    reason: str
    sample: JsonObject


class RequestEvent(TypedDict):
    kind: Literal["request"]
    run: str
    attempt: int
    phase: str
    wave: int
    req: str
    ref: str | None
    reply: ReplySummary
    t_send: float
    t_done: float
    output: RequestOutput | None
    # Written by every model start's requests (runners/start.py `record`):
    slot: NotRequired[int | None]
    history: NotRequired[list[str] | None]
    artifact: NotRequired[str | None]
    expect_error: NotRequired[bool]
    reversed: NotRequired[bool]
    retry: NotRequired[int]


class WaveEvent(TypedDict):
    kind: Literal["wave"]
    run: str
    attempt: int
    phase: str
    wave: int
    n: int
    mode: WaveMode
    batch_s: float
    status: WaveStatus
    drained: DrainedState
    # Written by every model start's waves (runners/start.py `wave_event`):
    count: NotRequired[int | None]
    t_start: NotRequired[float]
    t_end: NotRequired[float]
    all_in_flight: NotRequired[InFlightWindow | None]
    # and by the mixed waves (runners/phases.py):
    admission: NotRequired[JsonObject]
    trace_confirmed: NotRequired[bool | None]
    order: NotRequired[list[str]]
    retry: NotRequired[int]


class ProbeEvent(TypedDict):
    kind: Literal["probe"]
    run: str
    attempt: int
    name: str
    reply: ReplySummary
    # The per-start unload probe (runners/phases.py `unload_reload`) and the check of
    # /v1/models after it (`Start.observe_unloaded`):
    cycle: NotRequired[int]
    listed: NotRequired[bool]
    loaded_false: NotRequired[bool]
    loaded_field: NotRequired[bool | None]
    still_loaded: NotRequired[bool]
    polls_after: NotRequired[int]


class M4InvalidAlongsideEvent(TypedDict):
    kind: Literal["m4_invalid_alongside"]
    run: str
    attempt: int
    invalid: JsonObject
    rejected: bool
    drained: JsonObject


class M4LoadFailureEvent(TypedDict):
    kind: Literal["m4_load_failure"]
    run: str
    attempt: int
    failure: JsonObject
    failed: bool
    retry: JsonObject
    retried: bool


class M4ProbeSkippedEvent(TypedDict):
    """An m4_invalid_alongside or m4_load_failure probe that recorded why it did not run."""

    kind: Literal["m4_invalid_alongside", "m4_load_failure"]
    run: str
    skipped: str


class _UnloadTimes(TypedDict):
    run: str
    attempt: int
    unload: JsonObject
    unload_done: float
    requests_done: list[JsonValue]
    requests_latency: list[JsonValue]


class _InFlightUnload(_UnloadTimes):
    issued_while_active: bool
    busy: int
    ended_unloaded: bool
    unloaded_seen: bool
    unload_check: JsonObject
    later_order: str
    tries: int


class M4TargetedUnloadEvent(_InFlightUnload):
    kind: Literal["m4_targeted_unload"]


class M4AllUnloadEvent(_InFlightUnload):
    kind: Literal["m4_all_unload"]


class M4UnloadDuringFirstLoadEvent(_UnloadTimes):
    kind: Literal["m4_unload_during_first_load"]
    issued_during_load: bool
    ended_unloaded: bool
    unload_check: JsonObject


class StreamRecord(TypedDict, total=False):
    """One stream of the M6 streaming probe (runners/modes.py)."""

    wave: str
    index: int
    ref: str | None
    status: int | None
    outcome: str
    error: str
    pcm_sha256: str | None
    bytes: int
    done: bool
    events: int
    disconnected: bool
    cut: bool
    t_send: float
    t_done: float


class M6StreamingEvent(TypedDict):
    kind: Literal["m6_streaming"]
    run: str
    attempt: int
    count: int
    streams: list[StreamRecord]
    counters_present: bool
    drained: DrainedState
    max_active: NotRequired[int | None]
    polls: NotRequired[int]


class BatchRecord(TypedDict, total=False):
    """One result of the M6 batch probe, or one batch's reply (no `index`) (runners/modes.py)."""

    batch: int
    index: int
    req: str
    ref: str | None
    canon: str | None
    artifact: str
    status: int | None
    outcome: str
    error: str


class M6BatchEvent(TypedDict):
    kind: Literal["m6_batch"]
    run: str
    attempt: int
    count: int
    batches: int
    expected_results: int
    results: list[BatchRecord]
    drained: DrainedState


class NegativeControlEvent(TypedDict):
    kind: Literal["negative_control"]
    caught: bool | None
    source: NotRequired[JsonObject]  # the request whose reply was altered


class PerfEvent(TypedDict):
    kind: Literal["perf"]
    series: str
    count: int
    batch_s: float
    latencies_s: list[JsonValue]
    failures: int


class RejectionLatencyEvent(TypedDict):
    kind: Literal["rejection_latency"]
    count: int
    latencies_ms: list[JsonValue]
    statuses: NotRequired[JsonValue]


class X1ConfigProbeEvent(TypedDict):
    kind: Literal["x1_config_probe"]
    value: JsonValue
    rejected: bool
    message_ok: NotRequired[bool]  # the startup error was the legacy text


class X1RegistrationProbeEvent(TypedDict):
    kind: Literal["x1_registration_probe"]
    run: str
    value: JsonValue
    reply: ReplySummary
    ok: bool
    message: NotRequired[JsonValue]  # the registration reply's error text


class X3ResizeProbeEvent(TypedDict):
    kind: Literal["x3_resize_probe"]
    run: str
    steps: list[JsonValue]
    ok: NotRequired[bool]  # every step ran
    capacity_refused: NotRequired[JsonValue]  # the server's refusal of two slots


# kind -> its TypedDict(s): two where a probe may record that it was skipped.
EVENT_TYPES: dict[str, tuple[type, ...]] = {
    "campaign_end": (CampaignEndEvent,),
    "count_not_run": (CountNotRunEvent,),
    "run_start": (RunStartEvent,),
    "run_end": (RunEndEvent,),
    "run_abandoned": (RunAbandonedEvent,),
    "server_ready": (ServerReadyEvent,),
    "server_crash": (ServerCrashEvent,),
    "slot_counters": (SlotCountersEvent,),
    "start_failed": (StartFailedEvent,),
    "start_aborted": (StartAbortedEvent,),
    "start_timeout": (StartTimeoutEvent,),
    "wave_timeout": (WaveTimeoutEvent,),
    "memory_guard": (MemoryGuardEvent,),
    "request": (RequestEvent,),
    "wave": (WaveEvent,),
    "probe": (ProbeEvent,),
    "m4_invalid_alongside": (M4InvalidAlongsideEvent, M4ProbeSkippedEvent),
    "m4_load_failure": (M4LoadFailureEvent, M4ProbeSkippedEvent),
    "m4_targeted_unload": (M4TargetedUnloadEvent,),
    "m4_all_unload": (M4AllUnloadEvent,),
    "m4_unload_during_first_load": (M4UnloadDuringFirstLoadEvent,),
    "m6_streaming": (M6StreamingEvent,),
    "m6_batch": (M6BatchEvent,),
    "negative_control": (NegativeControlEvent,),
    "perf": (PerfEvent,),
    "rejection_latency": (RejectionLatencyEvent,),
    "x1_config_probe": (X1ConfigProbeEvent,),
    "x1_registration_probe": (X1RegistrationProbeEvent,),
    "x3_resize_probe": (X3ResizeProbeEvent,),
}
