"""Every event kind parval writes, declared once: one TypedDict per kind (two where a probe
may record that it was skipped), the type an event is written through (`EventLog.write`)
and read through (`parval.rundir.event_index`). Everything else about a kind is derived from
it: the fields `parval.rundir.event_fields` checks on write and on read, the upgrades of
older logs, and schemas/events.schema.json.

* A required key is a field every writer of the kind passes: it is checked on write and on
  read, so a reader may index it. `NotRequired` keys are the optional ones some writers add
  (typed here, so mypy checks every writer; not checked on read, a judge reads them with
  `.get`).
* A field's type decides its check: `str`, `int`, `float` (an int or a float), `bool`, a
  list, an object (a JSON object or a TypedDict), `JsonValue` (anything), a `Literal` of
  strings (one of them), `X | None` (present, maybe null). `Annotated` adds what a type
  cannot say: `Name` (a non-empty string), `Upgrade(value)` (what a format-1 event recorded
  before the field existed gets on read).
* The kinds are listed once, in `Format1Event` (the kinds the model gates read, declared
  since events format 1) and `Format2Event` (the rest, declared since format 2).

A nested object (a reply, a wave's status) has a TypedDict with every key optional
(`total=False`): the writer fills every key, but older runs may lack one, so a judge reads
them with `.get`."""

# No `from __future__ import annotations`: TypedDict reads `NotRequired` from evaluated
# annotations only (Python 3.11), and event_fields reads the annotations at import.
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Literal, NotRequired, TypeAlias, TypedDict, cast

from parval.jsontypes import JsonObject, JsonValue


@dataclass(frozen=True)
class NonEmpty:
    """A string that names what decides how an event is judged (a phase, a request): an
    empty one is no name."""


@dataclass(frozen=True, eq=False)
class Upgrade:
    """The value a format-1 event that lacks this field (recorded before it was added) gets
    on read: worded so that it names its age, never a value a PASS could rest on."""

    value: JsonValue


def plain(record: Mapping[str, object]) -> JsonObject:
    """A record typed where it is made (a TypedDict of JSON values) as the plain JSON object
    an event field declares where no judge reads it through a type of its own."""
    return cast(JsonObject, record)


Name = Annotated[str, NonEmpty()]
WaveMode = Literal["together", "ordered", "reversed", "serial"]


class ReplySummary(TypedDict, total=False):
    """A request's or a probe's `reply`, as parval.server.client `Reply.summary` writes it
    (`error_type` only for an HTTP error)."""

    status: int | None
    outcome: str
    ms: float
    error: str
    error_type: str | None


class RequestOutput(TypedDict, total=False):
    """A request's canonical `output` (parval.outputs.compare `Output.to_json`); the
    canonical form and audio digests are compared and reported, never computed with."""

    valid: bool
    canon: JsonValue
    audio: JsonValue
    problem: JsonValue
    text: str  # the first 200 characters of a text output


class WaveStatus(TypedDict, total=False):
    """What the status poller saw during one wave (parval.server.status_poller
    `summarise_window`): a wave event's `status`."""

    polls: int
    poll_errors: int
    poll_hz: float | None
    max_active: int | None
    max_active_loaded: int | None
    max_queued: int | None
    fields_present: bool
    expected: int


class DrainedState(TypedDict, total=False):
    """Whether the slots drained after a step (runners/start.py `Start.drained`); `waited`
    and `polls_ok` only when the process published no counters to wait for."""

    ok: bool
    active: int | None
    queued: int | None
    fields_present: bool
    waited: bool
    polls_ok: bool
    # From the drain check's start (the step's last reply) to the poll that showed both
    # counters at zero, and how many polls before it still showed work: a lagging counter
    # (recorded since counters lag is judged).
    lag_ms: float | None
    nonzero_reads: int


class InFlightWindow(TypedDict, total=False):
    """The window with every request of a wave in flight, and what the polls inside showed
    (runners/start.py `Start.all_in_flight`)."""

    ms: float
    polls: int
    max_active: int | None
    max_active_loaded: int | None


class UnloadCheck(TypedDict, total=False):
    """What /v1/models showed after an unload (runners/start.py `Start.observe_unloaded`)."""

    reply: ReplySummary
    loaded_false: bool
    polls_after: int
    still_loaded: bool
    loaded_field: bool


class StalledAdmission(TypedDict, total=False):
    """An admission that did not show while several requests were in flight."""

    request: int
    want: int
    outstanding: int
    polls: int
    max_active: int


class AdmissionInfo(TypedDict, total=False):
    """How an ordered wave was admitted (parval.server.admission): a wave event's `admission`."""

    ordered_ok: bool
    finished_early: bool
    admit_waits_ms: list[float]
    observed: bool
    admit_timeout_s: float
    stalled: StalledAdmission


class LaterSamples(TypedDict, total=False):
    """The status samples between an unload probe's later request and the unload's return."""

    polls: int
    max_active: int | None
    max_queued: int | None


class ResizeStep(TypedDict, total=False):
    """One resize of the X3 probe: `capacity_refused` when the first was refused for
    capacity (the probe ends there), the status fields seen otherwise."""

    slots: int
    reply: ReplySummary
    capacity_refused: bool
    status_fields: bool
    slots_seen: int | None
    output_status: int | None


class CampaignEndEvent(TypedDict):
    kind: Literal["campaign_end"]
    finished: bool
    elapsed_s: NotRequired[float]


class CountNotRunEvent(TypedDict):
    kind: Literal["count_not_run"]
    count: int
    reason: str
    after_count: NotRequired[int]  # the lower count with a FAIL
    failed: NotRequired[list[str]]  # its failed assertions


class ServerConfigRecord(TypedDict, total=False):
    """The server config file a start wrote (run_start's `config`): its model entries."""

    models: list[JsonObject]


class RunStartEvent(TypedDict):
    kind: Literal["run_start"]
    run: str
    attempt: int
    role: str
    count: int | None
    flagged: NotRequired[bool]
    config: NotRequired[ServerConfigRecord]
    env: NotRequired[list[str]]  # the names of the variables in the server's environment
    start_index: NotRequired[int]  # a count's starts: which one
    exe_role: NotRequired[str]  # "baseline" for a start of the baseline executable


class RunEndEvent(TypedDict):
    kind: Literal["run_end"]
    run: str
    attempt: int
    stop: NotRequired[JsonObject]  # how the server stopped
    status_fields: NotRequired[JsonObject]  # the /v1/models fields the start published
    poll_errors: NotRequired[int]
    polls: NotRequired[int]
    memory: NotRequired[JsonObject | None]  # how the memory sampler ran (server.memory `SamplerInfo`)
    log_tail: NotRequired[str]


class RunAbandonedEvent(TypedDict):
    kind: Literal["run_abandoned"]
    run: str
    attempt: int
    stop: NotRequired[JsonObject]
    reason: NotRequired[str]
    log_tail: NotRequired[str]


class ServerReadyEvent(TypedDict):
    kind: Literal["server_ready"]
    run: str
    attempt: int
    argv: list[str]
    warning_marker: bool
    ready_s: NotRequired[float]
    pid: NotRequired[int]


class ServerCrashEvent(TypedDict):
    kind: Literal["server_crash"]
    run: str
    attempt: int
    where: str
    exit_code: int
    signal: NotRequired[str | None]
    log_tail: NotRequired[str]


class SlotCountersEvent(TypedDict):
    kind: Literal["slot_counters"]
    run: str
    attempt: int
    published: bool
    model_listed: NotRequired[bool]
    observed: NotRequired[str]  # which sample was looked at
    fields: NotRequired[list[str]]  # the slot fields it carried


class _UnitStopped(TypedDict):
    """A start parval ended early. The record loader names its start (`run`) and attempt
    (None when its server never started) on every one."""

    unit: str
    reason: str
    run: NotRequired[str]
    attempt: NotRequired[int | None]
    log_tail: NotRequired[str]


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
    reason: Annotated[str, Upgrade("the wave did not complete within timeouts.wave_s (recorded without a reason)")]
    # `attempt` is attributed on read for older runs (the start's latest attempt)
    attempt: NotRequired[int | None]
    count: NotRequired[int | None]
    n: NotRequired[int]
    status: NotRequired[WaveStatus]  # what the poller saw meanwhile


class MemoryGuardEvent(TypedDict):
    kind: Literal["memory_guard"]
    run: str
    attempt: int
    reason: str
    sample: JsonObject  # the GPU sample that tripped the guard (server.memory `GuardStop`)


class RequestEvent(TypedDict):
    kind: Literal["request"]
    run: str
    attempt: int
    phase: Name
    wave: int
    req: Name
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
    perf_n: NotRequired[int]  # a serial performance request: the count it measures
    resized_to: NotRequired[int]  # the first request after an X3 resize


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
    send_spread_ms: NotRequired[float | None]
    all_in_flight: NotRequired[InFlightWindow | None]
    # and by the mixed waves (runners/phases.py):
    admission: NotRequired[AdmissionInfo]
    trace_lines: NotRequired[int]
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
    body: NotRequired[JsonObject | None]
    listed: NotRequired[bool]
    loaded_false: NotRequired[bool]
    loaded_field: NotRequired[bool | None]
    still_loaded: NotRequired[bool]
    polls_after: NotRequired[int]


class M4InvalidAlongsideEvent(TypedDict):
    kind: Literal["m4_invalid_alongside"]
    run: str
    attempt: int
    invalid: ReplySummary
    rejected: bool
    drained: DrainedState


class M4LoadFailureEvent(TypedDict):
    kind: Literal["m4_load_failure"]
    run: str
    attempt: int
    failure: ReplySummary
    failed: bool
    retry: ReplySummary
    retried: bool
    registration: NotRequired[JsonObject]  # the plan's entry and the broken path
    healthy_in_flight: NotRequired[bool]
    healthy: NotRequired[int]
    healthy_done: NotRequired[list[float]]
    failure_done: NotRequired[float]
    drained: NotRequired[DrainedState]


class M4ProbeSkippedEvent(TypedDict):
    """An m4_invalid_alongside or m4_load_failure probe that recorded why it did not run."""

    kind: Literal["m4_invalid_alongside", "m4_load_failure"]
    run: str
    skipped: str


class _UnloadTimes(TypedDict):
    run: str
    attempt: int
    unload: ReplySummary
    unload_done: float
    requests_done: list[float]
    requests_latency: list[float]


class M4InFlightUnloadEvent(_UnloadTimes):
    """An unload of the model (targeted) or of every model (all) with work in flight."""

    kind: Literal["m4_targeted_unload", "m4_all_unload"]
    issued_while_active: bool
    busy: int
    ended_unloaded: bool
    # Recorded before /v1/models was checked after an unload, or before the later
    # request's place in the queue was observed: not shown.
    unloaded_seen: Annotated[bool, Upgrade(False)]
    unload_check: Annotated[UnloadCheck, Upgrade({})]
    later_order: Annotated[str, Upgrade("unobserved")]
    tries: Annotated[int, Upgrade(1)]
    later_done: NotRequired[float]
    gap_s: NotRequired[float]
    unload_pending_at_later_send: NotRequired[bool]
    # Status reads sent after the unload and answered before the later request was sent.
    polls_before_later: NotRequired[int]
    later_samples: NotRequired[LaterSamples]
    active_while_unload_waits: NotRequired[int]  # kept for older readers: later_samples' max_active
    max_tries: NotRequired[int]


class M4UnloadDuringFirstLoadEvent(_UnloadTimes):
    kind: Literal["m4_unload_during_first_load"]
    issued_during_load: bool
    ended_unloaded: bool
    unload_check: Annotated[UnloadCheck, Upgrade({})]
    listed: NotRequired[bool]  # the unload's reply listed the model


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
    max_active_disconnect: NotRequired[int | None]
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
    reason: NotRequired[str]  # why nothing was planted
    reference_canon: NotRequired[JsonValue]
    planted_canon: NotRequired[JsonValue]
    planted_artifact: NotRequired[str]


class PerfEvent(TypedDict):
    kind: Literal["perf"]
    series: str
    count: int
    batch_s: float
    latencies_s: list[JsonValue]  # each a float
    failures: int
    run: NotRequired[str]  # the serial series: the reference start that measured it
    attempt: NotRequired[int]
    repeat: NotRequired[int]
    unit: NotRequired[str]  # independent servers: the unit that measured it
    cold_s: NotRequired[float | None]


class RejectionLatencyEvent(TypedDict):
    kind: Literal["rejection_latency"]
    count: int
    latencies_ms: list[JsonValue]  # each a float
    run: NotRequired[str]
    attempt: NotRequired[int]
    statuses: NotRequired[list[int | None]]


class X1ConfigProbeEvent(TypedDict):
    kind: Literal["x1_config_probe"]
    value: JsonValue
    rejected: bool
    exit_code: NotRequired[int | None]
    message_ok: NotRequired[bool]  # the startup error was the legacy text
    stderr_tail: NotRequired[str]


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
    steps: list[ResizeStep]
    ok: NotRequired[bool]  # every step ran
    capacity_refused: NotRequired[str | None]  # the server's refusal of two slots


# -- the kinds declared in events format 2: campaign bookkeeping and the framework record ---
# (nothing in the gates reads them; the framework's --rejudge reads observation, ctest_run,
# judge_inputs and record_inputs)


class CampaignStartEvent(TypedDict):
    kind: Literal["campaign_start"]
    plan: str
    plan_sha256: str
    shard: list[int] | None  # --shard i/n
    counts: list[int]
    resumed: bool
    fail_fast: bool


class CampaignStoppedEvent(TypedDict):
    kind: Literal["campaign_stopped"]
    reason: str


class ExecutableCannotStartEvent(TypedDict):
    """The first start of an executable exited before it was ready (rundir/cannot_start.py)."""

    kind: Literal["executable_cannot_start"]
    role: str
    executable: str
    run: str
    exit_code: int
    last_lines: list[str]
    stream: str
    reason: str


class CampaignInterruptedEvent(TypedDict):
    kind: Literal["campaign_interrupted"]
    signal: str
    unit: str | None
    reason: str


class CampaignTimeoutEvent(TypedDict):
    kind: Literal["campaign_timeout"]
    after_s: float
    reason: str


class RecoveryCountEvent(TypedDict):
    kind: Literal["recovery_count"]
    count: int
    reason: str


class SoakProgressEvent(TypedDict):
    """After each soak start: what the soak has bought so far at its count (the bound of
    M2.exact there, judged from the events so far) and how much soak is left."""

    kind: Literal["soak_progress"]
    count: int
    overlapped: int
    differed: int
    rate_upper_95: float
    soak_waves: int  # mixed warm waves the soak's complete starts ran
    elapsed_s: float  # summed over the soak's units
    left_s: float | None  # of `soak.minutes` or timeouts.campaign_s; None for a soak in waves


class SoakEndEvent(TypedDict):
    """Why the soak stopped: its length spent, its target reached, or the campaign's time
    (timeouts.campaign_s) running out first, with what it reached."""

    kind: Literal["soak_end"]
    count: int
    stopped: str
    overlapped: int
    differed: int
    rate_upper_95: float
    soak_waves: int
    elapsed_s: float


class UnitBeginEvent(TypedDict):
    kind: Literal["unit_begin"]
    unit: str


class UnitEndEvent(TypedDict):
    kind: Literal["unit_end"]
    unit: str
    ok: bool


class UnitSkippedEvent(TypedDict):
    kind: Literal["unit_skipped"]
    unit: str
    reason: str
    not_run: NotRequired[bool]  # skipped for a reason of this campaign, not done before a resume
    cannot_start: NotRequired[str]  # the executable whose first start never became ready


class ServerLeftoverEvent(TypedDict):
    kind: Literal["server_leftover"]
    unit: str
    server: str
    stop: JsonObject
    log_tail: str


class ServerUnresponsiveEvent(TypedDict):
    kind: Literal["server_unresponsive"]
    run: str
    attempt: int
    where: str
    requests: int
    outcomes: list[str]
    request_timeout_s: float
    log_tail: str


class WaveRepeatEvent(TypedDict):
    kind: Literal["wave_repeat"]
    run: str
    attempt: int
    count: int | None
    phase: str
    wave: int
    n: int
    retry: int
    repeat: bool
    reason: str


class TornTailDiscardedEvent(TypedDict):
    kind: Literal["torn_tail_discarded"]
    bytes: int
    sha256: str
    reason: str


class FrameworkStartEvent(TypedDict):
    kind: Literal["framework_start"]
    plan: str
    plan_sha256: str
    only: str | None
    selection: list[str]


class FrameworkEndEvent(TypedDict):
    kind: Literal["framework_end"]
    record_id: str
    verdict: JsonObject


class ObservationEvent(TypedDict):
    kind: Literal["observation"]
    assertion: str
    name: str
    judge: str
    facts: JsonObject
    evidence: JsonObject


class CheckEvent(TypedDict):
    kind: Literal["check"]
    assertion: str
    name: str
    status: str
    detail: str
    evidence: JsonObject


class CtestRunEvent(TypedDict):
    kind: Literal["ctest_run"]
    run: JsonObject


class CtestEvent(TypedDict):
    kind: Literal["ctest"]
    label: str
    summary: str
    status: str


class JudgeInputsEvent(TypedDict):
    kind: Literal["judge_inputs"]
    selected: list[str]
    only: str | None
    plan_path: str
    required_tests: list[str]
    default_transport_unchanged: str | None
    sanitizers: list[str]
    sanitizers_unavailable: dict[str, str]
    unrelated_tests: NotRequired[dict[str, str]]  # older records: none (judges_f6)
    ctest_coverage: NotRequired[dict[str, list[str]]]


class RecordInputsEvent(TypedDict):
    kind: Literal["record_inputs"]
    procedure_version: str
    parval_version: str
    created_at: str
    elapsed_s: float
    identity: JsonObject
    scope: JsonObject
    contract: JsonObject
    probes: list[JsonObject]
    reproduction: str


class ProbeBeginEvent(TypedDict):
    kind: Literal["probe_begin"]
    probe: str


class ProbeEndEvent(TypedDict):
    kind: Literal["probe_end"]
    probe: str
    ok: bool
    elapsed_s: float


class ProbeErrorEvent(TypedDict):
    kind: Literal["probe_error"]
    probe: str
    error: str
    log_tail: NotRequired[str]  # a server that would not start
    traceback: NotRequired[str]  # a bug in the probe


class ProbeSkippedEvent(TypedDict):
    kind: Literal["probe_skipped"]
    probe: str
    status: str
    reason: str


class RigStartEvent(TypedDict):
    kind: Literal["rig_start"]
    rig: str
    flagged: bool
    config: JsonObject
    ui_management: bool


class RigReadyEvent(TypedDict):
    kind: Literal["rig_ready"]
    rig: str
    ready_s: float
    argv: list[str]


class RigEndEvent(TypedDict):
    kind: Literal["rig_end"]
    rig: str
    stop: JsonObject
    polls: int
    poll_errors: int
    log_tail: str


class FlightEvent(TypedDict):
    kind: Literal["flight"]
    rig: str
    label: str
    path: str
    t_send: float
    t_done: float | None
    cancelled: bool
    reply: ReplySummary | None


class CalibrationEvent(TypedDict):
    kind: Literal["calibration"]
    rig: str
    timing: JsonObject
    statuses: list[JsonValue]


class CapabilitiesEvent(TypedDict):
    kind: Literal["capabilities"]
    rig: str
    counters: bool | None
    loaded: bool | None
    bulk_unload: bool | None
    bulk_status: int | None
    management: bool | None
    management_status: int | None
    plan_ui_management: bool


class FirstWaveEvent(TypedDict):
    kind: Literal["first_wave"]
    rig: str
    timeline: list[dict[str, object]]  # parval.framework.rig `Rig.timeline`
    model: str
    count: int
    capacity: list[JsonValue]
    sessions: list[JsonValue]


class ForcedOrderEvent(TypedDict):
    kind: Literal["forced_order"]
    rig: str
    timeline: list[dict[str, object]]  # parval.framework.rig `Rig.timeline`
    model: str
    count: int


class RequestOnlyQueueEvent(TypedDict):
    kind: Literal["request_only_queue"]
    rig: str
    timeline: list[dict[str, object]]  # parval.framework.rig `Rig.timeline`
    model: str
    count: int


class HealthyPlusOverdueEvent(TypedDict):
    kind: Literal["healthy_plus_overdue"]
    rig: str
    count: int
    probe_ms: int


class OverlappingManagersEvent(TypedDict):
    kind: Literal["overlapping_managers"]
    rig: str
    timeline: list[dict[str, object]]  # parval.framework.rig `Rig.timeline`


class ReconfigureQueuedEvent(TypedDict):
    kind: Literal["reconfigure_queued"]
    rig: str
    timeline: list[dict[str, object]]  # parval.framework.rig `Rig.timeline`


class UnloadNotUndoneEvent(TypedDict):
    kind: Literal["unload_not_undone"]
    rig: str
    timeline: list[dict[str, object]]  # parval.framework.rig `Rig.timeline`


# The kinds the model gates read, declared since events format 1 (older logs are checked
# for these only).
Format1Event: TypeAlias = (
    CampaignEndEvent
    | CountNotRunEvent
    | RunStartEvent
    | RunEndEvent
    | RunAbandonedEvent
    | ServerReadyEvent
    | ServerCrashEvent
    | SlotCountersEvent
    | StartFailedEvent
    | StartAbortedEvent
    | StartTimeoutEvent
    | WaveTimeoutEvent
    | MemoryGuardEvent
    | RequestEvent
    | WaveEvent
    | ProbeEvent
    | M4InvalidAlongsideEvent
    | M4LoadFailureEvent
    | M4ProbeSkippedEvent
    | M4InFlightUnloadEvent
    | M4UnloadDuringFirstLoadEvent
    | M6StreamingEvent
    | M6BatchEvent
    | NegativeControlEvent
    | PerfEvent
    | RejectionLatencyEvent
    | X1ConfigProbeEvent
    | X1RegistrationProbeEvent
    | X3ResizeProbeEvent
)
# The rest of what parval writes (campaign bookkeeping, the framework record), declared
# since events format 2.
Format2Event: TypeAlias = (
    CampaignStartEvent
    | CampaignStoppedEvent
    | ExecutableCannotStartEvent
    | CampaignInterruptedEvent
    | CampaignTimeoutEvent
    | RecoveryCountEvent
    | SoakProgressEvent
    | SoakEndEvent
    | UnitBeginEvent
    | UnitEndEvent
    | UnitSkippedEvent
    | ServerLeftoverEvent
    | ServerUnresponsiveEvent
    | WaveRepeatEvent
    | TornTailDiscardedEvent
    | FrameworkStartEvent
    | FrameworkEndEvent
    | ObservationEvent
    | CheckEvent
    | CtestRunEvent
    | CtestEvent
    | JudgeInputsEvent
    | RecordInputsEvent
    | ProbeBeginEvent
    | ProbeEndEvent
    | ProbeErrorEvent
    | ProbeSkippedEvent
    | RigStartEvent
    | RigReadyEvent
    | RigEndEvent
    | FlightEvent
    | CalibrationEvent
    | CapabilitiesEvent
    | FirstWaveEvent
    | ForcedOrderEvent
    | RequestOnlyQueueEvent
    | HealthyPlusOverdueEvent
    | OverlappingManagersEvent
    | ReconfigureQueuedEvent
    | UnloadNotUndoneEvent
)
# An event as `EventLog.write` takes it.
Event: TypeAlias = Format1Event | Format2Event
